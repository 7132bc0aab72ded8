#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The device check: what a GPU machine measures of the tool, in one command of at most 8 minutes.
#
# The problem. A GPU is lent rarely, briefly, and without our build: the binaries come from a CPU
# machine, the GPU machine has its own Python with torch (and torchvision) but no network, no
# libspdlog, maybe no transformers, and none of the build folder's paths. When one is lent, every
# path of the tool should be measured in that one go, and a check that is never run between two
# lends rots.
# The approach. `./dev gpu-pack` packs an install tree per torch (.gpu/pack: cmake --install, the
# benchmarks, the GPU tests, the shared libraries torch does not bring; stripped; the newest tested
# release's tree in torch-<release>/) and the language model the steps need (models/: a tiny GPT-2
# exported by share/export_hf.py, and its rows), at most 64 MiB. This script runs from the
# repository root on the GPU machine and drives only that pack: the front finds its worker and
# share/ in the tree, the GPU tests take REPRO_AUDIT_BINARY, the digest test takes
# REPRO_AUDIT_CUDA_DIGEST. Each step has a time cap and appends to $OUT/log.txt, and every report
# goes to $OUT, so a step that runs out of time leaves the earlier ones' output. On a machine
# without a GPU it is a dry run (ctest gpu_check_dry_run, in CI): the steps that need a GPU say
# SKIP, and those that are the front's with --device cuda still run, to show that their command
# line parses (the front refuses cuda only after every option parsed: exit 2); everything else runs.
# A step that fails there says FAIL, and the script exits 1.
# The steps, most wanted first (what the earlier lends already measured comes after what they
# could not: the export interpreter, the serving axes, the referee, another torch's worker):
#   smi, env, selftest --device cuda, the GPU test tier, the CUDA digest and trace benchmarks;
#   models: a scripted and an exported torchvision ResNet-18 and their input;
#   export_resnet18: the export interpreter on CUDA (run, default and det);
#   gpt2_run, gpt2_invariance_trace: the GPT-2 archive's run and invariance --trace on CUDA (cuBLAS's
#     split-K makes real batch variance there; --no-fix-search, for time);
#   gpt2_verify, gpt2_pad_others: invariance --axis verify and --pad-others right on CUDA;
#   referee: the float64 referee on the device (run --referee; SKIP until the tool has it);
#   torch_newest_env, torch_newest_selftest: the newest tested release's worker (the pack's
#     torch-<release>/ tree) with the torch of PY_NEWEST, a Python where that release is installed
#     (SKIP without one: the pack cannot carry torch);
#   resnet_train (--trace), exec_train, conv_benchmark, bench, and the probe suite as two shards.
# The cost. On an H200 (docs/evidence/h200-2026-11-26*): smi 4 s, env 1, selftest 31, GPU tier 61,
# benchmarks 3, models 9 (+5 for the export); the new steps are small models, about 20 to 40 s each
# (CUDA's start-up in every trial is most of it), 150 s together; resnet_train 112 s, exec_train 54
# to 101, conv_benchmark 60, bench 26, each probe-suite shard 65. BUDGET (seconds, default 465,
# under 8 minutes with the kill margin) caps the whole: the steps after about 420 s, the probe suite
# always among them, say SKIP (no time left), and ONLY reruns them on the next lend.
#
# Usage (repository root):  OUT=/some/folder bench/gpu_check.sh [PACK]
#   PACK    the pack (default .gpu/pack)                PY      the Python with torch (default python3)
#   BUDGET  seconds for all steps (default 465)         OUT     where everything goes (default gpu-out)
#   ONLY    a regex of step names to run (the others are left out): a rerun of what a cap cut
#   PY_NEWEST  a Python with the torch of the pack's torch-<release>/ tree, where the machine has one
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
  # Without a GPU (the dry run) a step either works or is a GPU test that skips itself (77).
  [ "$GPU" = 1 ] || [ "$rc" = 0 ] || [ "$rc" = 77 ] || { say "== FAIL $name (rc=$rc, see above)"; FAILED=1; }
}
# gpu_step NAME CAP COMMAND...: a step that needs a GPU. Without one it says SKIP; where COMMAND is
# the front's with --device cuda, it runs it all the same, to check that its command line parses.
gpu_step() {
  [ -n "${ONLY:-}" ] && ! [[ $1 =~ ^(${ONLY})$ ]] && return
  if [ "$GPU" = 1 ]; then step "$@"; return; fi
  local name=$1; shift 2
  if [ "$1" = "$B" ] && [[ " $* " == *" --device cuda "* ]]; then
    local out rc=0; out=$("$@" 2>&1) || rc=$?
    if [ "$rc" = 2 ] && grep -q "no CUDA device" <<<"$out"; then
      say "== SKIP $name (no CUDA device; its command line parses)"
    else
      say "== FAIL $name: without a CUDA device its command line should stop at the device, exit 2: exit $rc: $out"
      FAILED=1
    fi
  else
    say "== SKIP $name (no CUDA device)"
  fi
}
FAILED=0

TL=$("$PY" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))') ||
  { echo "gpu_check.sh: $PY cannot import torch" >&2; exit 2; }
