#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The cost of run's float64 referee (issue 53's target: a ResNet-18 `run` with it at most 1.3x the
# wall time without it). A scripted torchvision ResNet-18 (1000 classes) on a batch of BATCH 3x224x224
# images (SIZE x SIZE), `run` with its default configurations and repeats, timed with the referee (the default,
# --referee cpu: one more child that runs the model once in float64, one thread, and every trial
# measuring its tensors against it) and with --referee off, in turn, ROUNDS rounds. Prints every
# round and the median ratio (with / without).
# usage: bench/referee_overhead.sh [ROUNDS] [BATCH] [SIZE] [BUILD_DIR]   (needs the venv's torch and torchvision)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
BATCH=${2:-8}
SIZE=${3:-224}
BUILD=${4:-build}
PY=${REPRO_AUDIT_PYTHON:-${REPRO_AUDIT_HOME:-$HOME/.cache/repro-audit}/venv/bin/python}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$PY" - "$WORK" "$BATCH" "$SIZE" <<'EOF'
import sys, torch, torchvision
work, batch, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.manual_seed(0)
torch.jit.script(torchvision.models.resnet18(num_classes=1000).eval()).save(f"{work}/resnet18.pt")
torch.save(torch.randn(batch, 3, size, size), f"{work}/input.pt")
EOF
timed() {  # wall seconds of one run
  local start end
  start=$(date +%s%N)
  "$BUILD/repro-audit" -q run "$WORK/resnet18.pt" --input "$WORK/input.pt" "$@" > /dev/null || true
  end=$(date +%s%N)
  echo "scale=3; ($end - $start) / 1000000000" | bc
}
ratios=()
for r in $(seq 1 "$ROUNDS"); do
  with=$(timed)
  without=$(timed --referee off)
  ratio=$(echo "scale=3; $with / $without" | bc)
  ratios+=("$ratio")
  echo "round $r: with referee ${with} s, --referee off ${without} s, ratio ${ratio}"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')
echo "ResNet-18 run, batch $BATCH at ${SIZE}x${SIZE}, $(nproc) CPUs: median ratio with/without the referee ${median}x over $ROUNDS rounds"
