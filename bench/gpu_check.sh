#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The device check: what a GPU machine measures of the tool, in one command of at most 8 minutes.
#
# The problem. A GPU is lent rarely, briefly, and without our build: the binaries come from a CPU
# machine, the GPU machine has its own Python with torch (and torchvision) but no network, no
# libspdlog, and none of the build folder's paths.
# The approach. `./dev gpu-pack` packs an install tree (.gpu/pack: cmake --install, the benchmarks,
# the GPU tests, the shared libraries torch does not bring; stripped, at most 64 MiB). This script
# runs from the repository root on the GPU machine and drives only that tree: the front finds its
# worker and share/ in the tree, the GPU tests take REPRO_AUDIT_BINARY, the digest test takes
# REPRO_AUDIT_CUDA_DIGEST. Each step has a time cap and appends to $OUT/log.txt, and every report
# goes to $OUT, so a step that runs out of time leaves the earlier ones' output. Steps that need a
# GPU say SKIP where there is none, so the script also runs (and is checked) on a CPU machine.
# The cost. On an H200 the steps before the probe suite take about 6 minutes (the ResNet-18 audit
# with its fix search 112 s, the GPU tier 61 s, the convolution probes 60 s, exec 54 s); BUDGET
# (seconds, default 465, under 8 minutes with the kill margin) caps the whole, and the probe suite,
# last, gets what is left: one of its two shards (about 65 s each there).
#
# Usage (repository root):  OUT=/some/folder bench/gpu_check.sh [PACK]
#   PACK    the install tree (default .gpu/pack)     PY      the Python with torch (default python3)
#   BUDGET  seconds for all steps (default 465)       OUT     where everything goes (default gpu-out)
#   ONLY    a regex of step names to run (the others are left out): a rerun of what a cap cut
set -u
PACK=$(cd "${1:-.gpu/pack}" 2>/dev/null && pwd) || { echo "gpu_check.sh: no pack at ${1:-.gpu/pack} (./dev gpu-pack makes it)" >&2; exit 2; }
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd); LOG=$OUT/log.txt
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-python3}
T0=$(date +%s); BUDGET=${BUDGET:-465}
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
say() { echo "$*" | tee -a "$LOG"; }
# step NAME CAP COMMAND...: runs COMMAND with a cap (never beyond the budget), output to the log.
step() {
  local name=$1 cap=$2; shift 2; local l; l=$(left)
  [ -n "${ONLY:-}" ] && ! [[ $name =~ ^(${ONLY})$ ]] && return
  [ "$l" -lt 15 ] && { say "== SKIP $name (no time left)"; return; }
  [ "$cap" -gt "$l" ] && cap=$l
  say "== [$(( $(date +%s) - T0 ))s] $name (cap ${cap}s)"
  local s; s=$(date +%s.%N)
  timeout -k 5 "$cap" "$@" >>"$LOG" 2>&1; local rc=$?
  say "== $name rc=$rc wall=$(awk -v a="$(date +%s.%N)" -v b="$s" 'BEGIN{printf "%.1f", a-b}')s"
}
gpu_step() {
  [ -n "${ONLY:-}" ] && ! [[ $1 =~ ^(${ONLY})$ ]] && return
  if [ "$GPU" = 1 ]; then step "$@"; else say "== SKIP $1 (no CUDA device)"; fi
}

TL=$("$PY" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))') ||
  { echo "gpu_check.sh: $PY cannot import torch" >&2; exit 2; }
export LD_LIBRARY_PATH=$TL:$PACK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TMPDIR=${TMPDIR:-/tmp} REPRO_AUDIT_BINARY=$PACK/bin/repro-audit
B=$PACK/bin/repro-audit
LX=$PACK/libexec/repro-audit
GPU=$("$PY" -c 'import torch; print(1 if torch.cuda.is_available() else 0)' 2>/dev/null || echo 0)
WORK=$(mktemp -d "$TMPDIR/ra-gpu-check.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
say "device check: pack $PACK ($(du -sm "$PACK" | cut -f1) MiB), out $OUT, budget ${BUDGET}s, GPU $GPU"

step smi 20 bash -c "nvidia-smi -L || true; $PY -c 'import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())'"
step env 30 "$B" env
"$B" env --json >"$OUT/env.json" 2>/dev/null || true
gpu_step selftest 90 "$B" selftest --device cuda --report "$OUT/selftest.json"
step gpu_digest 60 env REPRO_AUDIT_CUDA_DIGEST="$LX/repro-audit-digest-cuda.so" "$PACK/tests/gpu_tests"
step gpu_probe_tests 90 "$PACK/tests/gpu_probe_tests"
step gpu_env_tests 120 "$PACK/tests/gpu_env_tests"
# Both benchmarks load libtorch_cuda.so themselves, as the worker does (no LD_PRELOAD).
step bench_digest_cuda 60 env REPRO_AUDIT_CUDA_DIGEST="$LX/repro-audit-digest-cuda.so" "$LX/repro-audit-bench" --cuda-only
gpu_step bench_trace_cuda 60 "$LX/repro-audit-bench-trace" cuda 5
step bench 60 "$LX/repro-audit-bench" "$B" "$LX/repro-audit-worker"
# Can the convolution probes' sizes provoke cuDNN's nondeterministic algorithms at all? Under
# benchmark each process times the candidates and keeps the fastest.
# (On the H200, 14 probes under default,benchmark,det did not finish in 60 s; det is measured below.)
gpu_step conv_benchmark 150 "$B" probes --device cuda --only 'conv*' --configs default,benchmark --no-census \
  --quiet --report "$OUT/conv-benchmark.json"
gpu_step resnet18_model 60 "$PY" -c "import torch, torchvision; torch.manual_seed(0); \
torch.jit.script(torchvision.models.resnet18(num_classes=10).eval()).save('$WORK/resnet18.pt'); \
torch.save(torch.randn(8, 3, 64, 64), '$WORK/resnet18.in.pt')"
gpu_step resnet_train 150 "$B" run "$WORK/resnet18.pt" --input "$WORK/resnet18.in.pt" --device cuda --mode train \
  --steps 2 --trace --report "$OUT/resnet18-train-trace.json"
# exec on a small CUDA training script; its --metric takes any token after "loss=", nan included.
cp "$HERE/gpu_train.py" "$WORK/"
# No fix search: each candidate reruns Python and CUDA's start-up, which outlasts the cap.
gpu_step exec_train 120 bash -c "cd '$WORK' && '$B' exec --configs default,det --no-fix-search --artifact out/model.pt \
  --metric 'loss=loss=(\\S+)' --report '$OUT/exec-train.json' -- '$PY' gpu_train.py"
# The probe suite, last, as two shards (each writes its report): what is left of the budget.
for k in 1 2; do
  gpu_step "probes_shard_$k" 300 "$B" probes --device cuda --configs default,det --no-census --shard "$k/2" --quiet \
    --report "$OUT/probes-shard$k.json"
done
say "== done at $(( $(date +%s) - T0 ))s"
