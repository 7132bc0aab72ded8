#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The device check cannot rot between two GPU lends: bench/gpu_check.sh runs here, on the CPU, as a
# dry run. Checked:
#   * the syntax of the check, the pack script and ./dev (bash -n);
#   * the pack: this build's tree (bench/gpu_pack.sh) and the check's model (bench/gpu_models.py);
#     what ./dev gpu-pack makes holds also the newest tested release's tree, built against another
#     torch and of about the same size, so twice this tree plus the model must stay within 64 MiB;
#   * the check itself: exit 0; every step of its list appears; the steps that need no GPU ran
#     (rc 0, or 77 for a GPU test that skips itself); the GPU steps say SKIP, and those that are the
#     front's with --device cuda show that their command line parses; no FAIL line.
# It prints the time of the pack and of the check (docs/evidence/README.md quotes them).
# usage: check_gpu_dry_run.sh SOURCE_DIR BUILD_DIR PYTHON WORK_FOLDER
set -euo pipefail
src=$1 build=$2 py=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
fail=0
for f in bench/gpu_check.sh bench/gpu_pack.sh dev; do
  bash -n "$src/$f" || { echo "FAIL: $f does not parse"; fail=1; }
done
t0=$(date +%s)
"$src/bench/gpu_pack.sh" "$build" "$py" "$work/pack"
"$py" "$src/bench/gpu_models.py" "$work/pack/models" >/dev/null
t1=$(date +%s)
tree=$(du -sb --exclude=models "$work/pack" | cut -f1)
models=$(du -sb "$work/pack/models" | cut -f1)
echo "pack: this tree $((tree / 1024)) KiB, the model $((models / 1024)) KiB; with a second tree about" \
     "$(((2 * tree + models) / 1024 / 1024)) MiB of 64; packed in $((t1 - t0)) s"
[ $((2 * tree + models)) -le $((64 * 1024 * 1024)) ] || { echo "FAIL: the pack would be above 64 MiB"; fail=1; }
rc=0
(cd "$src" && OUT="$work/out" PY="$py" BUDGET=1800 bench/gpu_check.sh "$work/pack") >"$work/check.txt" 2>&1 || rc=$?
t2=$(date +%s)
log=$work/out/log.txt
echo "dry run: exit $rc in $((t2 - t1)) s"
grep '^== ' "$log" || true
[ "$rc" = 0 ] || { echo "FAIL: the dry run exits $rc"; fail=1; }
if grep -q '^== FAIL' "$log"; then echo "FAIL: a step failed (above)"; fail=1; fi
ran=(smi env gpu_digest gpu_probe_tests gpu_env_tests bench_digest_cuda models bench)
parsed=(selftest export_resnet18 gpt2_run gpt2_invariance_trace gpt2_verify gpt2_pad_others resnet_train
        conv_benchmark probes_shard_1 probes_shard_2)
skipped=(bench_trace_cuda exec_train referee torch_newest)
for s in "${ran[@]}"; do
  grep -Eq "^== $s rc=(0|77) " "$log" || { echo "FAIL: step $s did not run to rc 0 (or 77)"; fail=1; }
done
for s in "${parsed[@]}"; do
  grep -q "^== SKIP $s (no CUDA device; its command line parses)" "$log" ||
    { echo "FAIL: GPU step $s: no SKIP showing its command line parses"; fail=1; }
done
for s in "${skipped[@]}"; do
  grep -q "^== SKIP $s (" "$log" || { echo "FAIL: step $s: no SKIP line"; fail=1; }
done
# Every step the script names is one of the lists above: a new step needs its line here too.
named=$(grep -oE '^\s*(gpu_)?step [a-z_0-9"$]+' "$src/bench/gpu_check.sh" | awk '{print $2}' | tr -d '"' | sort -u)
for s in $named; do
  case " ${ran[*]} ${parsed[*]} ${skipped[*]} torch_newest_env torch_newest_selftest probes_shard_\$k " in
    *" $s "*) ;;
    *) echo "FAIL: bench/gpu_check.sh has a step $s that this test does not list"; fail=1 ;;
  esac
done
[ $fail = 0 ] && echo "gpu_check_dry_run: every step ran or said SKIP; the pack fits"
exit $fail
