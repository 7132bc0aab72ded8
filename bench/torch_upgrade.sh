#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# "What did this torch upgrade change?", measured on this machine's CPU (docs/TORCH_RELEASES.md):
# the probe census under two builds of repro-audit, each against its own torch, compared; and a
# torchvision ResNet-18 (random weights, scripted once by the OLD torch) saved as a baseline under
# the old build and compared under the new one.
# Each side's float64 referee (the default --referee cpu) keeps its errors in the baselines, so that
# compare says which way each changed tensor moved (toward float64, away, or neither).
# usage: bench/torch_upgrade.sh OLD_BUILD NEW_BUILD OUT_DIR [resnet18]
#   e.g. bench/torch_upgrade.sh build build-torch2.15.0 docs/evidence/cpu-torch-2.11-vs-2.15
#   resnet18: only the ResNet-18 part (the census, 40 s, is left as it was; log.txt gets its lines)
# Each build's own torch is found from its CMake cache (RA_TORCH_PYTHON).
set -uo pipefail
old=$1 new=$2 out=$3 only=${4:-}
mkdir -p "$out"
py() { sed -n 's/^RA_TORCH_PYTHON:FILEPATH=//p' "$1/CMakeCache.txt"; }
ver() { "$(py "$1")" -c 'import torch; print(torch.__version__.split("+")[0])'; }
vo=$(ver "$old") vn=$(ver "$new")
log() { printf '%s\n' "$*" | tee -a "$out/log.txt"; }
[ "$only" = resnet18 ] || : >"$out/log.txt"
log "old: $old (torch $vo), new: $new (torch $vn); $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
binary=$(realpath "$old/repro-audit")
census() {
for b in "$old" "$new"; do
  v=$(ver "$b")
  start=$(date +%s)
  "$b/repro-audit" probes --device cpu --report "$out/probes-$v.json" >"$out/probes-$v.txt" 2>&1
  log "probes under torch $v: exit $?, $(( $(date +%s) - start )) s"
done
( cd "$out" && "$binary" compare "probes-$vo.json" "probes-$vn.json" >compare-probes.txt 2>&1 )
"$old/repro-audit" compare "$out/probes-$vo.json" "$out/probes-$vn.json" --markdown "$out/compare-probes.md" \
  >/dev/null 2>&1
log "compare probes: exit $? (compare-probes.txt, compare-probes.md)"
}
[ "$only" = resnet18 ] || census

# ResNet-18, scripted by the old torch, so that both sides audit the same file.
work=$(mktemp -d)
"$(py "$old")" - "$work/resnet18.pt" <<'PY'
import sys, torch, torchvision
torch.manual_seed(0)
m = torchvision.models.resnet18(weights=None).eval()
torch.jit.trace(m, torch.randn(1, 3, 224, 224)).save(sys.argv[1])
PY
args=(run "$work/resnet18.pt" --shape 2x3x224x224 --configs default,det --repeats 2 --trace)
"$old/repro-audit" "${args[@]}" --save-baseline "$out/resnet18-baseline-$vo.json" >"$out/resnet18-$vo.txt" 2>&1
log "resnet18 under torch $vo: exit $? (baseline saved)"
"$new/repro-audit" "${args[@]}" --baseline "$out/resnet18-baseline-$vo.json" --report "$work/r.json" \
  --save-baseline "$out/resnet18-baseline-$vn.json" >"$out/resnet18-$vn-against-$vo.txt" 2>&1
log "resnet18 under torch $vn against the $vo baseline: exit $? (baseline saved)"
# The two baselines compared as files, as a later compare of two releases would: with each side's
# errors against float64, the direction of every changed tensor.
( cd "$out" && "$binary" compare "resnet18-baseline-$vo.json" "resnet18-baseline-$vn.json" \
  --markdown compare-resnet18.md >compare-resnet18.txt 2>&1 )
log "compare resnet18: exit $? (compare-resnet18.txt, compare-resnet18.md)"
sed -i "s|$work|<dir>|g" "$out"/resnet18-*.txt
rm -rf "$work"
# The census reports are megabytes of JSON (every repeat's digests); kept compressed, 30x smaller
# (gunzip -k them to compare again).
[ "$only" = resnet18 ] || gzip -9f "$out/probes-$vo.json" "$out/probes-$vn.json"
