#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# lint agrees with run on the CPU. The problem: a CI that gates on `lint --strict` for thread-count
# independence passed models whose `run --trace --configs default,threads-1` split at ops lint
# never named (a MobileNetV3 squeeze-excitation conv, a transformer layer's LayerNorm gradients).
# The approach: make two real models as a user would (a scripted torchvision mobilenet_v3_small,
# a scripted nn.TransformerEncoderLayer trained one step), run both through the binary with
# --trace across thread counts, and check that every op the run names (root causes and the ops
# where configurations part) is an op of a knowledge-base entry that lint reported for the same
# model. The cost: small inputs, 2 repeats, about a minute on 2 cores. Needs at least 2 CPUs
# (else default is threads-1 and nothing can part): skipped (77) otherwise.
#
# usage: test_lint_agrees_with_run.py REPRO_AUDIT_BINARY SOURCE_DIR WORK_FOLDER
import json
import os
import subprocess
import sys

from model_test import arguments, check, failures, fresh_folder

binary, source, work = arguments()
if (os.cpu_count() or 1) < 2:
    print("one CPU: default and threads-1 are the same configuration; nothing to compare")
    sys.exit(77)
try:
    import torch
    import torchvision
except ImportError as e:
    print(f"FAIL: {e}: ./dev setup installs torchvision into the venv")
    sys.exit(1)

fresh_folder(work)


torch.manual_seed(0)
torch.jit.script(torchvision.models.mobilenet_v3_small(num_classes=10)).save(work / "mobilenet.pt")
torch.save(torch.randn(2, 3, 64, 64), work / "mobilenet_in.pt")


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                                      batch_first=True)

    def forward(self, x):
        return self.layer(x)


torch.jit.script(Encoder()).save(work / "encoder.pt")
torch.save(torch.randn(4, 10, 32), work / "encoder_in.pt")

entries = {e["id"]: e for e in json.loads((source / "share/knowledge/ops.json").read_text())["entries"]}


def named_ops(node, out):
    """Every op the report names as where runs or configurations part (root_cause_json objects)."""
    if isinstance(node, dict):
        if {"op", "forward_op", "propagated"} <= node.keys():
            out.add((node["op"], node.get("module") or "", node.get("source") or ""))
        for v in node.values():
            named_ops(v, out)
    elif isinstance(node, list):
        for v in node:
            named_ops(v, out)
    return out


for name, mode in (("mobilenet", "infer"), ("encoder", "train")):
    model, inputs, report = work / f"{name}.pt", work / f"{name}_in.pt", work / f"{name}.json"
    extra = ["--mode", "train", "--steps", "1"] if mode == "train" else []
    r = subprocess.run([binary, "run", model, "--input", inputs, *extra, "--trace", "--configs", "default,threads-1",
                        "--repeats", "2", "--no-fix-search", "--report", report], capture_output=True, text=True,
                       timeout=900)
    check(r.returncode in (0, 1), f"{name}: run exit {r.returncode}: {r.stderr[-500:]}")
    if not report.exists():
        continue
    ops = named_ops(json.loads(report.read_text()), set())
    # Two threads against one part these models on every 2-core machine we measured; if a machine
    # parts nowhere, the test has nothing to hold lint to and says so.
    check(ops, f"{name}: run --trace named no op across default and threads-1:\n{r.stdout}")
    lint = subprocess.run([binary, "lint", model, "--mode", mode, "--json"], capture_output=True, text=True, timeout=300)
    check(lint.returncode in (0, 1), f"{name}: lint exit {lint.returncode}: {lint.stderr[-500:]}")
    if lint.returncode not in (0, 1):
        continue
    found = json.loads(lint.stdout)["findings"]
    covered = set()
    for f in found:
        covered.add(f["op"])
        covered.update(entries.get(f.get("entry") or f.get("id") or "", {}).get("ops", []))
    for op, module, where in sorted(ops):
        check(op in covered, f"{name}: run --trace parts at {op} ({module} {where}), which lint --mode {mode} does not "
                             f"name (lint named {sorted({f['op'] for f in found})})")
    print(f"{name}: run named {sorted(ops)}; lint covers {sorted(covered)}", flush=True)

print(f"{len(failures)} failed" if failures else "ok")
sys.exit(1 if failures else 0)
