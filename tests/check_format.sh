#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The format test: every C++ source of the product, its tests and benchmarks is as clang-format
# (.clang-format at the top) writes it. `./dev format` applies the format.
# usage: check_format.sh SOURCE_DIR [CLANG_FORMAT]
set -euo pipefail
cd "$1"
tool=${2:-clang-format}
command -v "$tool" >/dev/null || { echo "check_format: $tool not found (Debian package clang-format)"; exit 1; }
mapfile -t files < <(git ls-files -- '*.h' '*.cpp' '*.cu' ':!:tests/fuzz/corpus/*' 2>/dev/null ||
                     find audit cli reports worker tests bench -name '*.h' -o -name '*.cpp' -o -name '*.cu')
bad=()
for f in "${files[@]}"; do
  "$tool" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  printf 'not formatted (run ./dev format): %s\n' "${bad[@]}"
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
