#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `repro-audit invariance`'s fix search agrees with what Python measures on this machine. The
# problem: whether a switch (threads=1, MKL_CBWR, deterministic algorithms) makes a row's bits
# independent of its batch is a fact of this CPU and its libraries, so no expected answer can be
# written down. The approach: two scripted models a user could write, a Linear layer (MKL's GEMM)
# and a row-wise product over a long row (a reduction that torch splits across threads when the
# batch is small), are measured here first, each configuration in a fresh Python process with the
# switch applied as the worker applies it (environment and torch calls), over the same start and
# end batches the tool builds. The tool's default classes must be Python's, it must sweep again
# batch 1 and the smallest size of each other class, every switch it ran must fix it exactly when
# Python found that switch invariant, the CUDA switches must be "no effect on cpu", and when no
# switch fixes a model, the advice must be padding to a named class; only a fix is priced, and all
# the switches together run when none fixes alone and the search's budget allows. Then --no-fix-search, every
# format and the schema. The cost: rows of 64 Ki floats, sizes up to 8; about a minute on 2 cores.
#
# usage: test_invariance_fix.py REPRO_AUDIT_BINARY SOURCE_DIR WORK_FOLDER
import json
import os
import subprocess
import sys

from model_test import arguments, check, failures, fresh_folder

binary, source, work = arguments()
import torch

fresh_folder(work)
ROWS = 4
SIZES = [1, 2, 4, 8]
CUDA_ONLY = ["cublas_workspace=:16:8", "tf32.cublas=off", "tf32.cudnn=off", "cublas.fp16_reduction=off",
             "cublas.bf16_reduction=off"]


# One configuration measured in a fresh process, as the worker applies it: the environment before
# torch loads (OMP/MKL threads, MKL_CBWR), then torch's own calls. Prints {size: [start, end]} bits.
MEASURE = r"""
import json, sys, torch
path, rows, sizes, threads, det = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4], sys.argv[5] == "1"
if threads: torch.set_num_threads(int(threads))
if det: torch.use_deterministic_algorithms(True)
torch._C._jit_set_profiling_executor(False); torch._C._jit_set_profiling_mode(False)
torch._C._set_graph_executor_optimize(False)
m = torch.jit.load(path); m.eval(); x = torch.load(rows); n = x.shape[0]; R = %d
fillers = list(range(R, n)) if n > R else list(range(n))
out = {}
with torch.inference_mode():
    for size in sizes:
        g = min(R, size); start, end = [], []
        for first in range(0, R, g):
            anchors = list(range(first, min(first + g, R)))
            base = [fillers[j %% len(fillers)] for j in range(size)]
            s, e = list(base), list(base)
            for k, a in enumerate(anchors):
                s[k] = a; e[size - len(anchors) + k] = a
            ys, ye = m(x[torch.tensor(s)]), m(x[torch.tensor(e)])
            start += [ys[k].numpy().tobytes().hex() for k in range(len(anchors))]
            end += [ye[size - len(anchors) + k].numpy().tobytes().hex() for k in range(len(anchors))]
        out[size] = [start, end]
print(json.dumps(out))
""" % ROWS


