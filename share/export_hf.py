#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Export a Hugging Face language model to a torch.export archive that repro-audit runs.

usage: python export_hf.py MODEL_DIR OUT.pt2 [--batch-dim static|dynamic] [--seq N] [--batch N]
                         [--seq-dim static|dynamic] [--mask]

Run it with your own Python, the one that has torch and transformers (5.0 or newer; tested with
5.0.0 and 5.25.0): it only loads the model (`AutoModelForCausalLM.from_pretrained(MODEL_DIR)`, a
folder or a hub name your machine can reach), exports its forward on `input_ids` with
`use_cache=False`, and saves the program. The model is loaded with `use_kernels=False`: since 5.25
transformers swaps layers for kernels from the Hugging Face hub by default (`USE_HUB_KERNELS`), and
the program must hold the model's own PyTorch ops, the ones torch.export traces and the tool runs.
A transformers older than 5.0 stops with one line (exit 3); one newer than the newest tested gets
a one-line warning and is used. The
program's input is `input_ids` (int64, BATCH x N) and its output is the model's own output
object, so the tool names each tensor after its field (`output/logits`).

Where transformers has its own torch.export support (`transformers.exporters.DynamoExporter`,
which patches the model code that torch.export cannot trace), it is used; otherwise
`torch.export.export` is called directly. Either way, the sample ids are seeded and the program is
the model's eval-mode forward (dropout off). Its parameters keep `requires_grad`, so `repro-audit run
OUT.pt2 --mode train` trains it, as Python trains `torch.export.load(OUT.pt2).module()`.

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
import importlib.metadata
import itertools
import sys

import torch


# The transformers releases the tests export with (tests/models/test_export_hf.py; ./dev installs
# both): the oldest supported and the newest tested.
TRANSFORMERS_OLDEST = "5.0.0"
TRANSFORMERS_NEWEST = "5.25.0"


def release(version):
    """(major, minor, patch) of "5.25.0", "5.26.0.dev0" or "5.1": the leading numbers, zeros for the rest."""
    parts = []
    for part in version.split(".")[:3]:
        digits = "".join(itertools.takewhile(str.isdigit, part))
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts + [0] * (3 - len(parts)))


def check_transformers():
    """Read the installed release without importing it (an old one may not even import beside a newer
    huggingface_hub): older than the oldest supported stops, newer than the newest tested warns."""
    try:
        version = importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        print(f"export_hf.py: transformers is not installed for {sys.executable}: "
              f"pip install 'transformers>={TRANSFORMERS_OLDEST}'", file=sys.stderr)
        sys.exit(3)
    if release(version) < release(TRANSFORMERS_OLDEST):
        print(f"export_hf.py: transformers {version} is older than {TRANSFORMERS_OLDEST}, the oldest this script supports: "
              f"pip install 'transformers>={TRANSFORMERS_OLDEST}'", file=sys.stderr)
        sys.exit(3)
    if release(version) > release(TRANSFORMERS_NEWEST):
        print(f"export_hf.py: warning: transformers {version} is newer than {TRANSFORMERS_NEWEST}, the newest tested; "
              f"if the export fails, pip install 'transformers=={TRANSFORMERS_NEWEST}'", file=sys.stderr)


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
    """The causal LM of MODEL_DIR (its bare model where it has no LM head), without hub kernels."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING
    config = transformers.AutoConfig.from_pretrained(model_dir)
    auto = transformers.AutoModelForCausalLM if type(config) in MODEL_FOR_CAUSAL_LM_MAPPING else transformers.AutoModel
    model = auto.from_pretrained(model_dir, use_kernels=False)
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
    check_transformers()
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
