#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What a newcomer waits for, measured from a fresh clone of this repository:
#   1. the tool's build alone, with no compiler cache (CCACHE_DISABLE), on this machine's cores;
#   2. with --with-torch, the whole `./dev audit` with a torch download and install of its own
#      (a fresh REPRO_AUDIT_HOME, pip's and uv's caches off), as on a new machine.
# usage: bench/first_use.sh [--with-torch]      (run from anywhere in the repository)
set -euo pipefail
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
work=$(mktemp -d "${TMPDIR:-/tmp}/repro-audit-first-use.XXXXXX")
trap 'rm -rf "$work"' EXIT
git clone -q "$repo" "$work/clone"
cd "$work/clone"
export CCACHE_DISABLE=1
if [ "${1:-}" = "--with-torch" ]; then
  export REPRO_AUDIT_HOME="$work/home" PIP_NO_CACHE_DIR=1
  start=$(date +%s)
  ./dev audit >"$work/audit.log" 2>&1 || true  # exit 1 means nondeterminism was found, as expected on a CPU
  end=$(date +%s)
  grep -E '^\[dev\] probe suite' "$work/audit.log" || tail -5 "$work/audit.log"
  echo "fresh ./dev audit, torch download included: $((end - start)) s on $(nproc) cores"
else
  ./dev setup >/dev/null
  start=$(date +%s)
  ./dev build >"$work/build.log" 2>&1
  end=$(date +%s)
  echo "fresh build of the tool (no compiler cache): $((end - start)) s on $(nproc) cores"
fi
