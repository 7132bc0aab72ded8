#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `repro-audit invariance` agrees with what Python measures on this machine. The problem: whether a
# row's bits depend on its batch is a fact of this CPU and its library (MKL picks another GEMM
# blocking for another M), so no expected class can be written down. The approach: make real models
# as a user would (a scripted torchvision ResNet-18 and MobileNetV3-small, a scripted
# nn.TransformerEncoderLayer, an elementwise model, a Linear layer), build in Python the same batches
# the tool builds (anchors first, then the input's other rows in order, and the anchors at the end),
# call the same scripted file with TorchScript's optimisations off (as the worker does), and group
# the sizes by the anchors' bits. The tool's classes must equal Python's, a size where Python saw
# the end placement differ must be position-dependent in the report, and the verdict must follow.
# The elementwise model must be invariant. Then the bad inputs: one line on stderr, the documented
# exit code, no report written. Then every report format, the schema, and `report` re-rendering.
# The cost: small inputs, explicit sizes up to 16; about two minutes on 2 cores.
#
# usage: test_invariance.py REPRO_AUDIT_BINARY SOURCE_DIR WORK_FOLDER
import json
import os
import pathlib
import subprocess
import sys

from model_test import arguments, check, failures, fresh_folder, jit_as_the_worker, tool_batches

binary, source, work = arguments()
try:
    import torch
    import torchvision
except ImportError as e:
    print(f"FAIL: {e}: ./dev setup installs torchvision into the venv")
    sys.exit(1)

fresh_folder(work)
ROWS = 4
jit_as_the_worker(torch)


def audit(model, rows, *extra, name=None):
    report = work / f"{name or pathlib.Path(model).stem}.json"
    # The classes are what this test checks; the fix search (tests/models/test_invariance_fix.py) would
    # only add minutes per variant model here.
    cmd = [binary, "-q", "invariance", str(model), "--input", str(rows), "--report", str(report), "--no-fix-search",
           *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    print(f"$ {' '.join(cmd[1:])}\n{p.stdout}{p.stderr}", flush=True)
    return p, (json.loads(report.read_text()) if report.exists() else None)


def python_classes(path, x, sizes):
    """The tool's start and end batches, built and called here: {size: (start bits, end bits)}."""
    m = torch.jit.load(str(path))
    m.eval()
    with torch.inference_mode():
        def run(idx):
            return m(x[torch.tensor(idx)])

        ref = [run([a])[0] for a in range(ROWS)]
        out = {}
        for size in sizes:
            if size == 1:
                out[1] = (tuple(r.numpy().tobytes() for r in ref), None)
                continue
            start, end = [], []
            for anchors, s, e in tool_batches(x.shape[0], ROWS, size):
                ys, ye = run(s), run(e)
                start += [ys[k].numpy().tobytes() for k in range(len(anchors))]
                end += [ye[size - len(anchors) + k].numpy().tobytes() for k in range(len(anchors))]
            out[size] = (tuple(start), tuple(end) if size > len(anchors) else tuple(start))
    return out


def check_against_python(label, path, x, sizes):
    rows = work / f"{label}_rows.pt"
    torch.save(x, rows)
    p, rep = audit(path, rows, "--sizes", ",".join(map(str, sizes)), name=label)
    check(rep is not None, f"{label}: a report was written (exit {p.returncode})")
    if rep is None:
        return None
    cfg = rep["invariance"]["configs"][0]
    measured = python_classes(path, x, sizes)
    groups = {}
    for size in sizes:
        groups.setdefault(measured[size][0], []).append(size)
    expected = sorted(groups.values(), key=lambda s: s[0])
    got = [c["sizes"] for c in cfg["classes"]]
    check(got == expected, f"{label}: classes {got} are the ones Python measured, {expected}")
    for size in sizes:
        if size > 1 and measured[size][1] != measured[size][0]:
            check(size in cfg["position_dependent"], f"{label}: size {size}, whose end placement Python saw differ, is position-dependent")
    variant = len(expected) > 1 or bool(cfg["position_dependent"]) or bool(cfg["warmup_dependent"])
    check(p.returncode == (1 if variant else 0), f"{label}: exit {p.returncode} follows the measured verdict ({'variant' if variant else 'invariant'})")
    check(rep["invariance"]["control"]["detected"], f"{label}: the negative control detected the flipped bit")
    return rep


torch.manual_seed(0)


class Elementwise(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x * 2.0 + 1.0) - x.sigmoid()


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(256, 256)

    def forward(self, x):
        return self.fc(x)


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x)


