#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The supported torch range (docs/TORCH_RELEASES.md) is one line, never a page of compiler errors:
# CMake configured against a torch below or above 2.11 <= v < 2.16 (a stand-in TorchConfig that only
# names its version) stops in cmake/Dependencies.cmake naming the range, and ./dev refuses such a
# release, or an environment without torch, before it installs or builds anything.
# usage: check_torch_range.sh SOURCE_DIR WORK_FOLDER
set -euo pipefail
src=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
fail=0
for v in 2.10.0 2.16.0; do
  fake=$work/torch-$v/share/cmake/Torch
  mkdir -p "$fake"
  echo 'set(TORCH_FOUND TRUE)' >"$fake/TorchConfig.cmake"
  printf 'set(PACKAGE_VERSION "%s")\nset(PACKAGE_VERSION_COMPATIBLE TRUE)\n' "$v" >"$fake/TorchConfigVersion.cmake"
  if cmake -S "$src" -B "$work/build-$v" -G Ninja -DCMAKE_PREFIX_PATH="$work/torch-$v" >"$work/cmake-$v.log" 2>&1; then
    echo "FAIL: torch $v configured"; fail=1
  elif ! tr '\n' ' ' <"$work/cmake-$v.log" | tr -s ' ' | grep -q "torch $v at .*supports torch 2.11 <= version < 2.16"; then
    echo "FAIL: torch $v: no line naming the range:"; cat "$work/cmake-$v.log"; fail=1
  fi
done
# ./dev: exit 2 for a release outside the range or not a release, 3 for an environment without torch,
# one that hangs, or a path that is none (quoted, whatever it holds).
expect() {
  local code=$1 pattern=$2 out rc; shift 2
  out=$(env "$@" "$src/dev" build 2>&1) && rc=0 || rc=$?
  if [ "$rc" != "$code" ] || ! grep -q -- "$pattern" <<<"$out"; then
    echo "FAIL: $* ./dev build: exit $rc (want $code), said: $out"; fail=1
  fi
}
expect 2 "supports torch 2.11 <= version < 2.16" REPRO_AUDIT_TORCH=2.10.0
expect 2 "supports torch 2.11 <= version < 2.16" REPRO_AUDIT_TORCH=2.16.1
expect 2 "name a release as MAJOR.MINOR.PATCH" REPRO_AUDIT_TORCH=latest
expect 3 "cannot import torch there" REPRO_AUDIT_PYTHON=/bin/true
expect 3 "not an executable python" REPRO_AUDIT_PYTHON="$work/absent/python"
expect 2 "not both" REPRO_AUDIT_TORCH=2.15.0 REPRO_AUDIT_PYTHON=/bin/true
# A path holding a newline and an ESC is quoted (printf %q), never printed raw, and stays one line.
odd=$(printf '%s/a\nb\033[31m/python' "$work")
out=$(env REPRO_AUDIT_PYTHON="$odd" "$src/dev" build 2>&1) && rc=0 || rc=$?
if [ "$rc" != 3 ] || [ "$(printf '%s\n' "$out" | wc -l)" != 1 ] || printf '%s' "$out" | grep -q $'\033' ||
  ! grep -qF "REPRO_AUDIT_PYTHON=$(printf %q "$odd"): not an executable python" <<<"$out"; then
  echo "FAIL: a REPRO_AUDIT_PYTHON with a newline and an ESC: exit $rc (want 3), said: $(printf %q "$out")"; fail=1
fi
# A python that never answers is given up after REPRO_AUDIT_PYTHON_TIMEOUT seconds, not waited on.
printf '#!/bin/sh\nexec sleep 600\n' >"$work/hangs" && chmod +x "$work/hangs"
expect 3 "did not answer 'import torch' within 2 s" REPRO_AUDIT_PYTHON="$work/hangs" REPRO_AUDIT_PYTHON_TIMEOUT=2
expect 2 "REPRO_AUDIT_PYTHON_TIMEOUT=soon: give whole seconds" REPRO_AUDIT_PYTHON=/bin/true REPRO_AUDIT_PYTHON_TIMEOUT=soon
[ $fail = 0 ] && echo "check_torch_range: the range is one line in CMake and ./dev"
exit $fail
