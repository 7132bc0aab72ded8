#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Time to verdict for the whole probe suite (the figure issue 3 sets targets for: at most 120 s
# for the CPU suite on a 2-core build machine; issue 31: at most 60 s on one H200 for the default
# CUDA plan, every probe x default,det,benchmark,cudnn-det x 3 repeats + census).
# Usage: bench/probe_suite.sh BINARY [DEVICE] [JOBS...]
# DEVICE defaults to cuda when the binary sees a GPU, else cpu; JOBS (default: 1 4 on cuda, 1 2 on
# cpu) are the --jobs values, each run once in this one invocation, so that before (--jobs 1) and
# after (--jobs 4: children sharing the GPU) come from the same machine. For each: the command's
# wall time, the probe count, the exit code, the summary's last line, the contention note, and
# (from -v) the children's median start-up and wall time. The verdicts of the runs are compared:
# a probe x configuration whose verdict differs between job counts is listed.
set -euo pipefail
bin=${1:?usage: bench/probe_suite.sh BINARY [DEVICE] [JOBS...]}
device=${2:-}
shift $(( $# >= 2 ? 2 : 1 ))
if [ -z "$device" ]; then
  device=cpu
  "$bin" env --json | grep -q '"available": true' && device=cuda
fi
jobs_list=("$@")
if [ ${#jobs_list[@]} -eq 0 ]; then
  if [ "$device" = cuda ]; then jobs_list=(1 4); else jobs_list=(1 2); fi
fi
if [ "$device" = cuda ]; then configs=default,det,benchmark,cudnn-det; else configs=default,det,threads-1,mkl-cbwr; fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf 'probe suite on %s, configurations %s, 3 repeats, census on\n' "$device" "$configs"
for jobs in "${jobs_list[@]}"; do
  start=$(date +%s.%N)
  "$bin" -v probes --device "$device" --configs "$configs" --repeats 3 --jobs "$jobs" \
    --report "$out/r$jobs.json" > "$out/summary.txt" 2> "$out/debug$jobs.txt" && rc=0 || rc=$?
  end=$(date +%s.%N)
  probes=$(grep -c '"kind": "probe"' "$out/r$jobs.json" || true)
  printf '  --jobs %s: %6.1f s wall (command), %s probes, exit %s; %s\n' "$jobs" "$(awk "BEGIN { print $end - $start }")" \
    "$probes" "$rc" "$(tail -n 1 "$out/summary.txt")"
  grep '^note: up to' "$out/summary.txt" | sed 's/^/    /' || true
  # "child det repeat 0 (97 probes): 5123 ms, of which start-up 1234 ms"
  lines=$(grep -o 'child .*: [0-9]* ms, of which start-up [0-9]* ms' "$out/debug$jobs.txt" || true)
  if [ -n "$lines" ]; then
    n=$(printf '%s\n' "$lines" | wc -l)
    wall=$(printf '%s\n' "$lines" | sed 's/.*: \([0-9]*\) ms, of which.*/\1/' | sort -n | sed -n "$(( (n + 1) / 2 ))p")
    up=$(printf '%s\n' "$lines" | sed 's/.*start-up \([0-9]*\) ms/\1/' | sort -n | sed -n "$(( (n + 1) / 2 ))p")
    printf '    %s children: median %s ms each, of which start-up %s ms\n' "$n" "$wall" "$up"
  fi
done
# Same verdicts whatever the job count (the report's targets, name x configuration -> verdict).
if command -v python3 > /dev/null && [ ${#jobs_list[@]} -gt 1 ]; then
  python3 - "$out" "${jobs_list[@]}" <<'PY'
import json, sys
out, jobs = sys.argv[1], sys.argv[2:]
def verdicts(j):
    r = json.load(open(f"{out}/r{j}.json"))
    return {(t["name"], c["name"]): c["verdict"] for t in r["targets"] for c in t["configs"]}
first = verdicts(jobs[0])
for j in jobs[1:]:
    other = verdicts(j)
    differ = sorted(k for k in first if other.get(k) != first[k])
    print(f"  verdicts --jobs {jobs[0]} vs --jobs {j}: {len(first) - len(differ)} of {len(first)} the same")
    for name, config in differ[:20]:
        print(f"    {name} / {config}: {first[(name, config)]} vs {other.get((name, config))}")
PY
fi
