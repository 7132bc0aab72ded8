#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Places in source as a reviewer can use them, in every format (issue 43 item 7): `run --trace` on
#  - a traced (torch.jit.trace) module whose first differing op is inside torch: the path relative
#    to the torch package (torch/nn/functional.py:N), once, with the line of code read from the
#    file (it showed the venv's absolute path, twice);
#  - a scripted module defined in a file under the working directory, whose line is longer than
#    the reports keep: the path relative to the working directory, and the line cut with "…";
# and nowhere in the text, JSON, Markdown, JUnit or HTML a root cause's path under site-packages
# or under the working directory.
#
# usage: test_source_paths.py REPRO_AUDIT_BINARY SOURCE_DIR WORK_FOLDER
import inspect
import json
import pathlib
import re
import subprocess
import sys

from model_test import arguments, check, failures, fresh_folder

binary, source, work = arguments()
import torch  # noqa: E402

torch_lib = str(pathlib.Path(torch.__file__).resolve().parent / "lib")

fresh_folder(work)
FORMATS = ("json", "md", "xml", "html")

# The rows: 2048x2048 zeros but for 1 at the start and 1, 2^24 side by side 1024 places into the second
# half. A full sum adds each vector lane's elements (those 1024 places apart share one on every kernel
# path) and the lanes last: on one thread the two 1s meet in their lane and survive (2^24 + 2), on N >= 2
# threads the second half's 1 is lost beside 2^24 before the first half's is added (2^24). So threads-1
# and threads-N part on any CPU count and kernel path (a random input's sum parted on some and not others).
def parting_rows():
    x = torch.zeros(2048 * 2048)
    half = x.numel() // 2
    x[0], x[half + 1024], x[half + 1025] = 1.0, 1.0, 2.0 ** 24
    return x.view(2048, 2048)


# 1. Traced: the mean inside torch's L1Loss is such a sum, so threads-1 and threads-N part there.
class Loss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.loss = torch.nn.L1Loss()

    def forward(self, x):
        return self.loss(x, torch.zeros_like(x))


x = parting_rows()
torch.jit.trace(Loss(), x).save(str(work / "traced.pt"))
torch.save(x, str(work / "x.pt"))
# The innermost frame is torch.nn.functional's, the line that calls the op.
loss_lines, loss_start = inspect.getsourcelines(torch.nn.functional.l1_loss)
loss_line = next(loss_start + i for i, l in enumerate(loss_lines) if l.strip().startswith("return torch._C._nn.l1_loss("))

# 2. Scripted, from a file in the working directory, with a line longer than the reports keep.
long_tail = " + ".join(["0.0 * x.mean()"] * 16)
(work / "model_def.py").write_text(f"""import torch


class Long(torch.nn.Module):
    def forward(self, x):
        return torch.sum(x) + {long_tail}


torch.jit.script(Long()).save("long.pt")
""")
subprocess.run([sys.executable, "model_def.py"], cwd=work, check=True)
torch.save(parting_rows(), str(work / "big.pt"))


def audit(name, model, rows):
    out = {f: work / f"{name}.{f}" for f in FORMATS}
    cmd = [binary, "run", model, "--input", rows, "--configs", "threads-N,threads-1", "--trace", "--report",
           str(out["json"]), "--markdown", str(out["md"]), "--junit", str(out["xml"]), "--html", str(out["html"])]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=work)
    print(f"$ {' '.join(cmd[1:])}\n{p.stdout}{p.stderr}exit {p.returncode}", flush=True)
    docs = {"text": p.stdout}
    docs.update({f: out[f].read_text() if out[f].exists() else "" for f in FORMATS})
    docs["md"] = re.sub(r"\\([_*\\>`#|\[\]])", r"\1", docs["md"])  # Markdown's escapes
    docs["html"] = docs["html"].replace("&#39;", "'").replace("&quot;", '"').replace("&gt;", ">")
    sources = []
    if docs["json"]:
        for c in json.loads(docs["json"])["targets"][0].get("dependence", {}).get("causes", []):
            sources.append(c.get("first", {}).get("source", "") or json.dumps(c))
    return p, docs, sources


p, docs, sources = audit("traced", "traced.pt", "x.pt")
want = f"torch/nn/functional.py:{loss_line}: return torch._C._nn.l1_loss("
check(p.returncode == 0 and "configuration-dependent" in p.stdout, f"traced: threads-1 and threads-N part: {p.returncode}")
for fmt, text in docs.items():
    check(want in text, f"traced: {fmt} names {want}")
    # The environment's library_dir (where the tool's LibTorch is) is the one path kept whole.
    check("site-packages" not in text.replace(torch_lib, ""), f"traced: {fmt} shows no site-packages path")
    check(f"functional.py({loss_line})" not in text, f"traced: {fmt} shows the path once, not 'functional.py(N)'")

p, docs, sources = audit("long", "long.pt", "big.pt")
for fmt, text in docs.items():
    check("model_def.py:6: return torch.sum(x) + 0.0 * x.mean()" in text, f"long: {fmt} names model_def.py:6 "
          "relative to the working directory")
    check(str(work) + "/model_def.py" not in text, f"long: {fmt} shows no absolute path for model_def.py")
    check(re.search(r"model_def\.py:6: [^\n<\"|]*…", text) is not None, f"long: {fmt} cuts the long line with …")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
