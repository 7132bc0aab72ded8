#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `run --calls K` tells a forward that changes what its next call computes from, for every target kind
# this machine builds quickly (issue 39 item 6). Such a model's later calls differ from call 1 because
# of what it wrote, not because of warm-up: the tool must say "calls are not comparable", naming what
# changed, and exit 0 (it exited 1, "warm-up-dependent", and --trace named no op). Models:
#   * TorchScript, changing its input in place (x.mul_(2));
#   * TorchScript, counting its calls in a plain int attribute (self.n += 1);
#   * TorchScript, changing a buffer from its second call on (a plain flag set on call 1);
#   * a torch.export archive changing its input in place (a user-input mutation our interpreter writes back).
# Python first confirms that each model's call 2 differs from call 1, so the case is real. A lazily
# built cache (a plain attribute set on call 1 only) stays warm-up dependence: tests/models/test_run_calls.py.
# AOTInductor packages digest their inputs and constants the same way (worker/targets/aoti.cpp); they
# are not built here, since a compile takes minutes on CI's two cores.
#
# usage: test_run_calls_mutation.py REPRO_AUDIT_BINARY SOURCE_DIR WORK_FOLDER
import json
import subprocess
import sys

from model_test import arguments, check, failures, fresh_folder, jit_as_the_worker

binary, source, work = arguments()
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

fresh_folder(work)
jit_as_the_worker(torch)


class WritesInput(nn.Module):
    def forward(self, x):
        x.mul_(2)
        return x + 1


class CountsInAttribute(nn.Module):
    def __init__(self):
        super().__init__()
        self.n = 0

    def forward(self, x):
        self.n += 1
        return x * self.n


class BufferFromSecondCall(nn.Module):
    def __init__(self):
        super().__init__()
        self.started = False
        self.register_buffer("acc", torch.zeros(()))

    def forward(self, x):
        if self.started:
            self.acc.add_(1)
        self.started = True
        return x + self.acc


class ExportWritesInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        x.add_(1)
        return self.lin(x)


def calls_differ(fn, x):
    """Python: does call 2 of `fn` on the same input object differ from call 1?"""
    with torch.no_grad():
        a = fn(x).clone()
        b = fn(x).clone()
    return not torch.equal(a, b)


def audit(model, inp, name, *extra):
    report = work / f"{name}.json"
    cmd = [binary, "run", str(model), "--input", str(inp), "--repeats", "2", "--configs", "default", "--calls", "3",
           "--report", str(report), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    print(f"$ {' '.join(cmd[1:])}\n{p.stdout}{p.stderr}exit {p.returncode}", flush=True)
    doc = json.loads(report.read_text()) if report.exists() else None
    return p, (doc["targets"][0]["configs"][0].get("warm_up") if doc else None)


x = torch.randn(2, 4)
cases = []
for name, module, named in (("writes-input", WritesInput(), "input 'x'"),
                            ("counts-in-attribute", CountsInAttribute(), "attribute 'n'"),
                            ("buffer-from-second-call", BufferFromSecondCall(), "buffer 'acc'")):
    path = work / f"{name}.pt"
    torch.jit.script(module.eval()).save(str(path))
    check(calls_differ(torch.jit.load(str(path)), x.clone()), f"python: {name}: call 2 differs from call 1")
    cases.append((name, path, named))

torch.manual_seed(0)
exported = ExportWritesInput().eval()
ep = torch.export.export(exported, (torch.randn(2, 4),))
pt2 = work / "export-writes-input.pt2"
torch.export.save(ep, str(pt2))
check(calls_differ(torch.export.load(str(pt2)).module(), x.clone()), "python: export-writes-input: call 2 differs")
cases.append(("export-writes-input", pt2, "input 'x'"))

inp = work / "input.pt"
torch.save(x, str(inp))
for name, path, named in cases:
    line = f"calls are not comparable: forward mutates {named}"
    for extra in ([], ["--trace", "--no-fix-search"]):
        p, w = audit(path, inp, name + ("-traced" if extra else ""), *extra)
        what = f"{name}{' --trace' if extra else ''}"
        check(p.returncode == 0, f"{what}: exit 0 (not comparable is no finding), got {p.returncode}")
        check(line in p.stdout and "warm-up dependence" not in p.stdout, f"{what}: the line '{line}'")
        check(w is not None and named in w["mutated"] and w["trials_differing"] == 0, f"{what}: JSON names {named}")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