SIZES = [1, 2, 3, 4, 5, 8, 9, 16]
models = {
    "elementwise": (Elementwise(), torch.randn(20, 64)),
    "linear": (Linear(), torch.randn(20, 256)),
    "encoder": (Encoder().eval(), torch.randn(20, 10, 32)),
    "resnet18": (torchvision.models.resnet18(num_classes=10).eval(), torch.randn(20, 3, 64, 64)),
    "mobilenet": (torchvision.models.mobilenet_v3_small(num_classes=10).eval(), torch.randn(20, 3, 64, 64)),
}
reports = {}
for label, (module, x) in models.items():
    path = work / f"{label}.pt"
    torch.jit.script(module).save(str(path))
    reports[label] = check_against_python(label, path, x, SIZES)

if reports["elementwise"] is not None:
    check(reports["elementwise"]["exit_code"] == 0, "elementwise: invariant (exit 0)")

# Python's own view of the Linear layer's GEMM, for the log: the fact the test depends on.
a, b = torch.randn(64, 256), torch.randn(256, 256)
print("torch.mm row 0 differs in a batch of 64 here:", not torch.equal(torch.mm(a, b)[:1], torch.mm(a[:1], b)), flush=True)

# --- bad inputs: one line on stderr, the documented exit code, no report -------------------------


class Pooled(torch.nn.Module):
    def forward(self, x):
        return x.sum(0)


class Pair(torch.nn.Module):
    def forward(self, x, y):
        return x + y


torch.jit.script(Pooled()).save(str(work / "pooled.pt"))
torch.jit.script(Pair()).save(str(work / "pair.pt"))
torch.save(torch.randn(8, 4), work / "small_rows.pt")
torch.save((torch.randn(8, 4), torch.randn(6, 4)), work / "mismatched_rows.pt")
bad = [
    ("output does not follow the batch", [work / "pooled.pt", work / "small_rows.pt"], 3, "does not keep the batch"),
    ("rows of mismatched shapes", [work / "pair.pt", work / "mismatched_rows.pt"], 3, "rows do not match"),
    ("--rows larger than the input", [work / "elementwise.pt", work / "small_rows.pt", "--rows", "9"], 3, "larger than the input"),
    ("--sizes empty", [work / "elementwise.pt", work / "small_rows.pt", "--sizes", ","], 2, "--sizes is empty"),
    ("--sizes over the budget", [work / "elementwise.pt", work / "small_rows.pt", "--sizes", "4,2048"], 2, "exceeds the budget"),
]
for what, (model, rows, *extra), code, words in bad:
    report = work / "bad.json"
    report.unlink(missing_ok=True)
    p = subprocess.run([binary, "invariance", str(model), "--input", str(rows), "--report", str(report), *extra],
                       capture_output=True, text=True)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    print(f"{what}: exit {p.returncode}: {p.stderr.strip()}", flush=True)
    check(p.returncode == code, f"{what}: exit {p.returncode}, expected {code}")
    check(len(lines) == 1 and words in lines[0], f"{what}: one line naming it ({lines})")
    check(not report.exists(), f"{what}: no report written")

# --- every format, the schema, and `report` re-rendering -----------------------------------------
lin = work / "linear.pt"
out = {k: work / f"all.{k}" for k in ("json", "html", "xml", "md")}
p = subprocess.run([binary, "-q", "invariance", str(lin), "--input", str(work / "linear_rows.pt"), "--sizes", "1,2,4,8",
                    "--report", str(out["json"]), "--html", str(out["html"]), "--junit", str(out["xml"]),
                    "--markdown", str(out["md"])], capture_output=True, text=True)
check(all(f.exists() for f in out.values()), "every format written")
if out["json"].exists():
    doc = json.loads(out["json"].read_text())
    # The system's python3 has jsonschema (./dev installs python3-jsonschema); the venv need not.
    v = subprocess.run(["/usr/bin/python3", str(source / "tests/validate_schema.py"), str(source / "share/schema/report-v1.schema.json"),
                        str(work), out["json"].name], capture_output=True, text=True)
    check(v.returncode == 0, f"the report matches the schema: {(v.stdout + v.stderr)[-400:]}")
    again = subprocess.run([binary, "report", str(out["json"])], capture_output=True, text=True)
    check(again.stdout == p.stdout, "`report` re-renders the same summary")
    check("invariance" in out["xml"].read_text() and "<testsuite" in out["xml"].read_text(), "JUnit has an invariance suite")
    x = subprocess.run(["xmllint", "--noout", "--schema", str(source / "share/schema/junit.xsd"), str(out["xml"])],
                       capture_output=True, text=True)
    check(x.returncode == 0, f"the JUnit file matches share/schema/junit.xsd: {x.stderr[-300:]}")
    check("classes of identical bits" in out["md"].read_text(), "Markdown names the classes")
    check('id="invariance"' in out["html"].read_text(), "HTML has the invariance section")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("invariance agrees with Python on this machine")
