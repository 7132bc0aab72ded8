#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `repro-audit run`'s float64 referee (issue 53 item 1) agrees with what Python measures. The problem:
# a result's distance from a float64 reference depends on the machine's kernels, so no figure can be
# written down. The approach: make models as a user would, let the tool keep each configuration's
# reference tensors (--save-baseline --baseline-tensors), and compute in Python, from those very
# tensors and the model run in float64 on the same inputs, what the report must say:
#   * a float32 sum (TorchScript) on 1 and 2 threads, and a Linear saved with torch.export: each
#     configuration's max ULP (the float32 values between the result and float64 rounded to float32,
#     counted through zero), max abs and max relative error equal Python's; where the two threads
#     give other bits, the configuration dependence's class is the one Python's two ULP figures give
#     (reordering when the larger is within max(16, 8 x the smaller));
#   * a model whose float64 run raises, and one that casts its input back to float32: one line on
#     stderr and in the report saying why the referee did not run, the bitwise verdict as without it;
#   * a model with an integer output: the referee runs, and the output has no error figures;
#   * --referee off: no referee in the report; --referee nonsense: exit 2; every report fits the schema.
# The cost: small models, two repeats; about a minute on 2 cores.
#
# usage: test_run_referee.py REPRO_AUDIT_BINARY SOURCE_DIR WORK_FOLDER PYTHON3_WITH_JSONSCHEMA
import json
import math
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


class Sum(nn.Module):
    def forward(self, x):
        return x.sum()


class Raises(nn.Module):
    def forward(self, x):
        if x.dtype != torch.float32:
            raise RuntimeError("this model runs in float32 only")
        return x * 2


class Downcast(nn.Module):
    def forward(self, x):
        return x.float() * 3


class Count(nn.Module):
    def forward(self, x):
        return (x > 0).sum(dim=1)


def audit(model, inp, *extra, name):
    report = work / f"{name}.json"
    baseline = work / f"{name}-base.json"
    cmd = [binary, "run", str(model), "--input", str(inp), "--repeats", "2", "--report", str(report),
           "--save-baseline", str(baseline), "--baseline-tensors", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    print(f"$ {' '.join(cmd[1:])}\n{p.stdout}{p.stderr}exit {p.returncode}", flush=True)
    return p, (json.loads(report.read_text()) if report.exists() else None), baseline


def ordered(t):
    """float32 bits as integers in the order of the floats, -0 and +0 one value (as the tool counts)."""
    i = t.contiguous().view(torch.int32).to(torch.int64)
    return torch.where(i < 0, -(2 ** 31) - i, i)


def python_error(x, r):
    """Max ULP (in x's float32), max abs and max relative error of x against the float64 r."""
    x64 = x.double()
    diff = (x64 - r).abs()
    scale = torch.maximum(x64.abs(), r.abs())
    rel = torch.where(scale > 0, diff / scale, torch.zeros_like(diff))
    ulp = (ordered(x) - ordered(r.to(torch.float32))).abs()
    return ulp.max().item(), diff.max().item(), rel.max().item()


def close(a, b):
    return a is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-300)


def errors_of(doc, config):
    return {e["name"]: e for e in doc["targets"][0]["configs"][config].get("referee", {}).get("errors", [])}


def save_script(module, name, x):
    path, inp = work / f"{name}.pt", work / f"{name}-input.pt"
    torch.jit.script(module.eval()).save(str(path))
    torch.save(x, str(inp))
    return path, inp


# 1. A float32 sum on 1 and 2 threads: each configuration's figures are Python's, from the tensors the
#    tool kept and the sum in float64.
torch.manual_seed(0)
x = torch.randn(1 << 20) * 1000 + 1
path, inp = save_script(Sum(), "sum", x)
reference = Sum()(x.double())
p, doc, base = audit(path, inp, "--configs", "threads=1,threads=2", name="sum")
check(doc is not None and p.returncode in (0, 1), "sum: a report")
if doc:
    target = doc["targets"][0]
    check(target.get("referee", {}).get("ran") is True and target["referee"]["device"] == "cpu",
          "sum: the referee ran on the CPU")
    ulps = []
    for c, config in enumerate(target["configs"]):
        kept = kept_tensors(torch, base, c)["output"]
        ulp, ab, rel = python_error(kept, reference)
        ulps.append(ulp)
        e = errors_of(doc, c).get("output")
        print(f"python: {config['config']}: {ulp} ULP, abs {ab}, rel {rel}; tool: {e}")
        check(e is not None and e["dtype"] == "float32", f"sum {config['config']}: the output's error")
        if e:
            check(e["max_ulp"] == ulp, f"sum {config['config']}: max_ulp {e['max_ulp']} is Python's {ulp}")
            check(close(e["max_abs"], ab), f"sum {config['config']}: max_abs {e['max_abs']} is Python's {ab}")
            check(close(e["max_rel"], rel), f"sum {config['config']}: max_rel {e['max_rel']} is Python's {rel}")
            check(close(e["referee_own_ulp"], ulp * 2.0 ** (24 - 53)), f"sum {config['config']}: the referee's bound")
        check(f"error vs float64: output {ulp:.0f} ULP" in p.stdout, f"sum {config['config']}: the text line")
    dep = target.get("configuration_dependence")
    if dep and dep["differing_tensors"]:
        low, high = min(ulps), max(ulps)
        expected = "reordering" if high <= max(16, 8 * low) else "beyond-reordering"
        got = dep.get("referee", {}).get("class")
        check(got == expected, f"sum: configuration dependence is {got}, Python's figures give {expected}")
        check(dep["differing_tensors"][0].get("referee", {}).get("class") == expected, "sum: the tensor's class")
        check(f"class: {expected}" in p.stdout, "sum: the class line")
    r = subprocess.run([binary, "report", str(work / "sum.json")], capture_output=True, text=True)
    check(r.returncode == p.returncode and "error vs float64: output" in r.stdout, "sum: `report` re-renders it")
