#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Peak scratch-folder use of the probe suite (issue 12, defect 10): runs `probes` with TMPDIR on a
# fresh folder and polls its size with du every 0.1 s until the command ends.
# Usage: bench/scratch_peak.sh BINARY [DEVICE]   (DEVICE defaults to cpu)
set -euo pipefail
bin=${1:?usage: bench/scratch_peak.sh BINARY [DEVICE]}
device=${2:-cpu}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/scratch"
TMPDIR="$tmp/scratch" "$bin" probes --quiet --device "$device" --report "$tmp/r.json" > /dev/null 2>&1 &
pid=$!
peak=0
while kill -0 "$pid" 2>/dev/null; do
  # du fails on a file removed while it counts, yet prints its total: take the first line.
  kib=$( (du -sk "$tmp/scratch" 2>/dev/null || true) | head -n 1 | cut -f1)
  [ "${kib:-0}" -gt "$peak" ] && peak=$kib
  sleep 0.1
done
wait "$pid" && rc=0 || rc=$?
printf 'probe suite on %s, default configurations, 3 repeats: scratch peak %d MiB (exit %s)\n' "$device" $((peak / 1024)) "$rc"
