#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The class of a trace's first differing op (issue 53 item 2) agrees with what Python works out. The
# problem: which value a racing write leaves, and how far a reordered sum lies from float64, depend on
# the machine and on timing, so no figure can be written down. The approach: models a user would write,
# `run --trace` on two threads, and Python computing from the same inputs what the report's class must
# say:
#   * index_put_ without accumulate and with duplicate indices: the root cause is aten::index_put_,
#     classed write-race; the elements written more than once (their count, and the first positions)
#     are Python's; every element of the kept output holds one of the values Python says were written
#     to it; the configuration's differences follow the race; the text, JUnit and the Python API say so;
#   * index_put_ with accumulate=True (sums in an order that changes between runs): the root cause is
#     classed reordering against the op rerun in float64, and both runs' errors lie within the bound
#     float32 summation allows (Python: n * 2^-24 * sum |x| per element, n the element's addends);
#   * --referee off: no class at the root cause.
# Each audit retries (at most three times) while the two threads happen not to race: the test needs a
# divergence to class, and says so if it never sees one.
#
# usage: test_trace_op_class.py REPRO_AUDIT_BINARY SOURCE_DIR WORK_FOLDER
import json
import subprocess
import sys

from model_test import arguments, check, failures, fresh_folder, jit_as_the_worker, kept_tensors

binary, source, work = arguments()
try:
    import torch
    import torch.nn as nn
except ImportError as e:
    print(f"FAIL: {e}")
    sys.exit(1)

fresh_folder(work)
jit_as_the_worker(torch)

ROWS, WIDTH, N = 64, 16, 1 << 18


def targets(n):
    return (torch.arange(n) * 7919) % ROWS


class Overwrite(nn.Module):
    def forward(self, x):
        idx = (torch.arange(x.shape[0]) * 7919) % 64
        out = torch.zeros(64, x.shape[1], dtype=x.dtype)
        out.index_put_((idx,), x)
        return out


class Accumulate(nn.Module):
    def forward(self, x):
        idx = (torch.arange(x.shape[0]) * 7919) % 64
        out = torch.zeros(64, x.shape[1], dtype=x.dtype)
        out.index_put_((idx,), x, accumulate=True)
        return out


def save_script(module, name, x):
    path, inp = work / f"{name}.pt", work / f"{name}-input.pt"
    torch.jit.script(module.eval()).save(str(path))
    torch.save(x, str(inp))
    return path, inp


def root_cause(doc):
    trace = doc["targets"][0]["configs"][0].get("trace") or {}
    causes = trace.get("root_causes") or []
    return causes[0] if causes else None


def audit(path, inp, name, *extra, threads=2):
    """The report of a traced run on `threads` threads whose root cause's capture runs saw it differ,
    or the last one when none did (then baseline is None)."""
    doc = None
    for attempt in range(4):
        report = work / f"{name}-{attempt}.json"
        baseline = work / f"{name}-{attempt}-base.json"
        cmd = [binary, "run", str(path), "--input", str(inp), "--configs", f"threads={threads}", "--repeats", "4",
               "--trace", "--no-fix-search", "--report", str(report), "--save-baseline", str(baseline),
               "--baseline-tensors", *extra]
        p = subprocess.run(cmd, capture_output=True, text=True)
        print(f"$ {' '.join(cmd[1:])}\n{p.stdout}{p.stderr}exit {p.returncode}", flush=True)
        doc = json.loads(report.read_text()) if report.exists() else None
        rc = root_cause(doc) if doc else None
        if rc and (rc.get("stats") or {}).get("differing", 0) > 0:
            return doc, baseline, p.stdout, report
    return doc, None, "", None


