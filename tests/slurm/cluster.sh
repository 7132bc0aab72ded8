#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A real Slurm engine for the shard test: a single-node cluster on loopback (munged, slurmctld and
# slurmd with a generated slurm.conf, every file in a temporary folder, proctrack/linuxproc,
# task/none), an `sbatch --wait --array=0-3` of a probe subset that reads its shard from Slurm's
# variables, `repro-audit merge` of the four shards, and the merged report compared with an
# unsharded run of the same plan. The daemons it started are stopped by their pids.
#
# usage: cluster.sh REPRO_AUDIT_BINARY SOURCE_DIR
#        cluster.sh --bench REPRO_AUDIT_BINARY SOURCE_DIR   (bench/slurm_shards.sh: the whole probe
#        suite unsharded, then as a 4-task array polled every 0.2 s, with each shard's own wall time)
# Exits 77 (skipped) where the Slurm or MUNGE daemons are not installed or it does not run as
# root, except under CI=true, where that fails; a daemon that does not come up fails with its log tail.
set -uo pipefail
bench=0
[ "${1:-}" = --bench ] && { bench=1; shift; }
binary=$(readlink -f "$1")
source_dir=$(readlink -f "$2")

skip() {
  if [ "${CI:-}" = true ]; then echo "FAIL (CI=true, must not skip): $*" >&2; exit 1; fi
  echo "SKIP: $*" >&2; exit 77
}
for tool in munged slurmctld slurmd sbatch sinfo; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (./dev test installs slurmctld, slurmd, slurm-client and munge)"
done
[ "$(id -u)" -eq 0 ] || skip "a throwaway cluster's slurmd runs as root"

