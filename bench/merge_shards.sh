#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The merge of N shards of the probe suite (default 200): runs `probes --shard K/N` for every K
# (as many at once as there are CPUs; this takes minutes), then times `repro-audit merge` of them
# five times and prints each time and the median. With 200 shards of the suite's 392 cells nearly
# every probe is split across shards, so merge analyses it again: the slowest case.
# usage: bench/merge_shards.sh [N] [REPRO_AUDIT_BINARY] [WORK_FOLDER]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-200}
binary=$(readlink -f "${2:-$here/build/repro-audit}")
work=${3:-$(mktemp -d /tmp/ra-merge.XXXXXX)}
mkdir -p "$work"
if [ ! -f "$work/shard-$n.json" ]; then
  echo "running $n shards of the probe suite into $work ..."
  seq 1 "$n" | xargs -P "$(nproc)" -I{} sh -c \
    "'$binary' --quiet probes --shard {}/$n --report '$work/shard-{}.json' >/dev/null 2>'$work/shard-{}.err'; [ \$? -le 1 ]"
fi
shards=()
for k in $(seq 1 "$n"); do shards+=("$work/shard-$k.json"); done
times=()
for i in 1 2 3 4 5; do
  t0=$(date +%s.%N)
  "$binary" merge "${shards[@]}" --report "$work/merged.json" >/dev/null && rc=0 || rc=$?
  t1=$(date +%s.%N)
  [ "$rc" -le 1 ] || { echo "merge exited $rc" >&2; exit 1; }
  times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')")
done
median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 3p)
echo "merge of $n probe-suite shards ($(du -sh "$work" | cut -f1) with kept tensors): ${times[*]} s; median $median s"