def measure(path, rows, sizes, toggles):
    """Python's classes of `sizes` under `toggles` ("threads=1", "mkl_cbwr=COMPATIBLE", "deterministic=on"),
    whether every size gives every anchor the same bits at the start and the end of its batch, and the
    sizes at which it does not."""
    env = dict(os.environ)
    threads, det = "", "0"
    for t in toggles:
        key, value = t.split("=")
        if key == "threads":
            env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = threads = value
        elif key == "mkl_cbwr":
            env["MKL_CBWR"] = value
        elif key == "deterministic":
            det = "1"
        else:
            raise ValueError(t)
    p = subprocess.run([sys.executable, "-c", MEASURE, str(path), str(rows), json.dumps(sizes), threads, det],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(p.stderr)
    bits = {int(k): v for k, v in json.loads(p.stdout).items()}
    groups = {}
    for size in sizes:
        groups.setdefault(tuple(bits[size][0]), []).append(size)
    classes = sorted(groups.values(), key=lambda s: s[0])
    moved = [s for s in sizes if bits[s][0] != bits[s][1]]
    return classes, len(classes) == 1 and not moved, moved


def audit(model, rows, *extra, name):
    report = work / f"{name}.json"
    cmd = [binary, "invariance", str(model), "--input", str(rows), "--sizes", ",".join(map(str, SIZES)),
           "--report", str(report), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    print(f"$ {' '.join(cmd[1:])}\n{p.stdout}{p.stderr}", flush=True)
    return p, (json.loads(report.read_text()) if report.exists() else None)


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(256, 256)

    def forward(self, x):
        return self.fc(x)


class RowProduct(torch.nn.Module):
    def forward(self, x):
        return (1.0 + x * 1e-3).prod(1, keepdim=True)


torch.manual_seed(0)
models = {"linear": (Linear(), torch.randn(20, 256)), "rowprod": (RowProduct(), torch.randn(20, 1 << 16))}
SWITCHES = ["deterministic=on", "threads=1", "mkl_cbwr=COMPATIBLE"]
reports = {}
for label, (module, x) in models.items():
    path, rows = work / f"{label}.pt", work / f"{label}_rows.pt"
    torch.jit.script(module).save(str(path))
    torch.save(x, rows)
    default_classes, default_invariant, default_moved = measure(path, rows, SIZES, [])
    print(f"{label}: Python's default classes {default_classes} ({'invariant' if default_invariant else 'variant'})")
    p, rep = audit(path, rows, name=label)
    reports[label] = (p, rep)
    check(rep is not None, f"{label}: a report was written (exit {p.returncode})")
    if rep is None:
        continue
    inv = rep["invariance"]
    check([c["sizes"] for c in inv["configs"][0]["classes"]] == default_classes,
          f"{label}: the tool's default classes are Python's {default_classes}")
    if default_invariant:
        check(inv["fix"] is None, f"{label}: invariant by default, so no fix search")
        continue
    fix = inv["fix"]
    check(fix is not None, f"{label}: variant by default, so the fix search ran")
    if fix is None:
        continue
    want_sizes = sorted({1} | {c[0] for c in default_classes if c[0] != 1})
    check(fix["sizes"] == want_sizes, f"{label}: swept again over {fix['sizes']}, expected batch 1 and one size per class {want_sizes}")
    by = {c["toggles"]: c for c in fix["candidates"]}
    for key in CUDA_ONLY:
        check(by.get(key, {}).get("verdict") == "not run" and by[key]["message"] == "no effect on cpu",
              f"{label}: {key} is not run on the CPU ('no effect on cpu')")
    measured = {}
    for t in SWITCHES:
        c = by.get(t)
        check(c is not None, f"{label}: {t} is a candidate")
        if c is None or c["stage"] == "skipped":
            print(f"{label}: {t} skipped by the tool: {c and c['message']}")
            continue
        _, measured[t], _ = measure(path, rows, fix["sizes"], [t])
        print(f"{label}: Python under {t}: {'invariant' if measured[t] else 'variant'}; the tool: {c['verdict']}")
        check(c["fixes"] == measured[t], f"{label}: the tool says {t} {'fixes' if c['fixes'] else 'does not fix'} it; "
                                          f"Python measured it {'invariant' if measured[t] else 'variant'}")
        # Only a switch that fixes it is priced (issue 54: the search priced candidates that fixed nothing).
        cost = [k for k in fix["timing"]["candidates"] if k["config"] == c["config"]]
        if c["fixes"]:
            check(len(cost) == 1 and cost[0]["cost_ratio"] is not None and cost[0]["cost_ratio"] > 0,
                  f"{label}: {t} fixes it, so it has a measured cost")
        else:
            check(len(cost) == 1 and cost[0]["cost_ratio"] is None and cost[0]["forward_ms"] is None,
                  f"{label}: {t} fixes nothing, so it is not priced")
    # The search's sweeps make at most 3 times the first sweep's model calls: all together are tried
    # when none fixes it alone and that fits, else listed as not run for that reason.
    together = [c for c in fix["candidates"] if "+" in c["toggles"]]
    if not any(measured.values()) and len(measured) >= 2:
        check(len(together) == 1 and (together[0]["stage"] == "combined" or "budget" in together[0]["message"]),
              f"{label}: no switch alone fixes it, so all together were tried, or left out for the budget")
        combined = [c for c in together if c["stage"] == "combined"]
        if combined:
            _, together, _ = measure(path, rows, fix["sizes"], combined[0]["toggles"].split("+"))
            check(combined[0]["fixes"] == together, f"{label}: the combination's verdict is Python's ({together})")
            measured["combined"] = together
    fixed = any(measured.values())
    text = p.stdout
    if fixed:
        names = [t for t, ok in measured.items() if ok and t != "combined"]
        check(all(n in fix["conclusion"] for n in names) and "makes it invariant" in fix["conclusion"],
              f"{label}: the conclusion names the fixing switch {names}: {fix['conclusion']}")
    else:
        # The widest class by its sizes where a row's place does not matter either (issue 43).
        batched = [[m for m in c if m not in default_moved] for c in default_classes if c != [1]]
        batched = [c for c in batched if c]
        if not batched:
            check("keep each row at the same place" in fix["conclusion"],
                  f"{label}: no size is free of position dependence, so no padding: {fix['conclusion']}")
        else:
            widest = max(batched, key=lambda c: (len(c), c[-1]))
            check("padding or bucketing to one class is the fix: pad every batch to a size in {" + str(widest[0])
                  in fix["conclusion"] and str(widest[-1]) + "}" in fix["conclusion"],
                  f"{label}: no switch fixes it, so the advice is padding to {widest}: {fix['conclusion']}")
    check(any(a == "fix search: " + fix["conclusion"] for a in inv["configs"][0]["advice"]),
          f"{label}: the conclusion is among the advice")
    check("fix search from default" in text and fix["conclusion"] in text, f"{label}: the text summary shows the fix search")

# --no-fix-search: the same verdict, no search.
p, rep = audit(work / "linear.pt", work / "linear_rows.pt", "--no-fix-search", name="nofix")
if rep is not None and reports["linear"][1] is not None:
    check(rep["invariance"]["fix"] is None, "--no-fix-search: no fix search")
    check(p.returncode == reports["linear"][0].returncode, "--no-fix-search: the same exit code")

# Every format, the schema, and `report` re-rendering, on a model whose fix search ran.
label = next((k for k, (_, r) in reports.items() if r is not None and r["invariance"]["fix"] is not None), None)
check(label is not None, "some model ran the fix search")
if label:
    out = {k: work / f"all.{k}" for k in ("json", "html", "xml", "md")}
    p = subprocess.run([binary, "-q", "invariance", str(work / f"{label}.pt"), "--input", str(work / f"{label}_rows.pt"),
                        "--sizes", ",".join(map(str, SIZES)), "--report", str(out["json"]), "--html", str(out["html"]),
                        "--junit", str(out["xml"]), "--markdown", str(out["md"])], capture_output=True, text=True)
    check(all(f.exists() for f in out.values()), "every format written")
    if all(f.exists() for f in out.values()):
        v = subprocess.run(["/usr/bin/python3", str(source / "tests/validate_schema.py"),
                            str(source / "share/schema/report-v1.schema.json"), str(work), out["json"].name],
                           capture_output=True, text=True)
        check(v.returncode == 0, f"the report matches the schema: {(v.stdout + v.stderr)[-400:]}")
        again = subprocess.run([binary, "report", str(out["json"])], capture_output=True, text=True)
        check("fix search from default" in again.stdout, "`report` re-renders the fix search")
        x = subprocess.run(["xmllint", "--noout", "--schema", str(source / "share/schema/junit.xsd"), str(out["xml"])],
                           capture_output=True, text=True)
        check(x.returncode == 0, f"the JUnit file matches share/schema/junit.xsd: {x.stderr[-300:]}")
        check("fix search from default" in out["xml"].read_text(), "JUnit has the fix search's test case")
        check("### fix search from default" in out["md"].read_text(), "Markdown has the fix search")
        html = out["html"].read_text()
        check('id="invariance-fix"' in html and "Invariance fix costs" in html, "HTML has the fix search and its costs")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("the invariance fix search agrees with Python on this machine")