work=$(mktemp -d /tmp/ra-slurm.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for log in "$work"/*.log; do [ -f "$log" ] && { echo "--- $(basename "$log") (last lines)" >&2; tail -n 15 "$log" >&2; }; done
  exit 1
}
# The daemon's pid from its pid file, once it has written one (a daemon forks away from us).
wait_pid() {
  for _ in $(seq 100); do
    [ -s "$1" ] && { cat "$1"; return 0; }
    sleep 0.1
  done
  return 1
}

host=$(hostname -s)
# Ports above the usual ones, picked per run, so that a cluster already on this machine is not touched.
base=$((20000 + RANDOM % 20000))
mkdir -p "$work/state" "$work/spool" "$work/runs"
dd if=/dev/urandom of="$work/munge.key" bs=1024 count=1 status=none
chmod 600 "$work/munge.key"
munged --force --key-file="$work/munge.key" --socket="$work/munge.sock" --pid-file="$work/munged.pid" \
  --log-file="$work/munged.log" --seed-file="$work/munge.seed" || fail "munged did not start"
pid=$(wait_pid "$work/munged.pid") || fail "munged wrote no pid file"
pids+=("$pid")

cpus=$(nproc)
cat >"$work/slurm.conf" <<CONF
ClusterName=ra-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge.sock
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/linear
SchedulerType=sched/builtin
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MailProg=/bin/true
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=ra Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
export SLURM_CONF=$work/slurm.conf
started=$(date +%s)
slurmctld -i -f "$SLURM_CONF" || fail "slurmctld did not start"
pid=$(wait_pid "$work/slurmctld.pid") || fail "slurmctld wrote no pid file"
pids+=("$pid")
slurmd -f "$SLURM_CONF" || fail "slurmd did not start"
pid=$(wait_pid "$work/slurmd.pid") || fail "slurmd wrote no pid file"
pids+=("$pid")
up=0
for _ in $(seq 120); do
  state=$(sinfo -h -n "$host" -o %t 2>/dev/null)
  case "$state" in idle*|mix*|alloc*) up=1; break ;; esac
  sleep 0.5
done
[ "$up" = 1 ] || fail "the node did not become idle (sinfo: ${state:-no answer})"
echo "cluster up in $(( $(date +%s) - started )) s on $host, ports $base-$((base + 1))"

if [ "$bench" = 1 ]; then
  now() { date +%s.%N; }
  secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
  cd "$work/runs" || fail "no runs folder"
  t0=$(now)
  "$binary" probes --report whole.json >whole.txt
  t1=$(now)
  echo "probe suite unsharded: $(secs "$t0" "$t1") s"
  mkdir -p shards
  t0=$(now)
  job=$(PATH="$(dirname "$binary"):$PATH" sbatch --parsable "$source_dir/docs/ci/slurm/probes-array.sbatch") ||
    fail "sbatch did not submit"
  while [ -n "$(squeue -h -j "${job%%;*}" 2>/dev/null)" ]; do sleep 0.2; done
  t1=$(now)
  python3 - "$(secs "$t0" "$t1")" shards/shard-{0,1,2,3}.json <<'PY'
import json, sys
total = float(sys.argv[1])
walls = [json.load(open(p))["timing"]["wall_ms"] / 1000 for p in sys.argv[2:]]
print(f"probe suite as 4 Slurm shards (array submitted to last task gone, 0.2 s polling): {total:.1f} s")
print("  each shard's own wall time: " + ", ".join(f"{w:.1f} s" for w in walls) + f" (sum {sum(walls):.1f} s)")
print(f"  scheduler overhead: {total - max(walls):.1f} s over the longest shard, "
      f"{(total - max(walls)) / len(walls):.2f} s per shard")
PY
  t0=$(now)
  "$binary" merge shards/shard-*.json --report merged.json >/dev/null
  rc=$?
  echo "merge of the 4 shards: $(secs "$t0" "$(now)") s (exit $rc)"
  exit 0
fi

probes="sum.threads,dot.threads,matmul.mkl,empty.uninitialized,index_add"
# The documented recipe, run as written (docs/ci/slurm/): a 4-task array and a merge job that
# depends on it, from the results folder, with repro-audit on PATH.
t0=$(date +%s.%N)
(cd "$work/runs" && PATH="$(dirname "$binary"):$PATH" bash "$source_dir/docs/ci/slurm/submit.sh" --only "$probes") \
  >"$work/submit.log" 2>&1
rc=$?
t1=$(date +%s.%N)
grep -q "shards: job array" "$work/submit.log" || fail "sbatch did not submit: $(cat "$work/submit.log")"
for k in 0 1 2 3; do
  [ -f "$work/runs/shards/shard-$k.json" ] ||
    fail "array task $k wrote no shard: $(tail -n 5 "$work/runs/shards/shard-$k.out" 2>/dev/null)"
done
# The merge job exits with the merged report's code: 0 or 1 are results.
[ "$rc" -le 1 ] || fail "the merge job failed (rc $rc): $(tail -n 5 "$work/runs/merge.out" 2>/dev/null)"
echo "4 Slurm shards and the merge: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s wall time from submission"
cp "$work/runs/merge.out" "$work/merged.txt"
cp "$work/runs/probes.json" "$work/merged.json"
(cd "$work/runs" && "$binary" probes --only "$probes" --report "$work/whole.json" >"$work/whole.txt")
python3 - "$work/merged.json" "$work/whole.json" <<'PY' || fail "the merged report differs from the unsharded run"
import json, sys
merged, whole = (json.load(open(p)) for p in sys.argv[1:3])
fleet = merged["fleet"]
assert [s["source"] for s in fleet["shards"]] == ["the Slurm array"] * 4, fleet["shards"]
for d in (merged, whole):
    for k in ("timing", "fleet", "command"):
        d.pop(k, None)
# index_add is racy on the CPU only under load; the reproducible probes must match bit for bit, and
# every probe must have the same verdicts.
def verdicts(d):
    return [(t["name"], [c["verdict"] for c in t["configs"]]) for t in d["targets"]]
assert verdicts(merged) == verdicts(whole), (verdicts(merged), verdicts(whole))
for a, b in zip(merged["targets"], whole["targets"]):
    if a["verdict"] == "reproducible":
        assert a == b, a["name"]
print("merged report equals the unsharded run's (reproducible probes bit for bit, verdicts for all)")
PY
grep -q "merged from 4 shards" "$work/merged.txt" || fail "merge's summary does not say it merged 4 shards"
echo PASS
