#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `repro-audit invariance` stays inside its limits (issue 39):
#  - no model call exceeds --budget: the model raises on a batch of more rows than the budget, and
#    the input holds 4,200 rows (the first check ran the whole input at once: 16 GB for 4,096 rows
#    at --budget 8 on a real model);
#  - whatever it writes, its own readers read: --rows 4096 --budget 32 makes more row comparisons
#    than a report may hold (80 MB, more than 2^21 values, which report and compare refused), so the
#    report keeps the first anchors' rows with a note, and report and compare read it;
#  - a model that fails at one batch size, an output whose shape changes with the batch, and rows
#    of no elements: one line naming it, exit 3;
#  - no call exceeds the largest of --sizes, the first check's included (issue 51): a model that
#    raises on more than 2 rows passes --sizes 1,2 on an input of 300 rows (the first check ran
#    min(rows, --budget) rows: 4 GB for a model of 4 MB per row), and an archive exported for batches
#    of at most 64 runs --sizes 1,2,3 on 100 rows (it exited 3, "outside the range").
# Prints the audit's peak memory (its children's maximum resident set, as wait4 counts it).
#
# usage: test_invariance_limits.py REPRO_AUDIT_BINARY SOURCE_DIR WORK_FOLDER
import json
import resource
import subprocess
import sys

from model_test import arguments, check, failures, fresh_folder

binary, source, work = arguments()
import torch  # noqa: E402

fresh_folder(work)
BUDGET = 32


class Guarded(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 2)

    def forward(self, x):
        if x.shape[0] > 32:
            raise RuntimeError("a batch of more rows than the budget")
        return self.fc(x)


model = work / "guarded.pt"
torch.jit.script(Guarded()).save(str(model))
rows = work / "rows.pt"
torch.save(torch.randn(4200, 3), str(rows))
report = work / "wide.json"
cmd = [binary, "-q", "invariance", str(model), "--input", str(rows), "--rows", "4096", "--budget", str(BUDGET),
       "--configs", "default", "--no-fix-search", "--report", str(report)]
p = subprocess.run(cmd, capture_output=True, text=True, timeout=1500)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(f"$ {' '.join(cmd[1:])}\nexit {p.returncode}, peak memory {peak // 1024} MiB\n{p.stderr[-500:]}", flush=True)
check(p.returncode in (0, 1), f"--rows 4096 --budget {BUDGET}: exit {p.returncode}: {p.stderr[-300:]}")
check("more rows than the budget" not in p.stderr, "a model call exceeded --budget")
if report.exists():
    doc = json.loads(report.read_text())
    rows_kept = sum(len(c["rows"]) for conf in doc["invariance"]["configs"] for c in conf["cells"])
    notes = doc["invariance"]["notes"]
    check(any("row comparisons" in n for n in notes), f"no note says the cells were cut: {notes}")
    check(0 < rows_kept <= 150000, f"the report keeps {rows_kept} row comparisons")
    for args in (["report", str(report)], ["compare", str(report), str(report)]):
        r = subprocess.run([binary, *args], capture_output=True, text=True, timeout=600)
        check(r.returncode in (0, 1), f"{args[0]} of the invariance report: exit {r.returncode}: {r.stderr[-300:]}")
else:
    check(False, "no report written")



# Unusual models: one line and exit 3 each, naming what happened (a raw ATen message, "internal
# error" or "max abs 0" before).
class FailsAtThree(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] == 3:
            raise RuntimeError("the model refuses three rows")
        return x * 2


class Narrows(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] > 2:
            return x[:, :1] * 2
        return x * 2


torch.save(torch.randn(16, 4), str(work / "small.pt"))
torch.save(torch.randn(16, 0), str(work / "empty-rows.pt"))
for name, module, rows_file, needle in (
        ("fails-at-three", FailsAtThree(), "small.pt", "fails on a batch of 3: builtins.RuntimeError: the model refuses"),
        ("narrows", Narrows(), "small.pt", "changes with the batch"),
        ("zero-width", Narrows(), "empty-rows.pt", "has rows of no elements")):
    path = work / f"{name}.pt"
    torch.jit.script(module).save(str(path))
    r = subprocess.run([binary, "-q", "invariance", str(path), "--input", str(work / rows_file), "--rows", "2",
                        "--sizes", "1,2,3,4", "--configs", "default", "--no-fix-search"],
                       capture_output=True, text=True, timeout=600)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 3 and len(lines) == 1 and needle in r.stderr,
          f"{name}: exit 3 and one line saying '{needle}' expected, got exit {r.returncode}: {r.stderr[-300:]}")



# --sizes bounds every call, the first check's included.
class AtMostTwo(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] > 2:
            raise RuntimeError("a batch of more rows than --sizes asked for")
        return x * 2


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)


torch.jit.script(AtMostTwo()).save(str(work / "at-most-two.pt"))
torch.save(torch.randn(300, 4), str(work / "rows-300.pt"))
batch = torch.export.Dim("batch", max=64)
exported = torch.export.export(Small(), (torch.randn(8, 4),), dynamic_shapes={"x": {0: batch}})
torch.export.save(exported, str(work / "batch-64.pt2"))
torch.save(torch.randn(100, 4), str(work / "rows-100.pt"))
for label, model, rows_file, sizes in (("--sizes 1,2 on 300 rows", "at-most-two.pt", "rows-300.pt", "1,2"),
                                       ("--sizes 1,2,3 on an archive of batches up to 64, 100 rows",
                                        "batch-64.pt2", "rows-100.pt", "1,2,3")):
    r = subprocess.run([binary, "-q", "invariance", str(work / model), "--input", str(work / rows_file), "--rows",
                        "1", "--sizes", sizes, "--configs", "default", "--no-fix-search"],
                       capture_output=True, text=True, timeout=600)
    check(r.returncode in (0, 1),
          f"{label}: no call over the largest size asked for, exit 0 or 1 expected: exit {r.returncode}: "
          f"{r.stderr[-300:]}")

if failures:
    sys.exit(1)
print("ok: no call over the budget, and the report of 4,096 rows reads back")
