#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The cost of `repro-audit invariance` against the forward passes it needs (issue 30's target: at
# most 2x on the CPU). A scripted torchvision ResNet-18 on 64x64 inputs, the whole default sweep up
# to a batch of 64 (--sizes auto --budget 64: 1..9, 15..17, 31..33, 63, 64, then the bisection).
# Printed side by side, from one run:
#   * the command's wall time (front, worker start, model load, sweep, report);
#   * the model's calls alone as the worker timed them (report: timing.forward_ms);
#   * the same calls made again here in Python on the scripted model (one call per cell and anchor
#     group, each batch of its cell's size), as a user's own harness would make them;
#   * the ratios of the wall time to each.
# usage: bench/invariance_overhead.sh [BUILD_DIR]   (default build; needs the venv's torch and torchvision)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
PY=${REPRO_AUDIT_PYTHON:-${REPRO_AUDIT_HOME:-$HOME/.cache/repro-audit}/venv/bin/python}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$PY" - "$WORK" <<'EOF'
import sys, torch, torchvision
work = sys.argv[1]
torch.manual_seed(0)
torch.jit.script(torchvision.models.resnet18(num_classes=1000).eval()).save(f"{work}/resnet18.pt")
torch.save(torch.randn(16, 3, 64, 64), f"{work}/rows.pt")
EOF
start=$(date +%s%N)
"$BUILD/repro-audit" -q invariance "$WORK/resnet18.pt" --input "$WORK/rows.pt" --budget 64 --report "$WORK/report.json" \
  > "$WORK/summary.txt" || true
end=$(date +%s%N)
"$PY" - "$WORK" $(( (end - start) / 1000000 )) <<'EOF'
import json, sys, time, torch
work, wall_ms = sys.argv[1], float(sys.argv[2])
rep = json.load(open(f"{work}/report.json"))
cfg = rep["invariance"]["configs"][0]
rows = rep["invariance"]["rows"]
torch._C._jit_set_profiling_executor(False)
torch._C._set_graph_executor_optimize(False)
m = torch.jit.load(f"{work}/resnet18.pt").eval()
x = torch.load(f"{work}/rows.pt")
calls = []
for cell in cfg["cells"]:
    n = cell["size"]
    anchors = len({r["anchor"] for r in cell["rows"]})
    calls += [n] * -(-anchors // min(rows, n))  # one call per group of anchors that fits a batch
idx = {n: torch.arange(n) % x.shape[0] for n in set(calls)}
with torch.inference_mode():
    m(x[:1])
    t0 = time.perf_counter()
    for n in calls:
        m(x[idx[n]])
    python_ms = (time.perf_counter() - t0) * 1000
t = cfg["timing"]
sizes = sorted({c["size"] for c in cfg["cells"]})
print(f"sizes tried: {len(sizes)} ({sizes[0]}..{sizes[-1]}), calls: {t['calls']} (Python: {len(calls)})")
print(f"classes: {[c['sizes'] for c in cfg['classes']]}")
print(f"whole command wall time:       {wall_ms:8.0f} ms")
print(f"forward passes (worker-timed): {t['forward_ms']:8.0f} ms   ratio {wall_ms / t['forward_ms']:.2f}x")
print(f"forward passes (Python):       {python_ms:8.0f} ms   ratio {wall_ms / python_ms:.2f}x")
print(f"sweep in the worker:           {t['sweep_ms']:8.0f} ms   (sweep / forward {t['sweep_ms'] / t['forward_ms']:.2f}x)")
EOF