export LD_LIBRARY_PATH=$TL:$PACK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TMPDIR=${TMPDIR:-/tmp} REPRO_AUDIT_BINARY=$PACK/bin/repro-audit
B=$PACK/bin/repro-audit
LX=$PACK/libexec/repro-audit
GPU=$("$PY" -c 'import torch; print(1 if torch.cuda.is_available() else 0)' 2>/dev/null || echo 0)
WORK=$(mktemp -d "$TMPDIR/ra-gpu-check.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
say "device check: pack $PACK ($(du -sm "$PACK" | cut -f1) MiB), out $OUT, budget ${BUDGET}s, GPU $GPU$([ "$GPU" = 1 ] || echo " (a dry run: the GPU steps say SKIP)")"

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
# ResNet-18, scripted and exported (the export interpreter runs the latter), and their input.
step models 90 "$PY" -c "import torch, torchvision; torch.manual_seed(0); \
m = torchvision.models.resnet18(num_classes=10).eval(); x = torch.randn(8, 3, 64, 64); \
torch.jit.script(m).save('$WORK/resnet18.pt'); torch.save(x, '$WORK/resnet18.in.pt'); \
torch.export.save(torch.export.export(m, (x,)), '$WORK/resnet18.pt2')"
# The export interpreter on CUDA: a ResNet-18 archive, and a GPT-2 from export_hf.py (the pack's).
gpu_step export_resnet18 60 "$B" run "$WORK/resnet18.pt2" --input "$WORK/resnet18.in.pt" --device cuda \
  --configs default,det --repeats 2 --report "$OUT/export-resnet18.json"
M=$PACK/models
gpu_step gpt2_run 45 "$B" run "$M/gpt2.pt2" --shape 4x32 --device cuda --configs default,det --repeats 2 \
  --report "$OUT/gpt2-run.json"
gpu_step gpt2_invariance_trace 90 "$B" invariance "$M/gpt2.pt2" --input "$M/gpt2_rows.pt" --rows 2 --device cuda \
  --trace --no-fix-search --report "$OUT/gpt2-invariance-trace.json"
# What serving engines ask, on CUDA: a token at its decode step and inside verify blocks; the other
# rows padded through the attention mask.
gpu_step gpt2_verify 60 "$B" invariance "$M/gpt2.pt2" --input "$M/gpt2_rows.pt" --rows 2 --device cuda --axis verify \
  --no-fix-search --report "$OUT/gpt2-verify.json"
gpu_step gpt2_pad_others 60 "$B" invariance "$M/gpt2.pt2" --input "$M/gpt2_rows.pt" --rows 2 --device cuda \
  --pad-others right --sizes 1,2,3,4,8 --no-fix-search --report "$OUT/gpt2-pad-others.json"
# The float64 referee on the device, once `run --referee` exists (another change adds it).
if "$B" run --help 2>/dev/null | grep -q -- "--referee"; then
  gpu_step referee 60 "$B" run "$WORK/resnet18.pt2" --input "$WORK/resnet18.in.pt" --device cuda --referee device \
    --configs default,det --repeats 2 --report "$OUT/referee.json"
else
  say "== SKIP referee (this build's run has no --referee yet: the float64 referee is measured once it does)"
fi
# The newest tested release's worker, packed beside this one (./dev gpu-pack), with that release's
# torch: a Python of the GPU machine that has it (PY_NEWEST); the pack cannot carry torch itself.
NEWEST=$(ls -d "$PACK"/torch-*/ 2>/dev/null | head -n 1)
if [ -z "$NEWEST" ]; then
  say "== SKIP torch_newest (the pack holds no second torch's tree: ./dev gpu-pack adds the newest tested release's)"
elif [ -z "${PY_NEWEST:-}" ] || [ "$("$PY_NEWEST" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null)" != "$(cat "$NEWEST/torch-version")" ]; then
  say "== SKIP torch_newest (no torch $(cat "$NEWEST/torch-version") here: set PY_NEWEST to a Python that has it)"
else
  TL_NEWEST=$("$PY_NEWEST" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
  NB=${NEWEST%/}/bin/repro-audit
  step torch_newest_env 30 env LD_LIBRARY_PATH="$TL_NEWEST:${NEWEST%/}/lib" "$NB" env
  gpu_step torch_newest_selftest 90 env LD_LIBRARY_PATH="$TL_NEWEST:${NEWEST%/}/lib" "$NB" selftest --device cuda \
    --report "$OUT/selftest-torch-newest.json"
fi
# What the earlier lends measured, again where time is left.
# No fix search: its candidates outlast the cap on this model (112 s with it on the H200).
gpu_step resnet_train 120 "$B" run "$WORK/resnet18.pt" --input "$WORK/resnet18.in.pt" --device cuda --mode train \
  --steps 2 --trace --no-fix-search --report "$OUT/resnet18-train-trace.json"
# exec on a small CUDA training script; its --metric takes any token after "loss=", nan included.
cp "$HERE/gpu_train.py" "$WORK/"
# No fix search: each candidate reruns Python and CUDA's start-up, which outlasts the cap.
gpu_step exec_train 90 bash -c "cd '$WORK' && '$B' exec --configs default,det --no-fix-search --artifact out/model.pt \
  --metric 'loss=loss=(\\S+)' --report '$OUT/exec-train.json' -- '$PY' gpu_train.py"
# Can the convolution probes' sizes provoke cuDNN's nondeterministic algorithms at all? Under
# benchmark each process times the candidates and keeps the fastest.
# (On the H200, 14 probes under default,benchmark,det did not finish in 60 s; det is measured below.)
gpu_step conv_benchmark 60 "$B" probes --device cuda --only 'conv*' --configs default,benchmark --no-census \
  --quiet --report "$OUT/conv-benchmark.json"
step bench 60 "$LX/repro-audit-bench" "$B" "$LX/repro-audit-worker"
# The probe suite, last, as two shards (each writes its report): what is left of the budget.
for k in 1 2; do
  gpu_step "probes_shard_$k" 300 "$B" probes --device cuda --configs default,det --no-census --shard "$k/2" --quiet \
    --report "$OUT/probes-shard$k.json"
done
say "== done at $(( $(date +%s) - T0 ))s$([ "$FAILED" = 0 ] || echo ", with failures")"
exit "$FAILED"
