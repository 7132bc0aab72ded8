#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Both benchmarks load LibTorch's CUDA half the worker's way (worker/runtime/cuda_loader.h): each
# prints "CUDA half: loaded" before measuring, so on a GPU machine they see the device. Skips (77)
# where the torch in use has no libtorch_cuda.so (a CPU-only wheel).
# Usage: check_bench_cuda.sh BENCH BENCH_TRACE TORCH_LIBRARY_DIR
set -u
bench=$1 trace=$2 torch_lib=$3
[ -e "$torch_lib/libtorch_cuda.so" ] || { echo "no libtorch_cuda.so in $torch_lib: skipped"; exit 77; }
fail=0
check() {  # name, expected line, command...
  local name=$1 want=$2; shift 2
  local out; out=$("$@" 2>&1 | head -n 3)
  if grep -qF "$want" <<<"$out"; then echo "ok    $name"; else echo "FAIL  $name: wanted '$want', got: $out"; fail=1; fi
}
check "repro-audit-bench loads the CUDA half" "CUDA half: loaded" "$bench" --cuda-only
check "repro-audit-bench-trace cuda loads the CUDA half" "CUDA half: loaded" "$trace" cuda 3
check "repro-audit-bench-trace cpu does not" "CUDA half: not loaded" "$trace" cpu 3 8
check "REPRO_AUDIT_LOAD_CUDA=1 loads it for cpu too" "CUDA half: loaded" env REPRO_AUDIT_LOAD_CUDA=1 "$trace" cpu 3 8
check "REPRO_AUDIT_LOAD_CUDA=0 keeps repro-audit-bench on the CPU half" "CUDA half: not loaded" env REPRO_AUDIT_LOAD_CUDA=0 "$bench" --cuda-only
exit $fail
