#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The read time of a report whose "environment" object holds 10^4, 10^5 and 10^6 keys (issue 39:
# 200,000 keys took 72 s when objects were built by a linear search per key). Makes a genuine
# report with `run` on a tiny model (the venv's python writes it), adds the keys with python3, then
# times `repro-audit report FILE --json` with /usr/bin/time (wall seconds and peak memory), each
# size LIMIT seconds at most (default 900). The ratios between sizes should stay near 10.
# usage: bench/json_read.sh [REPRO_AUDIT_BINARY] [WORK_FOLDER] [LIMIT]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
binary=$(readlink -f "${1:-$here/build/repro-audit}")
work=${2:-$(mktemp -d /tmp/ra-json-read.XXXXXX)}
limit=${3:-900}
python=${RA_TORCH_PYTHON:-${XDG_CACHE_HOME:-$HOME/.cache}/repro-audit/venv/bin/python}
mkdir -p "$work"
if [ ! -f "$work/base.json" ]; then
  "$python" -c "import torch, sys; torch.jit.script(torch.nn.Linear(3, 2)).save(sys.argv[1])" "$work/m.pt"
  "$binary" --quiet run "$work/m.pt" --shape 2x3 --configs default --repeats 2 --report "$work/base.json" >/dev/null
fi
for n in 10000 100000 1000000; do
  file="$work/wide-$n.json"
  [ -f "$file" ] || python3 - "$work/base.json" "$file" "$n" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]), object_pairs_hook=dict)
report["environment"].update({f"k{i}": i for i in range(int(sys.argv[3]))})
json.dump(report, open(sys.argv[2], "w"))
EOF
  if /usr/bin/time -o "$work/time" -f "%e %M" timeout "$limit" "$binary" report "$file" --json >/dev/null 2>"$work/err"; then
    read -r secs kb <"$work/time"
    echo "$n keys ($(du -h "$file" | cut -f1)): $secs s, peak $((kb / 1024)) MiB"
  else
    echo "$n keys ($(du -h "$file" | cut -f1)): not read within $limit s, or refused: $(tail -1 "$work/err")"
  fi
done
