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
#   * a sum whose float32 result cancels (1, then 2^24 and -2^24 in another lane): 1 and 2 threads
#     give 0 and 1 where float64 gives 1, a gap the ULP figures alone call beyond reordering; the
#     conditioning run's figure (how far one rounding of the inputs moves float64) must lie within
#     Python's bound for it (the sum of |x| times one float32 rounding), and the class follow from it;
#   * a model that adds a slice of torch.empty to its input: its repeats differ, and the class is
#     uninitialized, with as many NaN elements as Python sees under deterministic algorithms with
#     fill_uninitialized_memory on;
#   * the JUnit failure names the class, and the Python API's Result carries the errors and classes
#     (error_vs_reference, difference_classes) as the JSON has them;
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

import model_test

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


class ReadsEmpty(nn.Module):
    """Adds memory nobody wrote: torch.empty gets the block y just freed, whose first bytes the heap
    has overwritten with its own pointers, which differ from process to process."""
    def forward(self, x):
        y = torch.ones(x.shape[0], 64, dtype=x.dtype) * 2
        s = y.sum()
        e = torch.empty(x.shape[0], 64, dtype=x.dtype)
        return x + e[:, :x.shape[1]] + 0 * s


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


def audit(model, inp, *extra, name, repeats=2):
    report = work / f"{name}.json"
    baseline = work / f"{name}-base.json"
    cmd = [binary, "run", str(model), "--input", str(inp), "--repeats", str(repeats), "--report", str(report),
           "--save-baseline", str(baseline), "--baseline-tensors", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    print(f"$ {' '.join(cmd[1:])}\n{p.stdout}{p.stderr}exit {p.returncode}", flush=True)
    return p, (json.loads(report.read_text()) if report.exists() else None), baseline


def python_error(x, r):
    return model_test.python_error(torch, x, r)


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

# 2b. Cancellation: reordering moves this sum from 1 to 0, a billion float32 ULP; the conditioning run
#     says so (its figure within Python's bound), so the class is reordering, not a bug.
xc = torch.zeros(256 * 256)
half = xc.numel() // 2
xc[0], xc[half + 1024], xc[half + 1025] = 1.0, 2.0 ** 24, -(2.0 ** 24)
path, inp = save_script(Sum(), "cancel", xc)
p, doc, base = audit(path, inp, "--configs", "threads=1,threads=2", name="cancel")
dep = doc["targets"][0].get("configuration_dependence") if doc else None
check(dep is not None and dep["differing_tensors"], "cancel: threads 1 and 2 give other bits (as the golden set's input)")
if dep and dep["differing_tensors"]:
    reference = xc.double().sum()
    ulps = [python_error(kept_tensors(torch, base, c)["output"], reference)[0] for c in range(2)]
    fars = [python_error(kept_tensors(torch, base, c)["output"], reference)[1] for c in range(2)]
    check(max(ulps) > max(16, 8 * min(ulps)), f"cancel: the ULP figures alone say beyond reordering ({ulps})")
    bound = xc.double().abs().sum().item() * 2.0 ** -24
    why = dep["differing_tensors"][0].get("referee", {}).get("why", "")
    moved = [float(w.split()[0].rstrip(",:")) for w in why.split("moves float64 by ")[1:2]
             for w in [w.removeprefix("up to ")]]
    print(f"python: cancel: ULP {ulps}, abs {fars}, one rounding moves float64 by at most {bound}; tool: {why}")
    check(len(moved) == 1 and 0 < moved[0] <= bound * (1 + 1e-9), f"cancel: the conditioning figure {moved} within {bound}")
    if moved:
        expected = "reordering" if max(fars) <= 8 * moved[0] else "beyond-reordering"
        check(dep.get("referee", {}).get("class") == expected, f"cancel: class {dep.get('referee')} is {expected}")

# 2c. Memory nobody wrote: the repeats differ; under fill_uninitialized_memory the reruns agree with
#     NaN where Python's run under the same switches has NaN.
path, inp = save_script(ReadsEmpty(), "empty", torch.ones(8, 16))
p, doc, _ = audit(path, inp, "--configs", "default", name="empty", repeats=4)
config = doc["targets"][0]["configs"][0] if doc else {}
check(config.get("verdict") == "diverged", f"empty: the repeats differ (garbage from the heap): {config.get('verdict')}")
if config.get("verdict") == "diverged":
    torch.use_deterministic_algorithms(True, warn_only=True)
    nans = torch.isnan(torch.jit.load(str(path))(torch.ones(8, 16))).sum().item()
    torch.use_deterministic_algorithms(False)
    cls = config.get("referee", {}).get("summary", {})
    print(f"python: empty: {nans} NaN under fill_uninitialized_memory; tool: {cls}")
    check(cls.get("class") == "uninitialized", f"empty: the class is uninitialized ({cls.get('class')})")
    check(f"{nans} of its 128 elements are NaN" in cls.get("why", ""), f"empty: {nans} NaN elements named")
    check("class: uninitialized - output: under default+fill_uninitialized_memory=on" in p.stdout, "empty: the text line")
    # JUnit: the failure's message names the class.
    junit = work / "empty.xml"
    subprocess.run([binary, "report", str(work / "empty.json"), "--junit", str(junit)], capture_output=True, text=True)
    check(junit.exists() and "class uninitialized (output)" in junit.read_text(), "empty: the JUnit failure names the class")
    # The Python API reads the same.
    sys.path.insert(0, str(source / "python"))
    from repro_audit.results import from_report
    result = from_report(doc, p.returncode, p.stdout, str(work / "empty.json"))
    check([(c.between, c.tensor, c.cls) for c in result.difference_classes] == [("default", "output", "uninitialized")],
          f"empty: Result.difference_classes {result.difference_classes}")
    check([(e.config, e.tensor, e.nan_reference) for e in result.error_vs_reference] ==
          [("default", "output", nans)] and math.isnan(result.error_vs_reference[0].max_ulp),
          f"empty: Result.error_vs_reference {result.error_vs_reference}")

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
                    str(work), "sum.json", "cancel.json", "empty.json", "linear.json", "raises.json", "downcast.json", "count.json"],
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
