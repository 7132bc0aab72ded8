#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `lint --batch-invariance` agrees with `invariance` on transformer models (issue 43, item 4).
#
# The problem. lint flagged every Linear of a ViT and of GPT-2 as an error (exit 1), though both
# are batch-invariant by Python and by `invariance`: a Linear fed [batch, tokens, hidden]
# multiplies M = tokens × batch rows, never as few as the sizes where the measured GEMM classes
# change. The approach. Each model is exported with a dynamic batch and audited twice: by
# `invariance` (what a row's bits do, measured) and by `lint --batch-invariance` (what the graph
# says). lint must exit 0 with batch findings alone (warnings that name `repro-audit invariance`,
# never errors); each GEMM's M is read from the graph as Python's exported program gives it
# (its input's meta shape), and a token-wise Linear (M = tokens × batch, tokens ≥ 4) is ranked low.
# Where `invariance` finds the model variant, lint's warnings are all the user gets, and the test
# says so. Models: torchvision's VisionTransformer (2 layers, 32×32 images, 5 tokens) and, with
# transformers (./dev test installs it), a GPT-2 from a tiny config at sequence length 16.
#
# usage: test_lint_batch.py BINARY WORK_FOLDER
import json
import os
import pathlib
import shutil
import subprocess
import sys

import torch
import torchvision

binary, work = sys.argv[1], pathlib.Path(sys.argv[2])
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
failures = []
ENV = dict(os.environ, OMP_NUM_THREADS="2")


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def gemm_factors(ep):
    """For each linear/matmul/mm/addmm/conv2d node: the static factor of its rows M when M is that
    factor times the batch symbol, as the exported program's own meta shapes give it."""
    out = {}
    for node in ep.graph.nodes:
        name = getattr(node.target, "__name__", str(node.target))
        if not any(name.startswith(op + ".") for op in ("linear", "matmul", "mm", "addmm", "conv2d")):
            continue
        arg = node.args[1] if name.startswith("addmm") else node.args[0]
        shape = arg.meta["val"].shape
        rows = shape[:1] if name.startswith(("mm", "addmm", "conv2d")) else shape[:-1]
        factor, symbolic = 1, 0
        for s in rows:
            if isinstance(s, int):
                factor *= s
            else:  # a SymInt: its sympy expression, as coefficient × symbols (16*s77)
                coeff, rest = s.node.expr.as_coeff_Mul()
                factor *= int(coeff)
                symbolic += len(rest.free_symbols)
        out[node.name] = (factor, symbolic)
    return out


def audit(name, model, example, rows, input_name):
    model = model.eval()
    ep = torch.export.export(model, example, dynamic_shapes=({0: torch.export.Dim.DYNAMIC},))
    pt2 = work / f"{name}.pt2"
    torch.export.save(ep, str(pt2))
    torch.save(rows, str(work / f"{name}.rows.pt"))
    inv = subprocess.run([binary, "-q", "invariance", str(pt2), "--input", str(work / f"{name}.rows.pt"), "--sizes",
                          "1,2,3,4,8", "--no-fix-search", "--report", str(work / f"{name}.inv.json")],
                         capture_output=True, text=True, env=ENV)
    check(inv.returncode in (0, 1), f"{name}: invariance exit {inv.returncode}: {inv.stderr[-400:]}")
    verdicts = [c["verdict"] for c in json.loads((work / f"{name}.inv.json").read_text())["invariance"]["configs"]] \
        if (work / f"{name}.inv.json").exists() else []
    lint = subprocess.run([binary, "lint", str(pt2), "--batch-invariance", "--json"], capture_output=True, text=True,
                          env=ENV)
    doc = json.loads(lint.stdout) if lint.stdout.strip().startswith("{") else {}
    batch = [f for f in doc.get("findings", []) if f.get("risk") is not None]
    print(f"{name}: invariance {verdicts}; lint exit {lint.returncode}, {len(batch)} batch findings "
          f"({sorted(set(f['severity'] for f in batch))}, risks {sorted(set(f['risk'] for f in batch))})", flush=True)
    check(lint.returncode == 0, f"{name}: lint --batch-invariance exits 0 on batch findings alone ({lint.returncode}): "
                                f"{lint.stderr[-300:]}")
    check(batch and all(f["severity"] in ("warning", "note") for f in batch),
          f"{name}: batch findings are warnings (or notes where M is fixed), never errors")
    check(all(f"repro-audit invariance {pt2}" in f["advice"] for f in batch if f["severity"] == "warning"),
          f"{name}: every warning names `repro-audit invariance` to measure it")
    if verdicts and all(v == "invariant" for v in verdicts):
        print(f"{name}: invariant by `invariance`, and lint fails nothing", flush=True)
    # The rows lint names are the exported program's: each token-wise GEMM's M = k × batch.
    sentences = [r for f in batch for r in f["rows"]]
    text = "\n".join(sentences)
    for node, (factor, symbolic) in gemm_factors(ep).items():
        if symbolic != 1:
            continue
        want = f"M = {factor} × {input_name}.size(0)" if factor != 1 else f"M = {input_name}.size(0)"
        check(want + (" ≥" if factor != 1 else ":") in text, f"{name}: node {node}'s rows are named '{want}'")
        if factor >= 4:
            check(f"low risk: {want} ≥ {factor}: every batch size puts M in the measured class" in text,
                  f"{name}: {want} is ranked low (every batch size in one measured class)")
    return batch


torch.manual_seed(0)
vit = torchvision.models.VisionTransformer(image_size=32, patch_size=16, num_layers=2, num_heads=2, hidden_dim=32,
                                           mlp_dim=64, num_classes=10)
audit("vit", vit, (torch.randn(2, 3, 32, 32),), torch.randn(12, 3, 32, 32), "x")

try:
    import transformers
except ImportError:
    transformers = None
check(transformers is not None, "transformers is installed in the tests' environment (./dev test installs it)")
if transformers is not None:
    config = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=64, n_positions=32)
    gpt2 = transformers.GPT2LMHeadModel(config)
    gpt2.config.use_cache = False

    class Logits(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            return self.m(input_ids=input_ids, use_cache=False).logits

    ids = torch.randint(0, 64, (12, 16))
    audit("gpt2", Logits(gpt2), (ids[:2],), ids, "input_ids")

print(f"{len(failures)} failed" if failures else "lint --batch-invariance agrees with invariance")
sys.exit(1 if failures else 0)
