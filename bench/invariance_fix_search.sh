#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The time of invariance's fix search against the first sweep (issue 54, item 8: on `--axis verify`
# the search took 188 of 203 s on a GPT-2, pricing candidates none of which fixed anything; the
# target: at most 3 times the first sweep). A tiny GPT-2 and a tiny Llama from configs (random
# weights), exported by share/export_hf.py with a dynamic batch and sequence and a mask, rows of 32
# tokens, `invariance --axis verify` with its fix search. Printed per model and build:
#   * the whole command's wall time;
#   * the first sweep: the first configuration's worker, from start to result (report: timing.worker_ms);
#   * the fix search: the command's wall time less the first sweep (every build), and the search's
#     own clock where the report has it (fix.timing.search_ms);
#   * the search's share of the wall time, and its time over the first sweep's.
# usage: bench/invariance_fix_search.sh [BUILD_DIR [OTHER_BUILD_DIR]]
#   (default build; with a second build folder, e.g. main's, both are run, one after the other per
#   model, so that the figures share the machine's state; needs the venv's torch and transformers)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILDS=("${1:-build}")
[ $# -ge 2 ] && BUILDS+=("$2")
PY=${REPRO_AUDIT_PYTHON:-${REPRO_AUDIT_HOME:-$HOME/.cache/repro-audit}/venv/bin/python}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$PY" - "$WORK" <<'EOF'
import sys, torch, transformers
work = sys.argv[1]
transformers.logging.set_verbosity_error()
torch.manual_seed(0)
transformers.GPT2LMHeadModel(transformers.GPT2Config(
    n_layer=2, n_head=2, n_embd=64, vocab_size=100, n_positions=64, bos_token_id=0, eos_token_id=0)).save_pretrained(
    f"{work}/gpt2")
transformers.LlamaForCausalLM(transformers.LlamaConfig(
    vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, max_position_embeddings=64)).save_pretrained(f"{work}/llama")
ids = torch.randint(1, 90, (6, 32), generator=torch.Generator().manual_seed(3))
torch.save((ids, torch.ones_like(ids), torch.arange(32).expand(6, 32).contiguous()), f"{work}/rows.pt")
EOF
for model in gpt2 llama; do
  "$PY" share/export_hf.py "$WORK/$model" "$WORK/$model.pt2" --batch-dim dynamic --seq-dim dynamic --mask --seq 32 \
    > /dev/null 2>&1
  for i in "${!BUILDS[@]}"; do
    build=${BUILDS[$i]}
    report="$WORK/$model-$i.json"
    start=$(date +%s%N)
    "$build/repro-audit" -q invariance "$WORK/$model.pt2" --input "$WORK/rows.pt" --axis verify --report "$report" \
      > /dev/null || true
    end=$(date +%s%N)
    "$PY" - "$report" "$model" "$build" $(( (end - start) / 1000000 )) <<'EOF'
import json, sys
report, model, build, wall_ms = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
inv = json.load(open(report))["invariance"]
first = inv["configs"][0]
fix = inv.get("fix") or {}
search = wall_ms - first["timing"]["worker_ms"]
own = (fix.get("timing") or {}).get("search_ms")
ran = [c["toggles"] for c in fix.get("candidates", []) if c["verdict"] != "not run"]
fixes = [c["toggles"] for c in fix.get("candidates", []) if c["fixes"]]
print(f"{model} ({build}): classes {[k['sizes'] for k in first['classes']]}, candidates run: {', '.join(ran) or '-'};"
      f" fixing: {', '.join(fixes) or 'none'}")
print(f"  whole command:  {wall_ms / 1000:7.1f} s")
print(f"  first sweep:    {first['timing']['worker_ms'] / 1000:7.1f} s ({first['timing']['calls']} model calls)")
print(f"  fix search:     {search / 1000:7.1f} s (wall less the first sweep)"
      + (f", {own / 1000:.1f} s by its own clock" if own is not None else ""))
print(f"  share of wall:  {100 * search / wall_ms:7.0f} %;  search / first sweep: {search / first['timing']['worker_ms']:.2f}x")
EOF
  done
done
