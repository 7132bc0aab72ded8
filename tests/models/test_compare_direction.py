#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `compare A B` says which way each changed tensor moved against the float64 referee (issue 53 item 4),
# with the figures Python computes. The problem: an upgrade that changes bits may have moved a result
# toward float64, away from it, or neither (reordering), and which it is depends on the machine's
# kernels, so no figure can be written down. The approach: two baselines of one graph whose second
# run Python changes through its weights (same graph, other weights: a comparison the tool accepts
# and explains by the weights), each saved with its kept tensors, and Python's own float64 run of
# each module on the same input:
#   * rounding: the output goes through a Veltkamp split by 2^16 + 1 when a buffer says so, which in
#     float32 keeps 8 bits of the significand (bfloat16's precision) and in float64 37 bits, so the
#     referee stays near the exact result while B's float32 result lies up to 2^15 ULP from it. A's
#     and B's errors in the baseline files and in compare's per-tensor class are Python's (max ULP of
#     the kept tensor against float64 rounded to float32, counted through zero), and compare calls the
#     change beyond reordering, further from float64 under the current results, by Python's factor;
#     `run --baseline` says the same;
#   * reordering: the same sum over a row with its summands in another order (a permutation buffer):
#     other bits, both within a few ULP of float64, so compare says reordering with Python's figures;
#   * a baseline saved with --referee off: one line, no class claimed;
#   * every file fits its schema.
# The cost: four small audits of two repeats, a few seconds each.
#
# usage: test_compare_direction.py REPRO_AUDIT_BINARY SOURCE_DIR WORK_FOLDER PYTHON3_WITH_JSONSCHEMA
import json
import subprocess
import sys

from model_test import arguments, check, failures, fresh_folder, jit_as_the_worker, kept_tensors

binary, source, work = arguments()
python3 = sys.argv[4] if len(sys.argv) > 4 else "python3"
try:
    import torch
    import torch.nn as nn
except ImportError as e:
    print(f"FAIL: {e}")
    sys.exit(1)

fresh_folder(work)
jit_as_the_worker(torch)


class Rounds(nn.Module):
    """x @ w, then, where `on` is 1, that product with its significand cut by a Veltkamp split."""
    def __init__(self, w, on):
        super().__init__()
        self.register_buffer("w", w)
        self.register_buffer("on", torch.tensor(float(on)))

    def forward(self, x):
        y = x @ self.w
        t = y * 65537.0
        high = t - (t - y)
        return y + self.on * (high - y)


class Permuted(nn.Module):
    """Each row's sum of x * w, its summands taken in the order `order` gives."""
    def __init__(self, w, order):
        super().__init__()
        self.register_buffer("w", w)
        self.register_buffer("order", order)

    def forward(self, x):
        return (x[:, self.order] * self.w[self.order]).sum(dim=1)


def ordered(t):
    """float32 bits as integers in the order of the floats, -0 and +0 one value (as the tool counts)."""
    i = t.contiguous().view(torch.int32).to(torch.int64)
    return torch.where(i < 0, -(2 ** 31) - i, i)


def python_ulp(x, r):
    """Max ULP of the float32 x against the float64 r rounded to float32."""
    return (ordered(x) - ordered(r.to(torch.float32))).abs().max().item()


def save(module, name):
    path = work / f"{name}.pt"
    torch.jit.script(module.eval()).save(str(path))
    return path


