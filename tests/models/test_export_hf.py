#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# A language model in one step: a Hugging Face GPT-2 and a Llama-style model, built from tiny
# configs (random weights, offline), exported by share/export_hf.py, run by the tool's interpreter:
#   * every output equals `torch.export.load(p).module()(input_ids=ids)` bit for bit (Python's
#     outputs saved in a TorchScript module that returns them, both files run on the same --input,
#     one thread each, as tests/models/test_export_interp.py does), at the exported batch and, for
#     the dynamic batch, at another;
#   * the report names the output after the model's output field (output/logits), not by position;
#   * --shape 2x8 without a dtype makes int64 token ids (the signature's dtype) below the embedding's
#     rows (read from the graph); --vocab N sets the range; a --vocab past the embedding is one line,
#     exit 2; a size unlike the exported one is one line, exit 3;
#   * `--mode train --steps 2` trains the program: each step's loss and gradients and the final
#     parameters are those of Python's module() trained with torch.optim.SGD, bit for bit;
#   * the script works on the newest transformers it is tested with (the venv's) and on the oldest it
#     supports (a folder put first on PYTHONPATH), also where the hub's `kernels` package cannot be
#     imported (the newest turns hub kernels on by default); a release older than the oldest is one
#     line, exit 3, and one newer than the newest tested a one-line warning.
# transformers comes from ./dev's test packages (both releases): without them the test fails, it does
# not skip.
#
# usage: test_export_hf.py REPRO_AUDIT_BINARY SOURCE_DIR WORK_FOLDER
import json
import os
import pathlib
import re
import subprocess
import sys
from typing import Optional

from model_test import (arguments, check, differing_bits, failures, fresh_folder, jit_as_the_worker, kept_tensors,
                        trained_in_python)

binary, source, work = arguments()
try:
    import torch
    import torch.nn as nn
    import transformers
except ImportError as e:
    print(f"FAIL: {e}: ./dev setup installs transformers into the venv (a test package)")
    sys.exit(1)

fresh_folder(work)
jit_as_the_worker(torch)
torch.set_num_threads(1)
ENV = dict(os.environ, OMP_NUM_THREADS="1")
transformers.logging.set_verbosity_error()


