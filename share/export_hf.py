#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Export a Hugging Face language model to a torch.export archive that repro-audit runs.

usage: python export_hf.py MODEL_DIR OUT.pt2 [--batch-dim static|dynamic] [--seq N] [--batch N]
                         [--seq-dim static|dynamic] [--mask]

Run it with your own Python, the one that has torch and transformers: it only loads the model
(`AutoModelForCausalLM.from_pretrained(MODEL_DIR)`, a folder or a hub name your machine can
reach), exports its forward on `input_ids` with `use_cache=False`, and saves the program. The
program's input is `input_ids` (int64, BATCH x N) and its output is the model's own output
object, so the tool names each tensor after its field (`output/logits`).

Where transformers has its own torch.export support (`transformers.exporters.DynamoExporter`,
which patches the model code that torch.export cannot trace), it is used; otherwise
`torch.export.export` is called directly. Either way, the sample ids are seeded, the model is in
eval mode and the export runs under `torch.no_grad()` (an inference program: `--mode train` says so).

  --batch-dim dynamic  any batch size runs (what `repro-audit invariance` needs); static (the
                       default) fixes it to --batch.
  --seq N              the sequence length, fixed (default 16).
  --batch N            the sample's batch size (default 2; a dynamic batch needs 2 or more to export).
  --seq-dim dynamic    any sequence length runs (what `invariance --axis verify` needs); static (the
                       default) fixes it to --seq.
  --mask               the program takes attention_mask and position_ids after input_ids (same
                       shape, int64), as a serving engine passes them for a padded batch (what
                       `invariance --axis pad` needs).

Then, for example: `repro-audit run OUT.pt2 --shape 2x16` (int64 token ids below the vocabulary
size, read from the embedding). To load OUT.pt2 in Python, `import transformers.modeling_outputs`
first: defining the output classes registers them with torch's pytree (a bare `import transformers`
is lazy and defines none).
"""
import argparse
import sys

import torch


def arguments():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model_dir", metavar="MODEL_DIR", help="a transformers model folder (or a hub name)")
    p.add_argument("out", metavar="OUT.pt2", help="the torch.export archive to write")
    p.add_argument("--batch-dim", choices=("static", "dynamic"), default="static")
    p.add_argument("--seq", type=int, default=16, metavar="N")
    p.add_argument("--batch", type=int, default=2, metavar="N")
    p.add_argument("--seq-dim", choices=("static", "dynamic"), default="static")
    p.add_argument("--mask", action="store_true")
    a = p.parse_args()
    if a.seq < 1 or a.batch < 1:
        p.error("--seq and --batch must be 1 or more")
    if a.batch_dim == "dynamic" and a.batch < 2:
        p.error("--batch-dim dynamic needs --batch 2 or more (torch.export fixes a dimension of size 1)")
    if a.seq_dim == "dynamic" and a.seq < 2:
        p.error("--seq-dim dynamic needs --seq 2 or more (torch.export fixes a dimension of size 1)")
    return a


def load(model_dir):
    import transformers
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(model_dir)
    except ValueError:  # not a causal LM: its bare model
        model = transformers.AutoModel.from_pretrained(model_dir)
    model.eval()
    model.config.use_cache = False
    return model


def export(model, ids, a):
    """The program of forward(input_ids[, attention_mask, position_ids]) with the dims asked dynamic."""
    dims = {}
    if a.batch_dim == "dynamic":
        dims[0] = torch.export.Dim.DYNAMIC
    if a.seq_dim == "dynamic":
        dims[1] = torch.export.Dim.DYNAMIC
    kwargs = {"input_ids": ids}
    if a.mask:
        kwargs["attention_mask"] = torch.ones_like(ids)
        kwargs["position_ids"] = torch.arange(ids.shape[1]).expand(ids.shape).contiguous()
    shapes = {name: dict(dims) for name in kwargs} if dims else None
    try:
        from transformers.exporters import DynamoConfig, DynamoExporter
    except ImportError:  # a transformers without its own exporters
        DynamoExporter = None
    if DynamoExporter is not None:
        program, _ = DynamoExporter().export_program(model, {**kwargs, "use_cache": False},
                                                     DynamoConfig(dynamic_shapes=shapes))
        return program
    with torch.no_grad():
        return torch.export.export(model, args=(), kwargs=kwargs, dynamic_shapes=shapes)


def main():
    a = arguments()
    model = load(a.model_dir)
    vocab = model.get_input_embeddings().num_embeddings
    ids = torch.randint(0, vocab, (a.batch, a.seq), generator=torch.Generator().manual_seed(0))
    program = export(model, ids, a)
    torch.export.save(program, a.out)
    batch = "any" if a.batch_dim == "dynamic" else str(a.batch)
    seq = "any" if a.seq_dim == "dynamic" else str(a.seq)
    inputs = "input_ids, attention_mask and position_ids" if a.mask else "input_ids"
    print(f"wrote {a.out}: {inputs} int64 [batch {batch} x sequence {seq}], vocabulary {vocab}; "
          f"run it: repro-audit run {a.out} --shape {a.batch}x{a.seq}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
