#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The language model of the device check (bench/gpu_check.sh), made where transformers is (the build
# machine, by `./dev gpu-pack`; a GPU machine need not have it): a GPT-2 from a tiny config (random
# weights, offline), exported by share/export_hf.py with a dynamic batch and sequence and with
# attention_mask and position_ids, what `run`, `invariance --trace`, `--axis verify` and
# `--pad-others` need; and its rows: 4 prompts of 32 token ids with their mask and positions.
# usage: gpu_models.py OUT_DIR
import pathlib
import subprocess
import sys

import torch
import transformers

out = pathlib.Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
transformers.logging.set_verbosity_error()
torch.manual_seed(0)
gpt2 = transformers.GPT2LMHeadModel(
    transformers.GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=128, n_positions=64, bos_token_id=0,
                            eos_token_id=0))
gpt2.save_pretrained(str(out / "gpt2-config"))
script = pathlib.Path(__file__).resolve().parent.parent / "share" / "export_hf.py"
subprocess.run([sys.executable, str(script), str(out / "gpt2-config"), str(out / "gpt2.pt2"), "--batch-dim", "dynamic",
                "--seq-dim", "dynamic", "--mask", "--seq", "32"], check=True, capture_output=True)
ids = torch.randint(1, 128, (4, 32), generator=torch.Generator().manual_seed(1))
torch.save((ids, torch.ones_like(ids), torch.arange(32).expand(4, 32).contiguous()), str(out / "gpt2_rows.pt"))
for f in (out / "gpt2-config").iterdir():
    f.unlink()
(out / "gpt2-config").rmdir()
print(f"gpu_models.py: {out / 'gpt2.pt2'} ({(out / 'gpt2.pt2').stat().st_size} bytes) and {out / 'gpt2_rows.pt'}")
