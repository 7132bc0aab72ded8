#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `repro-audit invariance --trace` names the op that Python finds batch-variant on this machine. The
# problem: which op gives a row other bits in a batch is a fact of this CPU and its library, so the
# test measures it first: it calls torch.nn.functional.linear and layer_norm on the same rows alone
# and in batches, and the scripted LayerNorm -> Linear -> ReLU model itself, and takes the smallest
# size whose start batch (the anchor first, then the input's next rows, as the tool builds it with
# --rows 1) gives the anchor row other bits. Then the tool, with --trace, must trace that size and
# name the Linear (its module path and its source line in this file) when Python saw the Linear's row
# differ and the LayerNorm's not; a model that flattens the batch before its Linear must stop at the
# reshape and say so; an invariant model has nothing to trace; the answer is in every format, the
# schema and `report`'s re-rendering, and a report without --trace has no trace.
# The cost: three small models, sizes up to 8; well under a minute.
#
# usage: test_invariance_trace.py REPRO_AUDIT_BINARY SOURCE_DIR WORK_FOLDER
import json
import os
import subprocess
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

from model_test import arguments, check, failures, fresh_folder, jit_as_the_worker

binary, source, work = arguments()
fresh_folder(work)
SIZES = [1, 2, 3, 4, 8]
jit_as_the_worker(torch)


class NormLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(64)
        self.proj = nn.Linear(64, 64)

    def forward(self, x):
        return torch.relu(self.proj(self.norm(x)))