# 2. A torch.export archive: the same figures through the export interpreter in float64.
torch.manual_seed(1)
lin = nn.Linear(64, 16).eval()
xl = torch.randn(8, 64)
ep = torch.export.export(lin, (xl,))
exported, exported_in = work / "linear.pt2", work / "linear-input.pt"
torch.export.save(ep, str(exported))
torch.save(xl, str(exported_in))
p, doc, base = audit(exported, exported_in, "--configs", "default", name="linear")
check(doc is not None, "linear: a report")
if doc:
    e = errors_of(doc, 0).get("output")
    with torch.no_grad():
        ref = torch.nn.functional.linear(xl.double(), lin.weight.double(), lin.bias.double())
    ulp, ab, rel = python_error(kept_tensors(torch, base, 0)["output"], ref)
    print(f"python: linear: {ulp} ULP, abs {ab}, rel {rel}; tool: {e}")
    check(e is not None and e["max_ulp"] == ulp and close(e["max_abs"], ab) and close(e["max_rel"], rel),
          "linear: the export archive's figures are Python's")

# 3. Where the referee cannot run: one line, and the bitwise verdict as without the referee.
small = torch.randn(4, 8)
for name, module, why in [("raises", Raises(), "its float64 run raised: "),
                          ("downcast", Downcast(), "not float64 throughout: ")]:
    path, inp = save_script(module, name, small)
    p, doc, _ = audit(path, inp, "--configs", "default", name=name)
    off, doc_off, _ = audit(path, inp, "--configs", "default", "--referee", "off", name=f"{name}-off")
    check(p.returncode == off.returncode == 0, f"{name}: exit 0, as with --referee off")
    line = [ln for ln in p.stderr.splitlines() if "float64 referee: did not run" in ln]
    check(len(line) == 1 and why in line[0], f"{name}: one line on stderr saying why ({line})")
    check(doc and doc["targets"][0].get("referee", {}).get("ran") is False and
          doc["targets"][0]["referee"]["note"].startswith(why), f"{name}: the report says why")
    check(doc and doc_off and doc["targets"][0]["verdict"] == doc_off["targets"][0]["verdict"] == "reproducible",
          f"{name}: the bitwise verdict stands")
    check(f"float64 referee: did not run ({why}" in p.stdout, f"{name}: the text says why")
    check(doc and not errors_of(doc, 0), f"{name}: no error figures")
    check(doc_off and "referee" not in doc_off["targets"][0] and "referee" not in doc_off["targets"][0]["configs"][0],
          f"{name}: --referee off: no referee in the report")

# 4. An integer output: compared bit for bit only.
path, inp = save_script(Count(), "count", small)
p, doc, _ = audit(path, inp, "--configs", "default", name="count")
check(doc and doc["targets"][0].get("referee", {}).get("ran") is True, "count: the referee ran")
check(doc and doc["targets"][0]["configs"][0].get("referee", {}).get("errors") == [], "count: no error figures")
check("error vs float64: no floating tensor" in p.stdout, "count: the text says so")

# 5. The reports validate against the schema.
v = subprocess.run([python3, str(source / "tests/validate_schema.py"), str(source / "share/schema/report-v1.schema.json"),
                    str(work), "sum.json", "linear.json", "raises.json", "downcast.json", "count.json"],
                   capture_output=True, text=True)
print(v.stdout + v.stderr)
check(v.returncode == 0, "the reports validate against report-v1.schema.json")

# 6. A bad --referee: one line, exit 2.
p = subprocess.run([binary, "run", str(path), "--input", str(inp), "--referee", "gpu"], capture_output=True, text=True)
check(p.returncode == 2 and "--referee" in p.stderr, "--referee gpu: exit 2 naming the option")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