def run(model, inp, name, *extra):
    baseline = work / f"{name}.json"
    cmd = [binary, "run", str(model), "--input", str(inp), "--configs", "default", "--repeats", "2",
           "--save-baseline", str(baseline), "--baseline-tensors", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    print(f"$ {' '.join(cmd[1:])}\n{p.stdout}{p.stderr}exit {p.returncode}", flush=True)
    check(p.returncode == 0 and baseline.exists(), f"{name}: a reproducible run and its baseline")
    return baseline


def compare(a, b, name):
    report = work / f"{name}.json"
    cmd = [binary, "compare", str(a), str(b), "--report", str(report)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    print(f"$ {' '.join(cmd[1:])}\n{p.stdout}{p.stderr}exit {p.returncode}", flush=True)
    doc = json.loads(report.read_text()) if report.exists() else None
    return p, doc


def own_errors(baseline):
    config = json.loads(baseline.read_text())["targets"][0]["configs"][0]
    return {e["name"]: e for e in config.get("referee", {}).get("errors", [])}


def direction_of(doc):
    results = (doc or {}).get("baseline", {}).get("results", [])
    return results[0] if results else {}


with torch.no_grad():
    # 1. Rounding through bfloat16's precision in B: further from float64.
    torch.manual_seed(0)
    w = torch.randn(64, 16)
    x = torch.randn(8, 64)
    inp = work / "x.pt"
    torch.save(x, str(inp))
    near, far = Rounds(w, 0), Rounds(w, 1)
    a = run(save(near, "near"), inp, "near-base")
    b = run(save(far, "far"), inp, "far-base")
    ulp_a = python_ulp(kept_tensors(torch, a, 0)["output"], near.double()(x.double()))
    ulp_b = python_ulp(kept_tensors(torch, b, 0)["output"], far.double()(x.double()))
    print(f"python: without rounding {ulp_a} ULP from float64, with it {ulp_b}")
    check(ulp_b > max(16, 8 * ulp_a), f"the premise: rounding moves the output beyond reordering ({ulp_a}, {ulp_b})")
    for base, ulp, what in ((a, ulp_a, "A"), (b, ulp_b, "B")):
        e = own_errors(base).get("output")
        check(e is not None and e["max_ulp"] == ulp, f"{what}'s baseline keeps the output's error {e}: Python's {ulp}")
    p, doc = compare(a, b, "rounds")
    res = direction_of(doc)
    check(res.get("status") == "explained", f"rounds: explained by the weights ({res.get('status')})")
    d = res.get("direction", {})
    check(d.get("further", {}).get("count") == 1 and d.get("further", {}).get("tensor") == "output",
          f"rounds: one tensor further from float64 ({d})")
    check(d.get("further", {}).get("baseline_ulp") == ulp_a and d.get("further", {}).get("current_ulp") == ulp_b,
          f"rounds: the figures are Python's {ulp_a} and {ulp_b} ({d.get('further')})")
    cls = next((t.get("referee", {}) for t in res.get("differing_tensors", []) if t["name"] == "output"), {})
    check(cls.get("class") == "beyond-reordering", f"rounds: the output's class {cls.get('class')}")
    check((cls.get("a") or {}).get("max_ulp") == ulp_a and (cls.get("b") or {}).get("max_ulp") == ulp_b,
          "rounds: the class's two errors are Python's")
    ratio = ulp_b / ulp_a if ulp_a > 0 else 0
    factor = "" if ulp_a == 0 else f"{ratio:.2g}x " if ratio < 10 else f"{ratio:.0f}x "
    line = (f"1 tensor {factor}further from float64 under the current results (output: {ulp_b:.0f} ULP where the "
            f"baseline {'had ' + format(ulp_a, '.0f') if ulp_a > 0 else 'was exact'}): beyond reordering")
    check(line in p.stdout, f"rounds: compare's text says {line!r}")
    # run --baseline says the same of a fresh run.
    cmd = [binary, "run", str(work / "far.pt"), "--input", str(inp), "--configs", "default", "--repeats", "2",
           "--baseline", str(a)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    print(f"$ {' '.join(cmd[1:])}\n{r.stdout}{r.stderr}exit {r.returncode}", flush=True)
    check(line in r.stdout, "rounds: run --baseline says it too")
    # And the other way round, B as the baseline: closer under the current results.
    p, _ = compare(b, a, "rounds-back")
    check("1 tensor" in p.stdout and "closer to float64 under the current results" in p.stdout,
          "rounds: compare B A says closer")

    # 2. The same sum in another order: reordering.
    torch.manual_seed(1)
    n = 4096
    w2 = torch.randn(n)
    x2 = torch.randn(8, n) * 100
    inp2 = work / "x2.pt"
    torch.save(x2, str(inp2))
    one, other = Permuted(w2, torch.arange(n)), Permuted(w2, torch.randperm(n))
    a2 = run(save(one, "one"), inp2, "one-base")
    b2 = run(save(other, "other"), inp2, "other-base")
    out_a, out_b = kept_tensors(torch, a2, 0)["output"], kept_tensors(torch, b2, 0)["output"]
    check(not torch.equal(out_a, out_b), "the premise: another order gives other bits")
    ulp_a2 = python_ulp(out_a, one.double()(x2.double()))
    ulp_b2 = python_ulp(out_b, other.double()(x2.double()))
    expected = "reordering" if max(ulp_a2, ulp_b2) <= max(16, 8 * min(ulp_a2, ulp_b2)) else "beyond-reordering"
    print(f"python: the two orders lie {ulp_a2} and {ulp_b2} ULP from float64: {expected}")
    check(expected == "reordering", "the premise: two orders of one sum are reordering")
    p, doc = compare(a2, b2, "permuted")
    res = direction_of(doc)
    d = res.get("direction", {})
    check(d.get("reordering") == 1 and d.get("further", {}).get("count") == 0 and d.get("closer", {}).get("count") == 0,
          f"permuted: one tensor, reordering ({d})")
    check(d.get("baseline_max_ulp") == ulp_a2 and d.get("current_max_ulp") == ulp_b2,
          f"permuted: the figures are Python's {ulp_a2} and {ulp_b2}")
    line = (f"direction vs float64: the current results changed 1 tensor, within {max(ulp_a2, ulp_b2):.0f} ULP of "
            "float64 on both sides: reordering")
    check(line in p.stdout, f"permuted: compare's text says {line!r}")

    # 3. A baseline without errors against float64: one line, no class.
    off = run(work / "near.pt", inp, "near-off", "--referee", "off")
    check("referee" not in json.loads(off.read_text())["targets"][0], "--referee off: no referee in the baseline")
    p, doc = compare(off, b, "off")
    res = direction_of(doc)
    check(res.get("direction", {}).get("note", "").startswith("no errors against float64 for the baseline"),
          f"off: the note ({res.get('direction')})")
    check(all("referee" not in t for t in res.get("differing_tensors", [])), "off: no class claimed")
    check("direction vs float64: not known: no errors against float64 for the baseline" in p.stdout, "off: one line")

# 4. Every file fits its schema.
v = subprocess.run([python3, str(source / "tests/validate_schema.py"), str(source / "share/schema/baseline-v1.schema.json"),
                    str(work), "near-base.json", "far-base.json", "one-base.json", "other-base.json", "near-off.json"],
                   capture_output=True, text=True)
print(v.stdout + v.stderr)
check(v.returncode == 0, "the baselines validate against baseline-v1.schema.json")
v = subprocess.run([python3, str(source / "tests/validate_schema.py"), str(source / "share/schema/report-v1.schema.json"),
                    str(work), "rounds.json", "permuted.json", "off.json"], capture_output=True, text=True)
print(v.stdout + v.stderr)
check(v.returncode == 0, "the comparisons validate against report-v1.schema.json")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