# 1. A write race: index_put_ with duplicate indices and no accumulate. Which thread's write lands
#    last changes with timing; four threads (on any number of cores) give it more ways to change.
torch.manual_seed(0)
x = torch.randn(N, WIDTH)
path, inp = save_script(Overwrite(), "overwrite", x)
doc, baseline, stdout, report = audit(path, inp, "overwrite", threads=4)
check(baseline is not None, "overwrite: the capture runs saw the root cause differ in one of four audits")
if baseline is not None:
    rc = root_cause(doc)
    check(rc is not None and rc["op"] == "aten::index_put_", f"overwrite: the root cause is index_put_ ({rc and rc['op']})")
    cls = (rc or {}).get("referee") or {}
    check(cls.get("class") == "write-race", f"overwrite: the root cause's class is write-race ({cls.get('class')}: "
                                            f"{cls.get('why')})")
    # The elements written more than once, as flat positions of the 64 x 16 output.
    where = torch.arange(ROWS * WIDTH).view(ROWS, WIDTH)[targets(N)].reshape(-1)
    positions, counts = torch.unique(where, return_counts=True)
    twice = positions[counts > 1]
    indices = cls.get("indices") or {}
    check(indices.get("count") == twice.numel(), f"overwrite: {indices.get('count')} elements written more than "
                                                 f"once, Python says {twice.numel()}")
    first = twice[:len(indices.get("first", []))].tolist()
    check(indices.get("first") == first, f"overwrite: the first of them {indices.get('first')}, Python's {first}")
    # Every element of the kept output holds one of the values written to it.
    out = kept_tensors(torch, baseline, 0)["output"].reshape(-1)
    values = x.reshape(-1)
    held = torch.zeros(ROWS * WIDTH, dtype=torch.bool)
    match = values.view(torch.int32) == out[where].view(torch.int32)
    held[where[match]] = True
    check(bool(held.all()), "overwrite: every element of the kept output is one of the values written to it")
    config = doc["targets"][0]["configs"][0]
    summary = (config.get("referee") or {}).get("summary") or {}
    check(summary.get("class") == "write-race", f"overwrite: the configuration's differences follow the race "
                                                f"({summary.get('class')}: {summary.get('why')})")
    check("class: write-race - aten::index_put_ wrote" in stdout, "overwrite: the text names the race under the root cause")
    # JUnit and the Python API carry the root cause's class too.
    junit = work / "overwrite.xml"
    subprocess.run([binary, "report", str(report), "--junit", str(junit)], capture_output=True, text=True)
    check(junit.exists() and "(write-race)" in junit.read_text(), "overwrite: the JUnit failure names the race")
    sys.path.insert(0, str(source / "python"))
    from repro_audit.results import from_report
    result = from_report(doc, 1, stdout, str(report))
    check(("threads=4", "root cause aten::index_put_", "write-race") in
          [(c.between, c.tensor, c.cls) for c in result.difference_classes],
          f"overwrite: Result.difference_classes {result.difference_classes}")

# 2. Reordering: index_put_ with accumulate=True, whose sums are added in an order that changes.
x = torch.randn(N, WIDTH) * 100
path, inp = save_script(Accumulate(), "accumulate", x)
doc, baseline, stdout, report = audit(path, inp, "accumulate")
check(baseline is not None, "accumulate: the capture runs saw the root cause differ in one of four audits")
if baseline is not None:
    rc = root_cause(doc)
    check(rc is not None and rc["op"] == "aten::index_put_", f"accumulate: the root cause is index_put_ ({rc and rc['op']})")
    cls = (rc or {}).get("referee") or {}
    check(cls.get("class") == "reordering", f"accumulate: the root cause's class is reordering ({cls.get('class')}: "
                                            f"{cls.get('why')})")
    check("float64" in cls.get("why", ""), "accumulate: the evidence names the op's float64 rerun")
    # Python's bound on a float32 sum of n addends: n * 2^-24 * sum |x| (per output element).
    idx = targets(N)
    addends = torch.bincount(idx, minlength=ROWS).double().view(ROWS, 1)
    magnitude = torch.zeros(ROWS, WIDTH, dtype=torch.float64).index_put_((idx,), x.double().abs(), accumulate=True)
    bound = (addends * 2.0 ** -24 * magnitude).max().item()
    for side in ("a", "b"):
        e = cls.get(side) or {}
        check(e.get("dtype") == "float32" and e.get("numel") == ROWS * WIDTH,
              f"accumulate: run {side}'s error is of a float32 tensor of {ROWS * WIDTH} elements ({e})")
        check(e.get("max_abs") is not None and e["max_abs"] <= bound,
              f"accumulate: run {side} lies {e.get('max_abs')} from float64, within Python's bound {bound:.3g}")

# 3. --referee off: the root cause keeps no class.
doc, baseline, stdout, report = audit(path, inp, "accumulate-off", "--referee", "off")
if baseline is not None:
    rc = root_cause(doc)
    check(rc is not None and "referee" not in rc, "referee off: the root cause has no class")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
