#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Time to verdict for the whole probe suite (the figure issue 3 sets targets for: at most 120 s
# for the CPU suite on a 2-core build machine; at most 60 s on one H100 for every probe x
# default,det,benchmark,cudnn-det x 3 repeats). Usage: bench/probe_suite.sh BINARY [DEVICE]
# DEVICE defaults to cuda when the binary sees a GPU, else cpu. Each job count is run once and
# reported with the suite's own wall time (from the JSON report's timing section).
set -euo pipefail
bin=${1:?usage: bench/probe_suite.sh BINARY [DEVICE]}
device=${2:-}
if [ -z "$device" ]; then
  device=cpu
  "$bin" env --json | grep -q '"available": true' && device=cuda
fi
if [ "$device" = cuda ]; then configs=default,det,benchmark,cudnn-det; else configs=default,det,threads-1,mkl-cbwr; fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf 'probe suite on %s, configurations %s, 3 repeats, census on\n' "$device" "$configs"
for jobs in 1 2; do
  start=$(date +%s.%N)
  "$bin" probes --quiet --device "$device" --configs "$configs" --repeats 3 --jobs "$jobs" \
    --report "$out/r.json" > "$out/summary.txt" && rc=0 || rc=$?
  end=$(date +%s.%N)
  probes=$(grep -c '"kind": "probe"' "$out/r.json" || true)
  printf '  --jobs %s: %6.1f s wall (command), %s probes, exit %s; %s\n' "$jobs" "$(awk "BEGIN { print $end - $start }")" \
    "$probes" "$rc" "$(tail -n 1 "$out/summary.txt")"
done