def run_tool(model, name, *extra):
    report = work / f"{name}.json"
    cmd = [binary, "run", str(model), "--repeats", "2", "--configs", "default", "--report", str(report), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    return p, (json.loads(report.read_text()) if report.exists() else None)


def outputs(doc):
    """The outputs of the report's first configuration, in order: [(name, dtype, shape, digest)]."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            if "reference_digests" in node and not found:
                found.extend((t["name"], t["dtype"], tuple(t["shape"]), t["digest"]) for t in node["reference_digests"]
                             if t["name"] == "output" or t["name"].startswith("output/"))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc)
    return found


class Returns(nn.Module):
    """Returns the tensors it holds, whatever its input: Python's outputs as TorchScript."""
    outs: list[torch.Tensor]

    def __init__(self, tensors):
        super().__init__()
        self.outs = [t.detach().clone() for t in tensors]

    def forward(self, input_ids: Optional[torch.Tensor] = None) -> list[torch.Tensor]:
        return self.outs


SCRIPT = source / "share" / "export_hf.py"
# The releases the script names (its constants, which ./dev reads to install them).
RELEASES = dict(re.findall(r'^TRANSFORMERS_(OLDEST|NEWEST) = "([^"]+)"$', SCRIPT.read_text(), re.M))
OLDEST = pathlib.Path(sys.prefix) / f"transformers-{RELEASES['OLDEST']}"
check(transformers.__version__ == RELEASES["NEWEST"],
      f"the venv's transformers is {transformers.__version__}, not the newest tested {RELEASES['NEWEST']}: "
      f"./dev test installs it")
check((OLDEST / "transformers").is_dir(), f"{OLDEST}: the oldest transformers is missing: ./dev test installs it")
# The script run as __main__ in a Python where `import kernels` fails, as in a venv without the hub's
# kernels package (where the newest release, which turns hub kernels on by default, refused to load).
WITHOUT_KERNELS = ("import runpy, sys; sys.modules['kernels'] = None; sys.argv = sys.argv[1:]; "
                   "runpy.run_path(sys.argv[0], run_name='__main__')")


def export_hf(name, model, *options, python_path=None, without_kernels=False):
    folder = work / name
    model.save_pretrained(str(folder))
    pt2 = work / f"{name}.pt2"
    env = dict(ENV, PYTHONPATH=str(python_path)) if python_path else ENV
    prefix = [sys.executable, "-c", WITHOUT_KERNELS] if without_kernels else [sys.executable]
    p = subprocess.run([*prefix, str(SCRIPT), str(folder), str(pt2), *options], capture_output=True, text=True,
                       env=env)
    check(p.returncode == 0 and pt2.exists(), f"{name}: export_hf.py: exit {p.returncode}: {p.stderr[-800:]}")
    return pt2


def agrees(name, pt2, ids):
    """The tool's outputs on `ids` equal Python's, bit for bit, and are named by the output's fields."""
    inp = work / f"{name}.in.pt"
    torch.save({"input_ids": ids}, str(inp))
    out = torch.export.load(str(pt2)).module()(input_ids=ids)
    check(isinstance(out, transformers.utils.ModelOutput), f"{name}: Python's output is a ModelOutput: {type(out)}")
    expected = [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
    const = work / f"{name}.expected.pt"
    torch.jit.script(Returns(expected)).save(str(const))
    p, doc = run_tool(pt2, name, "--input", str(inp))
    check(p.returncode == 0, f"{name}: exit {p.returncode}: {p.stderr.strip()[-600:]}")
    q, ref = run_tool(const, name + ".expected", "--input", str(inp))
    check(q.returncode == 0, f"{name}: the expected outputs' run: exit {q.returncode}: {q.stderr.strip()[-600:]}")
    if doc is None or ref is None:
        return
    got, want = outputs(doc), outputs(ref)
    check([t[1:] for t in got] == [t[1:] for t in want] and len(got) == len(expected),
          f"{name}: the interpreter's outputs are Python's, bit for bit:\n  tool   {got}\n  python {want}")
    names = [t[0] for t in got]
    check(names == [f"output/{k}" for k in out.keys()], f"{name}: outputs named by the ModelOutput's fields: {names}")
    print(f"{name}: {names} equal to Python's", flush=True)


torch.manual_seed(0)
gpt2 = transformers.GPT2LMHeadModel(
    transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=100, n_positions=64, bos_token_id=0,
                            eos_token_id=0))
llama = transformers.LlamaForCausalLM(
    transformers.LlamaConfig(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64))
gpt2_pt2 = export_hf("gpt2", gpt2, "--batch-dim", "dynamic", "--seq", "8")
llama_pt2 = export_hf("llama", llama, "--seq", "8", "--batch", "2", without_kernels=True)
# The oldest as `pip install transformers==5.0.0` leaves it, without kernels (an optional package there):
# the venv's kernels, which the newest requires, is newer than 5.0's kernel table, whose import fails.
gpt2_oldest_pt2 = export_hf("gpt2_oldest", gpt2, "--batch-dim", "dynamic", "--seq", "8", python_path=OLDEST,
                            without_kernels=True)
if failures:
    sys.exit(1)

ids = torch.Generator().manual_seed(1)
agrees("gpt2", gpt2_pt2, torch.randint(0, 100, (2, 8), generator=ids))
agrees("gpt2_batch_of_3", gpt2_pt2, torch.randint(0, 100, (3, 8), generator=ids))  # the dynamic batch
agrees("llama", llama_pt2, torch.randint(0, 96, (2, 8), generator=ids))
agrees("gpt2_oldest", gpt2_oldest_pt2, torch.randint(0, 100, (3, 8), generator=ids))

# A release outside the range, as its metadata names it (read before transformers is imported): older
# than the oldest stops in one line, exit 3, before loading anything; newer than the newest tested warns
# in one line and goes on to load the model (a folder that does not exist here, which then fails).
for release, went_on in [("4.57.6", False), ("99.0.0", True)]:
    fake = work / f"metadata-{release}" / f"transformers-{release}.dist-info"
    fake.mkdir(parents=True)
    (fake / "METADATA").write_text(f"Metadata-Version: 2.1\nName: transformers\nVersion: {release}\n")
    p = subprocess.run([sys.executable, str(SCRIPT), str(work / "no-such-model"), str(work / f"{release}.pt2")],
                       capture_output=True, text=True, env=dict(ENV, PYTHONPATH=str(fake.parent)))
    lines = p.stderr.splitlines()
    if went_on:
        check(lines and lines[0].startswith(f"export_hf.py: warning: transformers {release} is newer than "
                                            f"{RELEASES['NEWEST']}") and p.returncode not in (0, 3)
              and "no-such-model" in "\n".join(lines[1:]),
              f"transformers {release}: a one-line warning, then the model is loaded: exit {p.returncode}: "
              f"{p.stderr[-800:]}")
    else:
        check(p.returncode == 3 and len(lines) == 1 and f"transformers {release} is older than" in lines[0],
              f"transformers {release}: one line, exit 3: exit {p.returncode}: {p.stderr[-800:]}")

# The program trains (its parameters keep requires_grad, whichever way it was exported), as Python
# trains its module(): the tensors the tool kept against Python's, on gpt2.in.pt (agrees() saved it).
for name, pt2 in [("gpt2", gpt2_pt2), ("gpt2_oldest", gpt2_oldest_pt2)]:
    base = work / f"{name}.train.json"
    p, doc = run_tool(pt2, f"{name}_train", "--input", str(work / "gpt2.in.pt"), "--mode", "train", "--steps", "2",
                      "--save-baseline", str(base), "--baseline-tensors")
    check(p.returncode == 0, f"{name} --mode train: exit {p.returncode}: {p.stderr.strip()[-600:]}")
    if p.returncode == 0:
        ids = torch.load(str(work / "gpt2.in.pt"))["input_ids"]
        python = trained_in_python(torch, torch.export.load(str(pt2)).module(), kwargs={"input_ids": ids}, steps=2)
        differ = differing_bits(torch, kept_tensors(torch, base, 0), python)
        check(not differ and len(python) > 3, f"{name} --mode train is Python's training, bit for bit: {differ}")
        print(f"{name}: --mode train equals Python's training ({len(python)} tensors)", flush=True)

# --shape without a dtype: int64 ids below the embedding's rows (100 for GPT-2, 96 for Llama).
for name, pt2, rows in [("gpt2", gpt2_pt2, 100), ("llama", llama_pt2, 96)]:
    p, doc = run_tool(pt2, f"{name}_shape", "--shape", "2x8")
    check(p.returncode == 0 and f"int64[2x8] in [0, {rows})" in p.stdout,
          f"{name} --shape 2x8: int64 token ids below {rows}: exit {p.returncode}: {(p.stdout + p.stderr)[-800:]}")
p, doc = run_tool(gpt2_pt2, "gpt2_vocab", "--shape", "2x8", "--vocab", "7")
check(p.returncode == 0 and "int64[2x8] in [0, 7)" in p.stdout,
      f"--vocab 7 sets the range: exit {p.returncode}: {(p.stdout + p.stderr)[-800:]}")
p, doc = run_tool(gpt2_pt2, "gpt2_vocab_too_big", "--shape", "2x8", "--vocab", "1000")
err = p.stderr.strip()
check(p.returncode == 2 and "100 rows" in err and len(err.splitlines()) == 1,
      f"--vocab past the embedding: one line, exit 2: exit {p.returncode}: {err[-600:]}")
p, doc = run_tool(gpt2_pt2, "gpt2_no_shape", "--vocab", "7")
check(p.returncode == 2 and "--vocab needs --shape" in p.stderr, f"--vocab without --shape: {p.stderr[-400:]}")

# Sizes the program was not exported for: one line naming what it was exported with, exit 3.
for name, pt2, shape, words in [("gpt2_seq", gpt2_pt2, "2x9", "static size 8"),
                                ("llama_batch", llama_pt2, "3x8", "static size 2")]:
    p, doc = run_tool(pt2, name, "--shape", shape)
    err = p.stderr.strip()
    check(p.returncode == 3 and words in err and "input_ids" in err and len(err.splitlines()) == 1,
          f"{name} --shape {shape}: one line, exit 3: exit {p.returncode}: {err[-600:]}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
