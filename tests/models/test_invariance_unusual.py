#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `repro-audit invariance` on unusual models (issue 39 item 7):
#  - a model that draws random numbers on every call is named nondeterministic (verdict
#    "nondeterministic", exit 1), with no padding or bucketing advice (it was told "pad every batch
#    to {6}"); a model whose first call of each size alone differs (a cache it fills) is not: its
#    later calls agree, and it stays a warm-up finding;
#  - a model that raises at one batch size: the size and the model's message, exit 3, and the report
#    keeps the sizes measured before it (everything was lost: no report);
#  - an output whose dtype changes with the batch: one line naming it, exit 3 ("max abs 0" before);
#  - an output the model writes into its own buffer on every call (issue 51): the rows compared are
#    kept as copies, so a row whose bits differ from call 1 has a nonzero distance (it was measured
#    against the buffer's latest values, itself: "max abs 0" beside differing digests).
# (An output whose shape changes, and rows of no elements: tests/models/test_invariance_limits.py.)
#
# usage: test_invariance_unusual.py REPRO_AUDIT_BINARY SOURCE_DIR WORK_FOLDER PYTHON3_WITH_JSONSCHEMA
import json
import subprocess
import sys
from typing import List

from model_test import arguments, check, failures, fresh_folder

binary, source, work = arguments()
python3 = sys.argv[4] if len(sys.argv) > 4 else "python3"
import torch  # noqa: E402

fresh_folder(work)
SIZES = "1,2,3,4,5,6"


class Noisy(torch.nn.Module):
    def forward(self, x):
        return x + torch.randn_like(x)


class FirstCallPerSize(torch.nn.Module):
    seen: List[int]

    def __init__(self):
        super().__init__()
        self.seen = []

    def forward(self, x):
        n = x.shape[0]
        if n not in self.seen:
            self.seen.append(n)
            return x * 2.0
        return x * 3.0


class FailsAtFive(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] == 5:
            raise RuntimeError("the model refuses five rows")
        return x * 2


class WidensDtype(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] > 2:
            return x.double() * 2
        return x * 2


class WritesItsBuffer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("out", torch.zeros(64, 4))
        self.register_buffer("calls", torch.zeros(1))

    def forward(self, x):
        self.calls += 1
        o = self.out[: x.shape[0]]
        o.copy_(x * self.calls)
        return o


rows = work / "rows.pt"
torch.save(torch.randn(16, 4), str(rows))


def audit(name, module, *extra):
    path = work / f"{name}.pt"
    torch.jit.script(module).save(str(path))
    report = work / f"{name}.json"
    cmd = [binary, "invariance", str(path), "--input", str(rows), "--rows", "2", "--sizes", SIZES, "--configs",
           "default", "--report", str(report), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    print(f"$ {' '.join(cmd[1:])}\n{p.stdout}{p.stderr}exit {p.returncode}", flush=True)
    return p, (json.loads(report.read_text()) if report.exists() else None)


# 1. Random numbers on every call: nondeterministic, no padding advice.
p, doc = audit("noisy", Noisy())
config = doc["invariance"]["configs"][0] if doc else {}
check(p.returncode == 1, f"noisy: exit 1 (a finding), got {p.returncode}")
check(config.get("verdict") == "nondeterministic", f"noisy: verdict nondeterministic, got {config.get('verdict')}")
check("nondeterministic" in p.stdout and "pad every batch" not in p.stdout and "bucket" not in p.stdout,
      "noisy: named nondeterministic, with no padding or bucketing advice")
check(not any("pad every batch" in a for a in config.get("advice", [])), "noisy: no padding advice in the JSON")
r = subprocess.run([binary, "report", str(work / "noisy.json")], capture_output=True, text=True)
check(r.returncode == 1 and "nondeterministic" in r.stdout, "noisy: `report` reads the verdict back")

# 2. A cache filled by the first call of each size: call 1 differs, calls 2 and 3 agree: warm-up, not
#    nondeterministic.
p, doc = audit("lazy", FirstCallPerSize(), "--no-fix-search")
config = doc["invariance"]["configs"][0] if doc else {}
check(config.get("verdict") == "variant" and 1 in config.get("warmup_dependent", []),
      f"lazy: variant and warm-up-dependent at size 1, got {config.get('verdict')}")
check("nondeterministic" not in p.stdout, "lazy: not called nondeterministic")

# 3. A failure at one size: its size and message, exit 3, the sizes before it kept.
p, doc = audit("fails-at-five", FailsAtFive())
said = "fails on a batch of 5: builtins.RuntimeError: the model refuses five rows"
check(p.returncode == 3, f"fails-at-five: exit 3, got {p.returncode}")
check(said in p.stderr and len(p.stderr.strip().splitlines()) == 1, "fails-at-five: one line on stderr naming it")
check(said in p.stdout, "fails-at-five: the report's summary names the size and the message")
config = doc["invariance"]["configs"][0] if doc else {}
sizes = sorted({c["size"] for c in config.get("cells", [])})
check(sizes == [1, 2, 3, 4], f"fails-at-five: the report keeps sizes 1-4, got {sizes}")
check(said in config.get("message", ""), "fails-at-five: the JSON keeps the message")
r = subprocess.run([binary, "report", str(work / "fails-at-five.json")], capture_output=True, text=True)
check(r.returncode == 3 and said in r.stdout, f"fails-at-five: `report` exits 3 and names it, got {r.returncode}")

# 4. An output whose dtype changes with the batch: one line naming it, exit 3.
p, doc = audit("widens", WidensDtype())
check(p.returncode == 3 and len(p.stderr.strip().splitlines()) == 1 and "changes with the batch" in p.stderr
      and "float64" in p.stderr, f"widens: exit 3, one line naming the dtype change, got {p.returncode}")

# 5. An output written into the model's own buffer: every call changes it (nondeterministic), and each
#    row that differs from call 1 says by how much, measured from a copy of call 1's row.
p, doc = audit("writes-its-buffer", WritesItsBuffer())
config = doc["invariance"]["configs"][0] if doc else {}
differing = [r for c in config.get("cells", []) for r in c["rows"] if not r["equal"]]
check(config.get("verdict") == "nondeterministic", f"writes-its-buffer: nondeterministic, got {config.get('verdict')}")
check(differing and all(r["max_abs"] > 0 for r in differing),
      f"writes-its-buffer: every differing row moved by more than 0, got {[r['max_abs'] for r in differing]}")

v = subprocess.run([python3, str(source / "tests/validate_schema.py"), str(source / "share/schema/report-v1.schema.json"),
                    str(work), "noisy.json", "fails-at-five.json"], capture_output=True, text=True)
print(v.stdout + v.stderr)
check(v.returncode == 0, "the reports validate against report-v1.schema.json")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
