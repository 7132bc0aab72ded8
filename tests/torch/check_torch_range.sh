#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The supported torch releases (docs/TORCH_RELEASES.md, cmake/TorchReleases.cmake) are one line, never a
# page of compiler errors, and an untested newer release builds:
#   * CMake configured against a stand-in TorchConfig that only names its version: 2.10.0 stops naming
#     the oldest supported release; 2.16.0 (newer than the newest tested) gets one warning line and
#     configures on (until the stand-in's missing targets stop it);
#   * the pip build (SKBUILD, a stand-in Python whose torch is 2.10.0): the first line of its output
#     is the refusal, with pip's advice, before CMake's own lines;
#   * ./dev refuses an older release, a name that is not a release, or an environment without torch,
#     before it installs or builds anything, and warns in one line for an untested newer one (here
#     before a command that does nothing, so nothing is installed).
# usage: check_torch_range.sh SOURCE_DIR WORK_FOLDER
set -euo pipefail
src=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
fail=0
newest=$(sed -n 's/^set(RA_TORCH_NEWEST_TESTED \([0-9]*\.[0-9]*\).*/\1/p' "$src/cmake/TorchReleases.cmake")
untested="warning: torch 2.16.0 is newer than $newest, the newest release repro-audit is tested with"
for v in 2.10.0 2.16.0; do
  fake=$work/torch-$v/share/cmake/Torch
  mkdir -p "$fake"
  echo 'set(TORCH_FOUND TRUE)' >"$fake/TorchConfig.cmake"
  printf 'set(PACKAGE_VERSION "%s")\nset(PACKAGE_VERSION_COMPATIBLE TRUE)\n' "$v" >"$fake/TorchConfigVersion.cmake"
  cmake -S "$src" -B "$work/build-$v" -G Ninja -DCMAKE_PREFIX_PATH="$work/torch-$v" >"$work/cmake-$v.log" 2>&1 || true
done
if ! grep -q "^repro-audit: torch 2.10.0 is older than 2.11, the oldest release repro-audit supports: .*REPRO_AUDIT_TORCH=" \
     "$work/cmake-2.10.0.log" || grep -q "Generating done" "$work/cmake-2.10.0.log"; then
  echo "FAIL: torch 2.10.0: not one line naming the oldest release, or it configured:"; cat "$work/cmake-2.10.0.log"; fail=1
fi
if ! grep -q "^repro-audit: $untested" "$work/cmake-2.16.0.log" || grep -q "unsupported torch" "$work/cmake-2.16.0.log" ||
   ! grep -q "torch        : 2.16.0" "$work/cmake-2.16.0.log"; then
  echo "FAIL: torch 2.16.0: not one warning line, then on:"; cat "$work/cmake-2.16.0.log"; fail=1
fi
# The pip build's check comes first: before project(), so before CMake's compiler lines.
printf '#!/bin/sh\necho "%s/site-packages/torch;2.10.0"\n' "$work" >"$work/python" && chmod +x "$work/python"
cmake -S "$src" -B "$work/build-pip" -G Ninja -DSKBUILD=ON -DPython_EXECUTABLE="$work/python" >"$work/pip.log" 2>&1 || true
if ! head -n 1 "$work/pip.log" | grep -q "^repro-audit: torch 2.10.0 is older than 2.11, .*: pip install 'torch>=2.11', then pip install --no-build-isolation again$"; then
  echo "FAIL: the pip build's first line is not its refusal with pip's advice:"; cat "$work/pip.log"; fail=1
fi
# ./dev: exit 2 for an older release or not a release, 3 for an environment without torch, with an
# older one, one that hangs, or a path that is none (quoted, whatever it holds); a newer one warns and
# goes on (to `./dev no-such-command`: usage, exit 2, nothing installed).
expect() {
  local code=$1 pattern=$2 command=$3 out rc; shift 3
  out=$(env "$@" "$src/dev" "$command" 2>&1) && rc=0 || rc=$?
  if [ "$rc" != "$code" ] || ! grep -q -- "$pattern" <<<"$out"; then
    echo "FAIL: $* ./dev $command: exit $rc (want $code), said: $out"; fail=1
  fi
}
printf '#!/bin/sh\necho 2.10.0\n' >"$work/old-python" && printf '#!/bin/sh\necho 2.16.0\n' >"$work/new-python"
chmod +x "$work/old-python" "$work/new-python"
expect 2 "supports torch 2.11 and newer" build REPRO_AUDIT_TORCH=2.10.0
expect 3 "has torch 2.10.0: repro-audit supports torch 2.11 and newer" build REPRO_AUDIT_PYTHON="$work/old-python"
expect 2 "^\[dev\] warning: torch 2.16.1 is newer than $newest" no-such-command REPRO_AUDIT_TORCH=2.16.1
expect 2 "^\[dev\] $untested" no-such-command REPRO_AUDIT_PYTHON="$work/new-python"
expect 2 "name a release as MAJOR.MINOR.PATCH" build REPRO_AUDIT_TORCH=latest
expect 3 "cannot import torch there" build REPRO_AUDIT_PYTHON=/bin/true
expect 3 "not an executable python" build REPRO_AUDIT_PYTHON="$work/absent/python"
expect 2 "not both" build REPRO_AUDIT_TORCH=2.15.0 REPRO_AUDIT_PYTHON=/bin/true
# A path holding a newline and an ESC is quoted (printf %q), never printed raw, and stays one line.
odd=$(printf '%s/a\nb\033[31m/python' "$work")
out=$(env REPRO_AUDIT_PYTHON="$odd" "$src/dev" build 2>&1) && rc=0 || rc=$?
if [ "$rc" != 3 ] || [ "$(printf '%s\n' "$out" | wc -l)" != 1 ] || printf '%s' "$out" | grep -q $'\033' ||
  ! grep -qF "REPRO_AUDIT_PYTHON=$(printf %q "$odd"): not an executable python" <<<"$out"; then
  echo "FAIL: a REPRO_AUDIT_PYTHON with a newline and an ESC: exit $rc (want 3), said: $(printf %q "$out")"; fail=1
fi
# A python that never answers is given up after REPRO_AUDIT_PYTHON_TIMEOUT seconds, not waited on.
printf '#!/bin/sh\nexec sleep 600\n' >"$work/hangs" && chmod +x "$work/hangs"
expect 3 "did not answer 'import torch' within 2 s" build REPRO_AUDIT_PYTHON="$work/hangs" REPRO_AUDIT_PYTHON_TIMEOUT=2
expect 2 "REPRO_AUDIT_PYTHON_TIMEOUT=soon: give whole seconds" build REPRO_AUDIT_PYTHON=/bin/true REPRO_AUDIT_PYTHON_TIMEOUT=soon
[ $fail = 0 ] && echo "check_torch_range: an older torch is one line in CMake, pip's build and ./dev; a newer one builds with one"
exit $fail
