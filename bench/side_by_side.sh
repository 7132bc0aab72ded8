#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runtime of two builds of the tool side by side (a refactor's "must not get slower"): the CPU probe
# suite (`probes --device cpu`, every probe, its default configurations and repeats) and a `run` of a
# scripted torchvision ResNet-18 on 8 images of 3x64x64 (default configurations and repeats), each
# timed with the old build and the new one in turn, ROUNDS rounds, so that both sides of a round see
# the same machine. Prints every round and the median ratio new / old of each. A build whose `run`
# has a float64 referee runs it with --referee off, so that both sides do the same work.
# usage: bench/side_by_side.sh OLD_BUILD_DIR NEW_BUILD_DIR [ROUNDS]   (needs the venv's torch and torchvision)
set -euo pipefail
OLD=${1:?usage: bench/side_by_side.sh OLD_BUILD_DIR NEW_BUILD_DIR [ROUNDS]}
NEW=${2:?usage: bench/side_by_side.sh OLD_BUILD_DIR NEW_BUILD_DIR [ROUNDS]}
ROUNDS=${3:-3}
PY=${REPRO_AUDIT_PYTHON:-${REPRO_AUDIT_HOME:-$HOME/.cache/repro-audit}/venv/bin/python}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$PY" - "$WORK" <<'EOF'
import sys, torch, torchvision
work = sys.argv[1]
torch.manual_seed(0)
torch.jit.script(torchvision.models.resnet18(num_classes=1000).eval()).save(f"{work}/resnet18.pt")
torch.save(torch.randn(8, 3, 64, 64), f"{work}/input.pt")
EOF
# What `run` needs to do the same work in both builds.
run_flags() { "$1/repro-audit" run --help 2>&1 | grep -q -- '--referee' && echo "--referee off" || true; }
timed() {  # wall seconds of one command
  local start end
  start=$(date +%s%N)
  "$@" > /dev/null 2>&1 || true  # exit 1 (nondeterminism found) is what a CPU suite reports
  end=$(date +%s%N)
  echo "scale=3; ($end - $start) / 1000000000" | bc
}
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
old_flags=$(run_flags "$OLD")
new_flags=$(run_flags "$NEW")
probes=() runs=()
for r in $(seq 1 "$ROUNDS"); do
  po=$(timed "$OLD/repro-audit" -q probes --device cpu --report "$WORK/old.json")
  pn=$(timed "$NEW/repro-audit" -q probes --device cpu --report "$WORK/new.json")
  # shellcheck disable=SC2086  # the flags are words
  ro=$(timed "$OLD/repro-audit" -q run "$WORK/resnet18.pt" --input "$WORK/input.pt" $old_flags)
  # shellcheck disable=SC2086
  rn=$(timed "$NEW/repro-audit" -q run "$WORK/resnet18.pt" --input "$WORK/input.pt" $new_flags)
  probes+=("$(echo "scale=3; $pn / $po" | bc)")
  runs+=("$(echo "scale=3; $rn / $ro" | bc)")
  echo "round $r: probes old ${po} s, new ${pn} s; run ResNet-18 old ${ro} s, new ${rn} s"
done
echo "median new/old: probes $(median "${probes[@]}"), run ResNet-18 $(median "${runs[@]}") ($ROUNDS rounds, $(nproc) cores)"
