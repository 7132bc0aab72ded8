#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `repro-audit invariance`'s float64 referee (issue 53 items 1-3 for invariance) agrees with Python.
# The problem: a class of batch sizes says which sizes give a row the same bits, not whether either
# class is wrong, and how far a row lies from float64 depends on the machine's BLAS, so no figure can
# be written down. The approach: the held-out Linear(1024, 512) of test_invariance_positions.py
# (seeded, --sizes 1,2,3,4,8,16), and Python builds each class's smallest batch as the tool builds it
# (model_test.tool_batches), takes the anchors' rows in float32 and each anchor alone in float64 (the
# referee's rows) on one thread, and computes:
#   * each class's error per output (max ULP in float32 counted through zero, max abs, max relative,
#     over the anchors): the report's classes[].errors must equal it;
#   * each other class's difference from the reference class: reordering when the larger figure is
#     within max(16, 8 x the smaller), as Python's figures give; the Linear classes are reordering;
#   * the text, the Python API (Result.error_vs_reference, difference_classes) and the JUnit failure
#     carry them; --referee off leaves the report without a referee; the reports fit the schema.
# The cost: one small Linear, two audits without the fix search; well under a minute on 2 cores.
#
# usage: test_invariance_referee.py REPRO_AUDIT_BINARY SOURCE_DIR WORK_FOLDER PYTHON3_WITH_JSONSCHEMA
import copy
import json
import math
import os
import subprocess
import sys

from model_test import (arguments, check, failures, fresh_folder, jit_as_the_worker, python_error, tool_batches,
                        validate_reports)

binary, source, work = arguments()
python3 = sys.argv[4] if len(sys.argv) > 4 else "python3"
import torch  # noqa: E402

fresh_folder(work)
jit_as_the_worker(torch)

SIZES = [1, 2, 3, 4, 8, 16]
ANCHORS = 4
torch.manual_seed(0)
linear = torch.nn.Linear(1024, 512).eval()
rows = torch.randn(16, 1024)
torch.jit.script(linear).save(str(work / "linear.pt"))
torch.save(rows, str(work / "linear_rows.pt"))


def audit(name, *extra):
    report, junit = work / f"{name}.json", work / f"{name}.xml"
    cmd = [binary, "invariance", str(work / "linear.pt"), "--input", str(work / "linear_rows.pt"), "--sizes",
           ",".join(map(str, SIZES)), "--no-fix-search", "--report", str(report), "--junit", str(junit), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    print(f"$ {' '.join(cmd[1:])}\n{p.stdout}{p.stderr}exit {p.returncode}", flush=True)
    doc = json.loads(report.read_text()) if report.exists() else None
    return p, doc, junit.read_text() if junit.exists() else ""


# The referee's rows: each anchor alone, the model in float64, one thread (as the referee runs).
threads = torch.get_num_threads()
torch.set_num_threads(1)
with torch.inference_mode():
    linear64 = copy.deepcopy(linear).double()
    reference = [linear64(rows[a:a + 1].double())[0] for a in range(ANCHORS)]
torch.set_num_threads(threads)


def class_error(size):
    """Python's figures for a class whose smallest size is `size`: the anchors' rows of the start batch
    the tool builds, in float32, against the referee's rows; the furthest anchor's (max of each)."""
    ulp = abs_ = rel = 0.0
    with torch.inference_mode():
        for anchors, start, _ in tool_batches(len(rows), ANCHORS, size):
            out = linear(rows[start])
            for k, a in enumerate(anchors):
                u, d, r = python_error(torch, out[k], reference[a])
                ulp, abs_, rel = max(ulp, u), max(abs_, d), max(rel, r)
    return ulp, abs_, rel


def close(a, b):
    return a is not None and math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-300)


def python_class(ea, eb):
    low, high = min(ea, eb), max(ea, eb)
    return "reordering" if high <= max(16.0, 8.0 * low) else "beyond-reordering"


# 1. The classes' errors and the class of their difference, as Python computes them.
p, doc, junit = audit("linear")
check(doc is not None and p.returncode in (0, 1), f"linear: a verdict and a report (exit {p.returncode})")
inv = (doc or {}).get("invariance", {})
check(inv.get("referee", {}).get("ran") is True, f"linear: the referee ran: {inv.get('referee')}")
config = (inv.get("configs") or [{}])[0]
classes = config.get("classes", [])
check(classes, "linear: classes of sizes")
python_figures = []
for k in classes:
    size = k["sizes"][0]
    errors = {e["name"]: e for e in k.get("errors", [])}
    ulp, abs_, rel = class_error(size)
    python_figures.append(ulp)
    e = errors.get("output", {})
    print(f"class {k['sizes']}: Python {ulp:.0f} ULP, abs {abs_:.3g}, rel {rel:.3g}; report {e}", flush=True)
    check(e.get("max_ulp") == ulp, f"class {k['sizes']}: max ULP {e.get('max_ulp')} is Python's {ulp}")
    check(close(e.get("max_abs"), abs_), f"class {k['sizes']}: max abs {e.get('max_abs')} is Python's {abs_}")
    check(close(e.get("max_rel"), rel), f"class {k['sizes']}: max rel {e.get('max_rel')} is Python's {rel}")
    check(e.get("numel") == 512 * ANCHORS, f"class {k['sizes']}: the anchors' rows were measured: {e.get('numel')}")
for i, k in enumerate(classes[1:], start=1):
    d = k.get("difference") or {}
    expected = python_class(python_figures[0], python_figures[i])
    check(d.get("class") == expected, f"class {k['sizes']}: {d.get('class')} where Python's figures give {expected}")
    check(expected == "reordering", f"class {k['sizes']}: the Linear's batch classes are reordering in Python")
if len(classes) > 1:
    summary = config.get("referee") or {}
    check(summary.get("class") == "reordering", f"linear: the summary is reordering: {summary}")
    check("between classes, class: reordering" in p.stdout, "linear: the text names the classes' class")
    check(config.get("verdict") != "variant" or "reordering" in junit, "linear: the JUnit failure names the class")
    check(any("none is more right" in a for a in config.get("advice", [])),
          f"linear: the advice says no class is more right: {config.get('advice')}")
check("error vs float64: output" in p.stdout, "linear: the text gives each class's error against float64")

# 2. The Python API carries the same figures.
sys.path.insert(0, str(source / "python"))
os.environ["REPRO_AUDIT_BINARY"] = binary
from repro_audit import results  # noqa: E402

result = results.from_report(doc or {}, p.returncode, p.stdout, str(work / "linear.json"))
api = {(e.sizes, e.tensor): e.max_ulp for e in result.error_vs_reference}
check(api == {(tuple(k["sizes"]), "output"): ulp for k, ulp in zip(classes, python_figures)},
      f"the API's error_vs_reference is Python's: {api}")
check([c.cls for c in result.difference_classes] == [(k.get("difference") or {}).get("class") for k in classes[1:]],
      f"the API's difference_classes are the report's: {result.difference_classes}")

# 3. --referee off: no referee, no figures.
p, off, _ = audit("off", "--referee", "off")
check(off is not None and "referee" not in off.get("invariance", {}), "--referee off: no referee in the report")
check(off is not None and all("errors" not in k for c in off["invariance"]["configs"] for k in c.get("classes", [])),
      "--referee off: no class has figures")

# 4. The reports fit the schema.
validate_reports(python3, source, work, "linear.json", "off.json")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
