#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# exec's own cost per run of a command: a seeded, single-threaded training script of about 10 s
# (STEPS matmul steps; adjust for another machine) that writes a 100 MB torch.save checkpoint, run bare and under
# `repro-audit exec`, side by side in ROUNDS rounds. Each round times, in turn:
#   bare   two runs of the script (each writing its checkpoint, then removing it);
#   exec1  `exec --repeats 1` on it;
#   exec3  `exec --repeats 3` on it.
# exec's cost of one more run is (exec3 - exec1) / 2 - bare / 2 (the hook, taking the checkpoint
# into the scratch folder, digesting its bytes, reading stdout); its fixed cost per audit (the
# environment fingerprint, reading the first run's hook report, the report) is what exec1 adds
# beyond one run and that cost. The bare runs remove their checkpoint at once, as exec does with
# a checkpoint equal to one it keeps.
# Prints every round and the medians of the ratios.
#
# `compiled` (issue 32) times the start-up hook alone on a compiled program: a torch.compile'd MLP
# with dropout trained STEPS steps through Inductor's CPU backend, run bare and with the hook
# (PYTHONPATH and REPRO_AUDIT_HOOK_DIR as exec sets them), in turn, ROUNDS rounds, on one Inductor
# cache that untimed runs filled first (so both pay the same cache load, not a compile). The
# hook's cost is the median of (hooked - bare) / bare.
# usage: bench/exec_overhead.sh [ROUNDS] [STEPS] [REPRO_AUDIT_BINARY] [PYTHON]
#        bench/exec_overhead.sh compiled [ROUNDS] [STEPS] [PYTHON]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = compiled ]; then
  rounds=${2:-5}
  steps=${3:-3000}
  python=${4:-$HOME/.cache/repro-audit/venv/bin/python}
  work=$(mktemp -d /tmp/ra-exec-bench.XXXXXX)
  trap 'rm -rf "$work"' EXIT
  cat > "$work/train.py" <<PY
import os, torch
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Dropout(0.1), torch.nn.Linear(512, 256))
step = torch.compile(model)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(64, 256)
for i in range($steps):
    loss = step(x).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if i % 100 == 0:
        print(f"step {i} loss {loss.item():.6f}", flush=True)
torch.save(model.state_dict(), os.path.join(os.environ.get("REPRO_AUDIT_OUT", "."), "model.pt"))
PY
  export TORCHINDUCTOR_CACHE_DIR="$work/cache" REPRO_AUDIT_OUT="$work"
  now() { date +%s.%N; }
  since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
  cd "$work"
  mkdir -p "$work/hook"
  # Fills the cache, untimed, bare and with the hook: the hook's wrappers change the key of
  # AOTAutograd's cache entry (not the compiled code), so a program's first run under exec compiles
  # once more, and later runs hit their own entries. The rounds time that steady state.
  "$python" train.py >/dev/null 2>&1
  PYTHONPATH="$here/share/exec${PYTHONPATH:+:$PYTHONPATH}" REPRO_AUDIT_HOOK_DIR="$work/hook" "$python" train.py >/dev/null 2>&1
  rm -f "$work"/hook/hook-*.json
  ratios=()
  for r in $(seq 1 "$rounds"); do
    t=$(now); "$python" train.py >/dev/null 2>&1; b=$(since "$t")
    t=$(now)
    PYTHONPATH="$here/share/exec${PYTHONPATH:+:$PYTHONPATH}" REPRO_AUDIT_HOOK_DIR="$work/hook" "$python" train.py >/dev/null 2>&1
    h=$(since "$t")
    ls "$work"/hook/hook-*.json >/dev/null  # the hook did report
    rm -f "$work"/hook/hook-*.json
    ratios+=("$(awk -v b="$b" -v h="$h" 'BEGIN { print 100 * (h - b) / b }')")
    awk -v b="$b" -v h="$h" 'BEGIN { printf "round: bare %.2f s, with the hook %.2f s (%+.1f%%)\n", b, h, 100 * (h - b) / b }'
  done
  printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "median over %d rounds: the hook costs %+.1f%% of a compiled program'"'"'s wall time\n", NR, m }'
  exit 0
fi
rounds=${1:-3}
steps=${2:-2200}
binary=$(readlink -f "${3:-$here/build/repro-audit}")
python=${4:-$HOME/.cache/repro-audit/venv/bin/python}
work=$(mktemp -d /tmp/ra-exec-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat > "$work/train.py" <<PY
import os, torch
torch.manual_seed(0)
torch.set_num_threads(1)  # two threads' matmuls differ from run to run on some CPUs (exec finds it)
w = torch.randn(1024, 1024) / 32
x = torch.randn(256, 1024)
for step in range($steps):
    x = torch.tanh(x @ w)
    if step % 50 == 0:
        print(f"step {step} loss {x.square().mean().item():.6f}", flush=True)
state = {"model": {"big": torch.randn(25 * 1024 * 1024)}, "x": x, "step": $steps}
torch.save(state, os.path.join(os.environ.get("REPRO_AUDIT_OUT", "."), "ckpt.pt"))
PY
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
bare=() exec1=() exec3=()
cd "$work"
for r in $(seq 1 "$rounds"); do
  t=$(now)
  for i in 1 2; do REPRO_AUDIT_OUT="$work" "$python" train.py >/dev/null 2>&1; rm -f "$work/ckpt.pt"; done
  b=$(since "$t")
  t=$(now)
  "$binary" --quiet exec --repeats 1 --no-fix-search --metric 'loss=loss ([0-9.]+)' -- "$python" train.py >/dev/null
  e1=$(since "$t")  # exit 0 expected: a divergence (exit 1) would add the worker's reading to the figure
  t=$(now)
  "$binary" --quiet exec --repeats 3 --no-fix-search --metric 'loss=loss ([0-9.]+)' -- "$python" train.py >/dev/null
  e3=$(since "$t")
  bare+=("$b") exec1+=("$e1") exec3+=("$e3")
  awk -v b="$b" -v e1="$e1" -v e3="$e3" 'BEGIN {
    run = b / 2; per = (e3 - e1) / 2 - run; fixed = e1 - run - per
    printf "round: bare run %.2f s; exec --repeats 1 %.2f s, --repeats 3 %.2f s; per run +%.3f s (%.1f%%), fixed %.2f s\n",
           run, e1, e3, per, 100 * per / run, fixed }'
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
pers=() fixeds=()
for i in $(seq 0 $((rounds - 1))); do
  pers+=("$(awk -v b="${bare[$i]}" -v e1="${exec1[$i]}" -v e3="${exec3[$i]}" 'BEGIN { print 100 * ((e3 - e1) / 2 - b / 2) / (b / 2) }')")
  fixeds+=("$(awk -v b="${bare[$i]}" -v e1="${exec1[$i]}" -v e3="${exec3[$i]}" 'BEGIN { print e1 - b / 2 - ((e3 - e1) / 2 - b / 2) }')")
done
echo "median over $rounds rounds: exec's cost per run $(median "${pers[@]}")% of the command's wall time ($(median "${bare[@]}") s for two bare runs); fixed cost per audit $(median "${fixeds[@]}") s"
