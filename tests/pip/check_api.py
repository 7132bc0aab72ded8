# SPDX-License-Identifier: Apache-2.0
# repro_audit.run and repro_audit.invariance on model objects, run with the pip-installed package by
# test_pip_install.py: usage: check_api.py WORK_FOLDER. Prints "FAIL: ..." lines and exits 1 on any.
import json
import pathlib
import sys

import repro_audit
import torch

work = pathlib.Path(sys.argv[1])
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


class Elementwise(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x * 2.0 + 1.0) - x.sigmoid()


torch.manual_seed(0)
r = repro_audit.run(Elementwise(), torch.randn(8, 64), configs=["default", "threads-1"], repeats=2,
                    report=str(work / "run.json"))
print(r.summary, flush=True)
doc = json.loads((work / "run.json").read_text())
check(r.exit_code == 0 and r.verdict == doc["verdict"] == "reproducible", f"run: reproducible, exit 0 ({r.verdict}, {r.exit_code})")
check([c.config for c in r.configs] == ["default", "threads-1"], f"run: one verdict per configuration ({r.configs})")
check(doc["targets"][0]["name"] == "model.pt2", f"run: the model was saved as a torch.export archive ({doc['targets'][0]['name']})")
check(not r.configuration_dependent and r.configuration_dependence == (), f"run: no configuration dependence ({r})")


# A sum of 4M floats split over 2 threads or summed by 1: reproducible under each, other bits between
# them, on any CPU (the golden set's run_trace case). The Result keeps what the report says.
class BigSum(torch.nn.Module):
    def forward(self, x):
        return x.sum()


r = repro_audit.run(BigSum(), torch.randn(2048, 2048), configs=["threads=2", "threads-1"], repeats=2)
print(r.summary, flush=True)
groups = tuple(tuple(g) for g in r.report["targets"][0]["configuration_dependence"]["groups"])
check(r.exit_code == 0 and r.verdict == "reproducible" and r.configuration_dependent
      and r.configuration_dependence == groups == (("threads=2",), ("threads-1",))
      and "configuration-dependent: results differ between {threads=2} | {threads-1}" in r.describe(),
      f"run: configuration-dependent, kept in the Result ({r.configuration_dependence}, {r.describe()!r})")

# The Linear layer: Python's own view of its batch dependence decides what the report must say.
model, rows = torch.nn.Linear(256, 256), torch.randn(20, 256)
sizes = [1, 2, 4, 8]
with torch.inference_mode():
    alone = model(rows[:1])
    python_variant = any(not torch.equal(model(rows[:n])[:1], alone) for n in sizes[1:])
r = repro_audit.invariance(model, rows, sizes=sizes, fix_search=False)
print(r.summary, flush=True)
check("torch.export" in r.report["invariance"]["kind"], f"invariance: a torch.export archive ({r.report['invariance']['kind']})")
check(sorted(s for c in r.classes for s in c) == sizes, f"invariance: the classes cover the sizes ({r.classes})")
check(r.exit_code == (1 if python_variant else 0), f"invariance: exit {r.exit_code}, Python saw variant={python_variant}")
check((len(r.classes) > 1) == python_variant, f"invariance: classes {r.classes} agree with Python (variant={python_variant})")
check(r.first_op is not None and r.first_op.op.startswith("aten::") if python_variant else r.first_op is None,
      f"invariance --trace: the first differing op ({r.first_op})")

# The pad axis through the API: the other rows padded through the model's attention_mask.
class Masked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(50, 16)

    def forward(self, input_ids, attention_mask):
        return self.emb(input_ids) * attention_mask.unsqueeze(-1).float()


ids = torch.randint(1, 50, (6, 8))
r = repro_audit.invariance(Masked(), (ids, torch.ones_like(ids)), sizes=[1, 2, 3], pad_others="left", fix_search=False,
                           trace=False)
check(r.exit_code == 0 and r.report["invariance"]["axis"] == "pad-left",
      f"invariance pad_others='left': the pad axis, invariant (an embedding row is its own): exit {r.exit_code}, "
      f"axis {r.report['invariance'].get('axis')}")

# exec: a command compared by what it prints.
r = repro_audit.exec([sys.executable, "-c", "print('loss 0.25')"], metrics={"loss": r"loss ([0-9.]+)"},
                     configs="default", repeats=2)
check(r.exit_code == 0 and r.verdict == "reproducible", f"exec: a constant metric is reproducible ({r.verdict}, {r.exit_code})")

# An error of the binary is an exception with its one line and exit code.
try:
    repro_audit.invariance(model, rows, sizes="0,x")
    check(False, "a bad --sizes raises")
except repro_audit.ReproAuditError as e:
    check(e.exit_code == 2 and "\n" not in e.message and e.message, f"bad --sizes: exit 2, one line ({e.exit_code}: {e.message!r})")
sys.exit(1 if failures else 0)
