#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `repro-audit run --calls K` agrees with what Python measures on this machine. The problem: whether a
# model's later calls equal its first in one process is a fact of the model and this machine, so no
# expected answer can be written down. The approach: make models as a user would, script and save
# them, call each saved file three times in Python with TorchScript's optimisations off (as the worker
# does) on the same --input, and require the tool's warm-up verdict to match:
#   * a plain MLP and a scripted torchvision MobileNetV3-small: no finding where Python saw three equal
#     calls (a finding where it did not);
#   * a module that lazily builds a table on its first call and keeps a float32 copy as a plain (not
#     buffer) attribute, using the float64 table on that first call only: the pattern of lazily built
#     rotary tables; its first call differs from later ones, which is warm-up dependence (exit 1);
#   * a module that adds noise with randn_like: each call draws new numbers from the process's
#     generator, so call 2 differs from call 1 with equal inputs; --trace must name that random op as
#     the first whose output differs between the calls;
#   * a module that counts its calls in a buffer (self.count += 1): its calls are not comparable, and
#     the tool says so in one line naming the buffer instead of a finding (exit 0).
# Then the bad inputs (--calls 0, a non-number, --calls with --mode train): one line, exit 2, no
# report. Then every format, the schema, `report` re-rendering, and `--calls 1` byte-identical to
# the default. The cost: small models, three repeats; about a minute on 2 cores.
#
# usage: test_run_calls.py REPRO_AUDIT_BINARY SOURCE_DIR WORK_FOLDER PYTHON3_WITH_JSONSCHEMA
import json
import os
import subprocess
import sys
from typing import Optional

from model_test import arguments, check, failures, fresh_folder, jit_as_the_worker

binary, source, work = arguments()
python3 = sys.argv[4] if len(sys.argv) > 4 else "python3"
try:
    import torch
    import torch.nn as nn
    import torchvision
except ImportError as e:
    print(f"FAIL: {e}: ./dev setup installs torchvision into the venv")
    sys.exit(1)

fresh_folder(work)
CALLS = 3
jit_as_the_worker(torch)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, x):
        return self.net(x)


class LazyTable(nn.Module):
    table: Optional[torch.Tensor]

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.table = None

    def forward(self, x):
        h = self.lin(x)
        if self.table is None:
            pos = torch.arange(8, dtype=torch.float64)
            table = torch.cos(pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), pos / 8))
            self.table = table.float()
            return (h.double() * table).float()
        t = self.table
        assert t is not None
        return h * t


class Noisy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        h = self.lin(x)
        return h + 0.1 * torch.randn_like(h)


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))

    def forward(self, x):
        self.count += 1
        return self.lin(x)


def save(module, name, x):
    torch.manual_seed(0)
    path = work / f"{name}.pt"
    torch.jit.script(module.eval()).save(str(path))
    inp = work / f"{name}-input.pt"
    torch.save(x, str(inp))
    return path, inp


def python_calls_equal(path, x):
    """Calls the saved model CALLS times in one process: is every later output bitwise call 1's?"""
    m = torch.jit.load(str(path))
    m.eval()
    torch.manual_seed(0)
    with torch.inference_mode():
        outs = [m(x).clone() for _ in range(CALLS)]
    return all(torch.equal(outs[0], o) and outs[0].numpy().tobytes() == o.numpy().tobytes() for o in outs[1:])


