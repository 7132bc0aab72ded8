#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/export_interp.sh [BUILD_DIR] [THREADS]: the export interpreter's forward against Python's
# `torch.export.load(p).module()` on two models, side by side on this machine: torchvision ResNet-18
# (1x3x224x224, random weights, eval) and GPT-2 (transformers' GPT2Config defaults, 124M parameters,
# random weights, exported by share/export_hf.py; 1x32 token ids). Each is the median of 20 calls
# after warm-up, in one thread setting, the interpreter and Python timed alternately three times.
# Prints both medians and the ratio interpreter / Python (issue 41: at most 1.10), and the
# interpreter traced as `run --trace` traces it, against untraced (issue 41: no dearer than
# TorchScript's 1.10-1.26). Needs the venv's torch, torchvision and transformers (./dev setup).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
THREADS=${2:-1}
PY=${REPRO_AUDIT_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/repro-audit}/venv/bin/python
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=$THREADS
"$PY" - "$work" <<'PY'
import sys, torch, torchvision, transformers
torch.manual_seed(0)
m = torchvision.models.resnet18().eval()
torch.export.save(torch.export.export(m, (torch.randn(1, 3, 224, 224),)), f"{sys.argv[1]}/resnet18.pt2")
transformers.GPT2LMHeadModel(transformers.GPT2Config()).eval().save_pretrained(f"{sys.argv[1]}/gpt2")
PY
"$PY" share/export_hf.py "$work/gpt2" "$work/gpt2.pt2" --batch 1 --seq 32 2>/dev/null
# py_time MODEL.pt2 SIZES [VOCAB]: Python's median, as the interpreter's is taken
py_time() {
  "$PY" - "$@" <<'PY'
import sys, time, torch
torch.manual_seed(0)
if len(sys.argv) > 3:
    import transformers.modeling_outputs  # defines (so registers) the output type loading needs
m = torch.export.load(sys.argv[1]).module()
sizes = [int(s) for s in sys.argv[2].split("x")]
if len(sys.argv) > 3:
    ids = torch.randint(int(sys.argv[3]), sizes)
    call = lambda: m(input_ids=ids)
else:
    x = torch.randn(sizes)
    call = lambda: m(x)
for _ in range(2): call()
ms = []
for _ in range(20):
    t = time.perf_counter(); call(); ms.append((time.perf_counter() - t) * 1000)
print(f"{sorted(ms)[len(ms) // 2]:.3f}")
PY
}
[ -x "$BUILD/repro-audit-bench-export" ] || cmake --build "$BUILD" --target repro-audit-bench-export >/dev/null
med() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
# compare NAME MODEL.pt2 SIZES [VOCAB]
compare() {
  local name=$1 interp=() traced=() python=() pair
  shift
  for _ in 1 2 3; do
    pair=$("$BUILD/repro-audit-bench-export" "$1" "$2" 20 ${3:-})
    interp+=("${pair% *}") traced+=("${pair#* }")
    python+=("$(py_time "$@")")
  done
  local i t p
  i=$(med "${interp[@]}") t=$(med "${traced[@]}") p=$(med "${python[@]}")
  echo "$name forward, $2, $THREADS thread(s): interpreter $i ms, Python module() $p ms, ratio $(awk -v a="$i" -v b="$p" 'BEGIN{printf "%.3f", a/b}');" \
    "traced $t ms, trace overhead $(awk -v a="$t" -v b="$i" 'BEGIN{printf "%.3f", a/b}')"
}
compare ResNet-18 "$work/resnet18.pt2" 1x3x224x224
compare GPT-2 "$work/gpt2.pt2" 1x32 50257
