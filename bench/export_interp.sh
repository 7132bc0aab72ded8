#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/export_interp.sh [BUILD_DIR] [THREADS]: the export interpreter's forward against Python's
# `torch.export.load(p).module()(x)` on torchvision ResNet-18 (1x3x224x224, random weights, eval), side
# by side on this machine: both the median of 20 calls after warm-up, in one thread setting, the two
# timed alternately three times. Prints both medians and the ratio interpreter / Python (issue 41:
# at most 1.10). Needs the venv's torch and torchvision (./dev setup).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
THREADS=${2:-1}
PY=${REPRO_AUDIT_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/repro-audit}/venv/bin/python
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=$THREADS
"$PY" - "$work" <<'PY'
import sys, torch, torchvision
torch.manual_seed(0)
m = torchvision.models.resnet18().eval()
torch.export.save(torch.export.export(m, (torch.randn(1, 3, 224, 224),)), f"{sys.argv[1]}/resnet18.pt2")
PY
py_time() {
  "$PY" - "$work/resnet18.pt2" <<'PY'
import sys, time, torch
torch.manual_seed(0)
m = torch.export.load(sys.argv[1]).module()
x = torch.randn(1, 3, 224, 224)
for _ in range(2): m(x)
ms = []
for _ in range(20):
    t = time.perf_counter(); m(x); ms.append((time.perf_counter() - t) * 1000)
print(f"{sorted(ms)[len(ms) // 2]:.3f}")
PY
}
[ -x "$BUILD/repro-audit-bench-export" ] || cmake --build "$BUILD" --target repro-audit-bench-export >/dev/null
interp=() python=()
for _ in 1 2 3; do
  interp+=("$("$BUILD/repro-audit-bench-export" "$work/resnet18.pt2" 1x3x224x224 20)")
  python+=("$(py_time)")
done
med() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
i=$(med "${interp[@]}") p=$(med "${python[@]}")
echo "ResNet-18 forward, 1x3x224x224, $THREADS thread(s): interpreter $i ms, Python module() $p ms, ratio $(awk -v a="$i" -v b="$p" 'BEGIN{printf "%.3f", a/b}')"