class Flattened(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(64)
        self.proj = nn.Linear(64, 64)

    def forward(self, x):
        flat = self.norm(x).reshape(-1)
        return self.proj(flat.view(-1, 64))


class Elementwise(nn.Module):
    def forward(self, x):
        return torch.tanh(x) * 2 + 1


torch.manual_seed(0)
x = torch.randn(16, 64)
rows = work / "rows.pt"
torch.save(x, rows)
models = {}
for name, module in [("norm_linear", NormLinear()), ("flattened", Flattened()), ("elementwise", Elementwise())]:
    models[name] = work / f"{name}.pt"
    torch.jit.script(module.eval()).save(str(models[name]))


def first_variant_size(path):
    """The smallest size whose start batch gives the anchor (row 0) other bits than alone; None if none."""
    m = torch.jit.load(str(path))
    with torch.inference_mode():
        alone = m(x[:1])[0]
        for size in SIZES[1:]:
            if not torch.equal(m(x[:size])[0], alone):
                return size
    return None


def row_differs(f, size):
    with torch.inference_mode():
        return not torch.equal(f(x[:1])[0], f(x[:size])[0])


def audit(name, *extra):
    report = work / f"{name}{'-trace' if '--trace' in extra else ''}.json"
    cmd = [binary, "-q", "invariance", str(models[name]), "--input", str(rows), "--rows", "1", "--sizes",
           ",".join(map(str, SIZES)), "--report", str(report), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    print(f"$ {' '.join(cmd[1:])}\n{p.stdout}{p.stderr}", flush=True)
    rep = json.loads(report.read_text()) if report.exists() else None
    check(rep is not None, f"{name}: a report was written (exit {p.returncode})")
    return p, rep, report


def trace_of(rep):
    return rep["invariance"]["configs"][0].get("trace") if rep else None


# --- the Linear is named, with its module path and source line ------------------------------------
lin = models["norm_linear"]
plin = torch.jit.load(str(lin))
size = first_variant_size(lin)
print(f"python: norm_linear's first variant size {size}", flush=True)
out = {k: work / f"norm_linear.{k}" for k in ("html", "md", "xml")}
p, rep, report = audit("norm_linear", "--trace", "--html", str(out["html"]), "--markdown", str(out["md"]), "--junit",
                       str(out["xml"]))
t = trace_of(rep)
check(t is not None, "norm_linear: --trace puts a trace in the configuration")
if size is None:
    check(t is not None and t["outcome"] == "not-traced", f"norm_linear: no variant size, nothing traced: {t}")
elif t is not None:
    w, b = plin.proj.weight, plin.proj.bias
    linear_varies = row_differs(lambda v: F.linear(v, w, b), size)
    norm_varies = row_differs(lambda v: F.layer_norm(v, (64,), plin.norm.weight, plin.norm.bias), size)
    print(f"python: at size {size} linear's row differs: {linear_varies}, layer_norm's: {norm_varies}", flush=True)
    check(t["size"] == size, f"norm_linear: traced the smallest variant size {size}: {t['size']}")
    check(t["anchor"] == 0 and t["position"] == 0, f"norm_linear: anchor 0 at row 0: {t}")
    if linear_varies and not norm_varies:
        check(t["outcome"] == "found", f"norm_linear: an op found: {t}")
        check(t["op"] in ("aten::linear", "aten::addmm", "aten::mm", "aten::matmul"), f"norm_linear: the Linear: {t}")
        check(t["module"] == "proj", f"norm_linear: module path proj: {t}")
        check("self.proj" in t["source"] or "F.linear" in t["source"],
              f"norm_linear: the source line of self.proj: {t}")
        check(t["inputs"][0] == "float32[1x64]", f"norm_linear: inputs described at batch 1: {t}")
        check(f"in a batch of {size} than alone" in t["message"], f"norm_linear: the message: {t}")
        check(t["op"] in out["md"].read_text() and "trace (found)" in out["md"].read_text(), "markdown has the trace")
        check('data-outcome="found"' in out["html"].read_text(), "html has the trace")
        check(f"; {t['op']} at proj" in out["xml"].read_text(), "the JUnit failure names the op")
        again = subprocess.run([binary, "report", str(report)], capture_output=True, text=True)
        check(f"trace: {t['op']} at proj" in again.stdout, f"`report` re-renders the trace: {again.stdout[-600:]}")
    else:
        print("python: the Linear alone does not explain the difference here; only the outcome is checked")
        check(t["outcome"] in ("found", "stopped", "none"), f"norm_linear: traced: {t}")
v = subprocess.run(["/usr/bin/python3", str(source / "tests/validate_schema.py"),
                    str(source / "share/schema/report-v1.schema.json"), str(work), report.name],
                   capture_output=True, text=True)
check(v.returncode == 0, f"the traced report matches the schema: {(v.stdout + v.stderr)[-400:]}")

# --- the same model as a torch.export archive (run by NativeRT): the Linear's GEMM is named -------
ep = torch.export.export(NormLinear().eval(), (x,), dynamic_shapes=({0: torch.export.Dim("batch")},))
models["exported"] = work / "exported.pt2"
torch.export.save(ep, str(models["exported"]))
em = ep.module()
with torch.inference_mode():
    size = next((m for m in SIZES[1:] if not torch.equal(em(x[:m])[0], em(x[:1])[0])), None)
weight, bias = ep.state_dict["proj.weight"], ep.state_dict["proj.bias"]
print(f"python: the exported model's first variant size {size}", flush=True)
p, rep, _ = audit("exported", "--trace")
t = trace_of(rep)
if t is not None and size is not None and row_differs(lambda v: F.linear(v, weight, bias), size):
    check(t["size"] == size, f"exported: traced size {size}: {t}")
    check(t["outcome"] == "found" and t["op"] in ("aten::linear", "aten::addmm", "aten::mm", "aten::matmul"),
          f"exported: the Linear's op: {t}")

# --- without --trace, no trace --------------------------------------------------------------------
p, rep, _ = audit("norm_linear")
check(rep is not None and "trace" not in rep["invariance"]["configs"][0], "without --trace the report has no trace")

# --- a reshape that merges the batch: the honest stop ---------------------------------------------
size = first_variant_size(models["flattened"])
print(f"python: flattened's first variant size {size}", flush=True)
p, rep, _ = audit("flattened", "--trace")
t = trace_of(rep)
if size is None:
    check(t is not None and t["outcome"] == "not-traced", f"flattened: nothing traced: {t}")
else:
    check(t is not None and t["outcome"] == "stopped", f"flattened: stopped: {t}")
    check(t is not None and t["op"] == "aten::reshape", f"flattened: at the reshape: {t}")
    check(t is not None and "reshape(-1)" in t["source"], f"flattened: the reshape's source line: {t}")
    check(t is not None and t["message"].startswith("batch dimension not followed past aten::reshape")
          and "the first difference is at or after it" in t["message"], f"flattened: the message: {t}")

# --- the batch at dim 1 of the input (--batch-dim 1): said, not traced -----------------------------
class BatchSecond(nn.Module):
    def forward(self, x):
        return torch.tanh(x).transpose(0, 1).contiguous()


models["batch_second"] = work / "batch_second.pt"
torch.jit.script(BatchSecond()).save(str(models["batch_second"]))
torch.save(torch.randn(3, 16, 8), work / "rows_dim1.pt")
rows_dim0 = rows
rows = work / "rows_dim1.pt"
p, rep, _ = audit("batch_second", "--trace", "--batch-dim", "1")
rows = rows_dim0
t = trace_of(rep)
check(t is not None and t["outcome"] == "not-traced" and "--batch-dim" in t["message"], f"batch_second: said: {t}")

# --- an invariant model: nothing to trace ---------------------------------------------------------
p, rep, _ = audit("elementwise", "--trace")
t = trace_of(rep)
check(p.returncode == 0, f"elementwise: invariant, exit 0: {p.returncode}")
check(t is not None and t["outcome"] == "not-traced", f"elementwise: nothing traced: {t}")

print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
