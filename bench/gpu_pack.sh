#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Packs one build's install tree for a GPU machine that has torch but not our build: `cmake
# --install`, the benchmarks and the GPU tests beside the worker and the digest module (stripped),
# and the shared libraries the binaries load from outside torch's folder and the C runtime
# (libspdlog, libfmt: a GPU image need not have them). Torch itself comes from the GPU machine's
# Python. It builds nothing: `./dev gpu-pack` builds, then packs each torch's tree with this script
# (the 2.11 one at the pack's root, the newest tested release's under torch-<release>/), and the
# device check's dry run (tests/gpu/check_gpu_dry_run.sh) packs the test build's.
# usage: gpu_pack.sh BUILD_DIR PYTHON PACK_DIR   (PYTHON: the environment whose torch the build uses)
set -euo pipefail
build=$1 python=$2 pack=$3
rm -rf "$pack" && mkdir -p "$pack/lib" "$pack/tests"
cmake --install "$build" --prefix "$pack" >/dev/null
libexec=$pack/libexec/repro-audit
cp "$build/repro-audit-bench" "$build/repro-audit-bench-trace" "$libexec/"
cp "$build/tests/gpu_tests" "$build/tests/gpu_probe_tests" "$build/tests/gpu_env_tests" "$pack/tests/"
torch_lib=$("$python" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
for f in "$pack/bin/repro-audit" "$libexec"/* "$pack/tests"/*; do
  [ -f "$f" ] || continue
  LD_LIBRARY_PATH=$torch_lib ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | while read -r lib; do
    case "$lib" in
      "$torch_lib"/*|*/libc.so*|*/libm.so*|*/libutil.so*|*/libdl.so*|*/librt.so*|*/libpthread.so*|*/ld-linux*|*/libstdc++.so*|*/libgcc_s.so*) ;;
      */nvidia/*|*/libcuda.so*|*/libcudart.so*) ;;  # the GPU machine's CUDA, as torch's wheel brings it
      *) cp -nL "$lib" "$pack/lib/" ;;
    esac
  done
done
strip --strip-unneeded "$pack/bin/repro-audit" "$libexec"/* "$pack/tests"/* "$pack/lib"/* 2>/dev/null || true
"$python" -c 'import torch; print(torch.__version__.split("+")[0])' >"$pack/torch-version"