def audit(model, inp, *extra, name):
    report = work / f"{name}.json"
    cmd = [binary, "run", str(model), "--input", str(inp), "--repeats", "3", "--configs", "default",
           "--report", str(report), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    print(f"$ {' '.join(cmd[1:])}\n{p.stdout}{p.stderr}exit {p.returncode}", flush=True)
    return p, (json.loads(report.read_text()) if report.exists() else None)


def warm_up(doc):
    return doc["targets"][0]["configs"][0].get("warm_up") if doc else None


torch.manual_seed(1)
x8 = torch.randn(16, 8)

# 1. Models whose calls Python finds equal (or not): the tool's verdict follows Python's.
mobilenet = torchvision.models.mobilenet_v3_small(num_classes=10)
for name, module, x in [("mlp", Mlp(), x8), ("mobilenet", mobilenet, torch.randn(2, 3, 64, 64))]:
    path, inp = save(module, name, x)
    equal = python_calls_equal(path, x)
    print(f"python: {name}: calls 2-{CALLS} equal call 1: {equal}")
    p, doc = audit(path, inp, "--calls", str(CALLS), name=name)
    w = warm_up(doc)
    check(w is not None and w["calls"] == CALLS and w["trials_compared"] == 3, f"{name}: warm_up compares 3 trials")
    if equal:
        check(p.returncode == 0, f"{name}: exit 0 with equal calls")
        check(w is not None and w["trials_differing"] == 0 and w["first_call"] == 0, f"{name}: no warm-up finding")
        check(f"no warm-up dependence: calls 2-{CALLS} equal call 1 bitwise in 3 trials" in p.stdout,
              f"{name}: the no-finding line")
    else:
        check(p.returncode == 1 and w is not None and w["trials_differing"] > 0, f"{name}: the finding Python saw")

# 2. Lazy initialisation: Python sees call 1 differ; the tool says warm-up dependence, apart from the
#    run-to-run verdict, which stays reproducible.
lazy, lazy_in = save(LazyTable(), "lazy", x8)
lazy_equal = python_calls_equal(lazy, x8)
print(f"python: lazy: calls 2-{CALLS} equal call 1: {lazy_equal}")
check(not lazy_equal, "python: the lazily built table changes the output after call 1")
outs = {fmt: work / f"lazy.{ext}" for fmt, ext in [("--markdown", "md"), ("--html", "html"), ("--junit", "xml")]}
extra = [a for fmt, path in outs.items() for a in (fmt, str(path))]
p, doc = audit(lazy, lazy_in, "--calls", str(CALLS), *extra, name="lazy")
w = warm_up(doc)
line = "warm-up dependence: call 2 differs from call 1 in the same process in 3/3 trials (output)"
if not lazy_equal:
    check(p.returncode == 1, "lazy: exit 1 for warm-up dependence")
    check(doc and doc["targets"][0]["configs"][0]["verdict"] == "reproducible", "lazy: run-to-run stays reproducible")
    check(w and w["first_call"] == 2 and w["trials_differing"] == 3 and w["tensors"] == ["output"],
          "lazy: first_call 2, output differs, in every trial")
    check(line in p.stdout, "lazy: the text line")
    check("warm-up-dependent (exit 1)" in p.stdout, "lazy: the verdict line says warm-up-dependent")
    check(line in outs["--markdown"].read_text(), "lazy: markdown has the line")
    check("warm-up-dependent (exit 1)" in outs["--markdown"].read_text(), "lazy: markdown's head says it")
    check(line in outs["--html"].read_text(), "lazy: html has the line")
    check('type="warm-up"' in outs["--junit"].read_text(), "lazy: junit has a warm-up failure")
    r = subprocess.run([binary, "report", str(work / "lazy.json")], capture_output=True, text=True)
    check(line in r.stdout, "lazy: `report` re-renders the line from the JSON")
    p, doc = audit(lazy, lazy_in, "--calls", str(CALLS), "--trace", "--no-fix-search", name="lazy-traced")
    w = warm_up(doc)
    # The first call runs ops the later ones do not (the table's): the op streams part there.
    check(w and w["trace"] and w["trace"]["splits"], "lazy --trace: call 1 and call 2 split")
    check("op streams of call 1 and call 2 split at #" in p.stdout, "lazy --trace: the split line")

# 3. A random op: equal inputs, new numbers in every call; --trace names it.
noisy, noisy_in = save(Noisy(), "noisy", x8)
noisy_equal = python_calls_equal(noisy, x8)
print(f"python: noisy: calls 2-{CALLS} equal call 1: {noisy_equal}")
p, doc = audit(noisy, noisy_in, "--calls", str(CALLS), "--trace", "--no-fix-search", name="noisy")
w = warm_up(doc)
if not noisy_equal:
    check(p.returncode == 1 and w and w["first_call"] == 2, "noisy: warm-up dependence at call 2")
    causes = (w or {}).get("trace") and w["trace"]["root_causes"]
    op = causes[0]["op"] if causes else ""
    graph = str(torch.jit.load(str(noisy)).graph)
    check(op.startswith("aten::") and op in graph, f"noisy --trace: the model's random op is named ({op!r})")
    check(f"first op whose output differs between call 1 and call 2: {op}" in p.stdout, "noisy --trace: the line")

# 4. A forward that mutates a buffer: one line naming it, no finding.
counter, counter_in = save(Counter(), "counter", x8)
p, doc = audit(counter, counter_in, "--calls", str(CALLS), name="counter")
w = warm_up(doc)
named = "calls are not comparable: forward mutates buffer 'count'"
check(p.returncode == 0, "counter: exit 0, not a finding")
check(p.stdout.count(named) == 1 and "warm-up dependence" not in p.stdout, "counter: one line naming the buffer")
check(w and w["mutated"] == ["buffer 'count'"] and w["trials_differing"] == 0, "counter: JSON names the buffer")

# 5. Bad input: one line on stderr, exit 2, no report.
for bad, said in ((["--calls", "0"], "--calls: expected an integer from 1 to 1000, got '0'"),
                  (["--calls", "x"], "--calls: expected an integer from 1 to 1000, got 'x'"),
                  (["--calls", "-1"], "--calls: expected an integer from 1 to 1000, got '-1'"),
                  (["--calls", "2", "--mode", "train"], "--calls applies to --mode infer only")):
    report = work / "bad.json"
    cmd = [binary, "run", str(lazy), "--input", str(lazy_in), "--report", str(report), *bad]
    b = subprocess.run(cmd, capture_output=True, text=True)
    print(f"$ {' '.join(cmd[1:])}\n{b.stderr}exit {b.returncode}")
    check(b.returncode == 2 and len(b.stderr.strip().splitlines()) == 1 and said in b.stderr,
          f"{bad}: one line ({said}), exit 2")
    check(not report.exists(), f"{bad}: no report")

# 6. --calls 1 is the default, byte for byte (timing and the command line aside).
def untimed(doc):
    doc = dict(doc)
    doc.pop("timing", None)
    doc.pop("command", None)
    return doc


mlp_in = work / "mlp-input.pt"
a, da = audit(work / "mlp.pt", mlp_in, "--seed", "3", name="default")
b, db = audit(work / "mlp.pt", mlp_in, "--seed", "3", "--calls", "1", name="calls1")
check(da and db and "warm_up" not in da["targets"][0]["configs"][0], "default: no warm_up field")
check(da and db and json.dumps(untimed(da), sort_keys=True) == json.dumps(untimed(db), sort_keys=True),
      "--calls 1 writes the default report")
check(a.stdout == b.stdout and a.returncode == b.returncode == 0, "--calls 1 prints the default summary")

# 7. The reports validate against the schema.
v = subprocess.run([python3, str(source / "tests/validate_schema.py"), str(source / "share/schema/report-v1.schema.json"),
                    str(work), "mlp.json", "lazy.json", "lazy-traced.json", "noisy.json", "counter.json"],
                   capture_output=True, text=True)
print(v.stdout + v.stderr)
check(v.returncode == 0, "the reports validate against report-v1.schema.json")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
