#!/usr/bin/env bash
# Short device run (issue 31 items 2 and 3 on the merged tree): batched digest correctness, trace
# overhead old vs batched, verdicts with --jobs 4, the full default probe suite with --jobs 4.
set -u
cd "$(dirname "$0")/.."
P=$PWD/.gpu/pack; L=$OUT/log.txt; T0=$(date +%s)
TL=$(python3 -c 'import torch,os;print(os.path.join(os.path.dirname(torch.__file__),"lib"))')
export LD_LIBRARY_PATH=$TL:$P/lib TMPDIR=/tmp REPRO_AUDIT_BINARY=$P/bin/repro-audit
st() { local n=$1 c=$2; shift 2; echo "== [$(( $(date +%s) - T0 ))s] $n (cap ${c}s)" >>$L; local s=$(date +%s.%N)
  timeout -k 3 $c "$@" >>$L 2>&1; local rc=$?
  echo "== $n rc=$rc wall=$(awk -v a="$(date +%s.%N)" -v b="$s" 'BEGIN{printf "%.1f", a-b}')s" >>$L; }
nvidia-smi -L >>$L 2>&1
st gpu_digest 15 env REPRO_AUDIT_CUDA_DIGEST=$P/libexec/repro-audit/repro-audit-digest-cuda.so $P/tests/gpu_tests
st bench_trace_cuda 15 $P/libexec/repro-audit/repro-audit-bench-trace cuda 9
st probes_full_jobs4 70 $P/bin/repro-audit probes --device cuda --jobs 4 --quiet --report $OUT/probes-full-jobs4.json
st gpu_probe_tests 25 $P/tests/gpu_probe_tests
echo "== done $(( $(date +%s) - T0 ))s" >>$L
