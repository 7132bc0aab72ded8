#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A fresh `./dev audit` compiles the torch-free front while the torch wheel installs: it configures
# the build folder with RA_FRONT_ONLY=ON, builds repro-audit, then configures the same folder with
# torch (CMakeLists.txt, `front_while_torch_installs` in dev). That saves time only if the second
# configure leaves every front compile and link command as it was, so that ninja builds none of
# them again. This configures a scratch folder both ways (no compiling) and compares the commands.
# usage: check_front_only.sh SOURCE_DIR TORCH_PYTHON
set -euo pipefail
src=$1 python=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/repro-audit-front-only.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)')
cmake -S "$src" -B "$work/b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRA_FRONT_ONLY=ON >"$work/front.log" 2>&1 ||
  { cat "$work/front.log"; echo "FAIL: the front-only configure failed"; exit 1; }
ninja -C "$work/b" -t commands repro-audit >"$work/front.commands"
grep -q 'repro-audit' "$work/front.commands" || { echo "FAIL: no commands for repro-audit"; exit 1; }
if ninja -C "$work/b" -t targets all | grep -q 'repro-audit-worker'; then
  echo "FAIL: the front-only configure has the worker, which needs torch"; exit 1
fi
cmake -S "$src" -B "$work/b" -DRA_FRONT_ONLY=OFF -DCMAKE_PREFIX_PATH="$prefix" -DRA_TORCH_PYTHON="$python" \
  >"$work/full.log" 2>&1 || { cat "$work/full.log"; echo "FAIL: the configure with torch failed"; exit 1; }
ninja -C "$work/b" -t commands repro-audit >"$work/full.commands"
if ! diff -u "$work/front.commands" "$work/full.commands"; then
  echo "FAIL: configuring with torch changed the front's commands (above): ninja would compile them again"
  exit 1
fi
echo "ok: $(wc -l <"$work/full.commands") commands of the front unchanged by the configure with torch"
