#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `repro-audit run` on a torch.export archive computes the user's answer: every output equals
# `torch.export.load(p).module()(*inputs)` in Python, bit for bit, on this machine, thread count and torch.
# The problem: the tool keeps digests, not values, and its digest is its own. The approach: Python
# computes the outputs and saves them inside a TorchScript module that returns them as they are (its
# buffers); the tool runs both files on the same --input, one thread each (as Python here), and the
# outputs' digests of the two reports must be equal, in order. Models (random weights, tiny inputs):
#   * torchvision ResNet-18, MobileNetV3-small and a small VisionTransformer (ViT-B/16's code, 2 layers);
#   * a bare nn.MultiheadAttention(batch_first=True), a left-padded MHA with a key padding mask, an
#     nn.TransformerEncoder with a key padding mask;
#   * a dynamic batch dimension (a batch outside its range: one line naming the range, exit 3);
#   * a module that mutates a buffer in forward: the first call equals Python's, and `--calls 2` says
#     that the calls are not comparable, naming the buffer (the second call sees the mutation).
#   * --mode train on a program exported under torch.no_grad() trains; one whose parameters were all
#     frozen is one line, exit 2.
# The report names the runtime ("interpreter"); where this build also has NativeRT, the test prints
# whether it agrees with Python (not asserted: it does not always, docs/GUIDE.md "Export archives").
# Then bad archives: a node naming an op that does not exist, a higher-order op, an argument the
# schema does not have, a value read before it is defined: one line naming the node, exit 3.
#
# usage: test_export_interp.py REPRO_AUDIT_BINARY SOURCE_DIR WORK_FOLDER
import json
import os
import subprocess
import sys
import zipfile
from typing import Optional

from model_test import arguments, check, failures, fresh_folder, jit_as_the_worker

binary, source, work = arguments()
try:
    import torch
    import torch.nn as nn
    import torchvision
except ImportError as e:
    print(f"FAIL: {e}: ./dev setup installs torchvision into the venv")
    sys.exit(1)

fresh_folder(work)
jit_as_the_worker(torch)
torch.set_num_threads(1)
ENV = dict(os.environ, OMP_NUM_THREADS="1")


def run_tool(model, inp, name, *extra, env=ENV):
    report = work / f"{name}.json"
    cmd = [binary, "run", str(model), "--input", str(inp), "--repeats", "2", "--configs", "default",
           "--report", str(report), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return p, (json.loads(report.read_text()) if report.exists() else None)


def output_digests(doc):
    """The outputs' digests of the report's configuration, in order: [(dtype, shape, digest)]."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            if "reference_digests" in node and not found:
                found.extend((t["dtype"], tuple(t["shape"]), t["digest"]) for t in node["reference_digests"]
                             if t["name"] == "output" or t["name"].startswith("output/"))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc)
    return found


class Returns(nn.Module):
    """Returns the tensors it holds, whatever its input: the Python outputs as TorchScript."""
    outs: list[torch.Tensor]

    def __init__(self, outputs):
        super().__init__()
        self.outs = [t.detach().clone() for t in outputs]

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> list[torch.Tensor]:
        return self.outs


def leaves(value):
    return [t for t in torch.utils._pytree.tree_leaves(value) if isinstance(t, torch.Tensor)]


def agrees(name, model, inputs, dynamic_shapes=None, at=None):
    """Exports `model` on `inputs`, and checks the tool's outputs equal Python's, bit for bit, on
    `at` (other inputs the exported program accepts; default: `inputs`)."""
    torch.manual_seed(0)
    model = model.eval()
    ep = torch.export.export(model, inputs, dynamic_shapes=dynamic_shapes)
    pt2 = work / f"{name}.pt2"
    torch.export.save(ep, str(pt2))
    inp = work / f"{name}.in.pt"
    at = at or inputs
    torch.save(at[0] if len(at) == 1 else at, str(inp))
    expected = leaves(torch.export.load(str(pt2)).module()(*at))
    const = work / f"{name}.expected.pt"
    torch.jit.script(Returns(expected)).save(str(const))
    p, doc = run_tool(pt2, inp, name)
    check(p.returncode == 0, f"{name}: exit {p.returncode}: {p.stderr.strip()[-600:]}")
    q, ref = run_tool(const, inp, name + ".expected")
    check(q.returncode == 0, f"{name}: the expected outputs' run: exit {q.returncode}: {q.stderr.strip()[-600:]}")
    if doc is None or ref is None:
        return pt2, inp
    got, want = output_digests(doc), output_digests(ref)
    check(len(got) == len(expected) and got == want,
          f"{name}: the interpreter's outputs are Python's, bit for bit:\n  tool   {got}\n  python {want}")
    check(any(t.get("package", {}).get("runtime") == "interpreter" for t in doc.get("targets", [])),
          f"{name}: the report names the runtime")
    check("runtime: interpreter" in p.stdout, f"{name}: the summary names the runtime: {p.stdout[:400]}")
    print(f"{name}: {len(got)} output(s) equal to Python's", flush=True)
    if "nativert" in NATIVERT:
        n, ndoc = run_tool(pt2, inp, name + ".nativert", env=dict(ENV, REPRO_AUDIT_EXPORT_RUNTIME="nativert"))
        same = ndoc is not None and output_digests(ndoc) == want
        print(f"{name}: NativeRT {'agrees with' if same else 'DIFFERS from'} Python (exit {n.returncode})", flush=True)
    return pt2, inp


# Whether this build has NativeRT: the variable chooses it, or is a one-line usage error.
tiny = work / "tiny.pt2"
torch.export.save(torch.export.export(nn.Linear(2, 2), (torch.randn(1, 2),)), str(tiny))
torch.save(torch.randn(1, 2), str(work / "tiny.in.pt"))
probe, _ = run_tool(tiny, work / "tiny.in.pt", "tiny", env=dict(ENV, REPRO_AUDIT_EXPORT_RUNTIME="nativert"))
NATIVERT = "" if "has no NativeRT" in probe.stderr else "nativert"
check(probe.returncode in (0, 2) and (NATIVERT or probe.returncode == 2), f"the runtime variable: {probe.stderr}")
print(f"this build {'has' if NATIVERT else 'has no'} NativeRT", flush=True)

torch.manual_seed(0)
image = (torch.randn(1, 3, 32, 32),)
agrees("resnet18", torchvision.models.resnet18(num_classes=10), image)
agrees("mobilenet_v3_small", torchvision.models.mobilenet_v3_small(num_classes=10), image)
vit = torchvision.models.VisionTransformer(image_size=32, patch_size=16, num_layers=2, num_heads=2, hidden_dim=32,
                                           mlp_dim=64, num_classes=10)
agrees("vit", vit, image)


class Mha(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x)


class LeftPaddedMha(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 2, batch_first=True)
        self.out = nn.Linear(16, 4)

    def forward(self, x, pad):
        y, _ = self.attn(x, x, x, key_padding_mask=pad, need_weights=False)
        return self.out(y[:, -1])


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)

    def forward(self, x, pad):
        return self.enc(x, src_key_padding_mask=pad)


seq = torch.randn(3, 5, 16)
pad = torch.zeros(3, 5, dtype=torch.bool)
pad[1, :2] = True  # left padding: row 1 starts two tokens late
pad[2, :1] = True
agrees("mha", Mha(), (seq,))
agrees("mha_left_padded", LeftPaddedMha(), (seq, pad))
agrees("encoder_padded", Encoder(), (seq, pad))

# A dynamic batch: the exported range is checked at the input, in one line.
batch = torch.export.Dim("batch", min=2, max=8)
pt2, _ = agrees("mlp_dynamic", nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)), (torch.randn(3, 4),),
                dynamic_shapes=({0: batch},))
torch.save(torch.randn(9, 4), str(work / "too_big.pt"))
p, doc = run_tool(pt2, work / "too_big.pt", "too_big")
check(p.returncode == 3 and "outside the range the program was exported for" in p.stderr and "[2, 8]" in p.stderr,
      f"a batch outside the exported range: exit {p.returncode}: {p.stderr.strip()[-400:]}")
check(len(p.stderr.strip().splitlines()) == 1, f"the range error is one line: {p.stderr!r}")
# Dim.DYNAMIC records [2, inf] (the exporter's 0/1 specialisation); Python's module still takes a
# batch of 1, and so must the interpreter (invariance's first size is 1).
agrees("mlp_dynamic_batch_of_one", nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)), (torch.randn(3, 4),),
       dynamic_shapes=({0: torch.export.Dim.DYNAMIC},), at=(torch.randn(1, 4),))


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("count", torch.zeros(4))

    def forward(self, x):
        self.count.add_(1.0)
        return self.lin(x) * self.count


pt2, inp = agrees("counter", Counter(), (torch.randn(2, 4),))
p, doc = run_tool(pt2, inp, "counter_calls", "--calls", "2")
check(p.returncode == 0 and "forward mutates buffer 'count'" in p.stdout,
      f"counter --calls 2: the second call sees the mutated buffer, named: exit {p.returncode}: "
      f"{(p.stdout + p.stderr)[-800:]}")

# --mode train: an export under torch.no_grad() keeps requires_grad and trains; one whose parameters
# were all frozen is one line, exit 2, naming what froze them.
x = torch.randn(3, 4)
torch.save(x, str(work / "train.in.pt"))
for name, frozen in [("no_grad_export", False), ("frozen_export", True)]:
    lin = nn.Linear(4, 2).requires_grad_(not frozen)
    with torch.no_grad():
        torch.export.save(torch.export.export(lin, (x,)), str(work / f"{name}.pt2"))
    p, doc = run_tool(work / f"{name}.pt2", work / "train.in.pt", name, "--mode", "train", "--steps", "2")
    err = p.stderr.strip()
    if frozen:
        check(p.returncode == 2 and len(err.splitlines()) == 1 and "requires_grad_(False)" in err,
              f"{name} --mode train: one line naming the frozen parameters, exit 2: exit {p.returncode}: {err[-600:]}")
    else:
        check(p.returncode == 0 and "step1/grad/weight" in json.dumps(doc),
              f"{name} --mode train: trains: exit {p.returncode}: {err[-600:]}")

# --- bad archives: one line naming the node, exit 3 ---------------------------------------------
def rewritten(name, source_pt2, change):
    out = work / f"{name}.pt2"
    with zipfile.ZipFile(source_pt2) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.endswith("models/model.json"):
                model = json.loads(data)
                change(model["graph_module"]["graph"]["nodes"])
                data = json.dumps(model).encode()
            dst.writestr(info, data)
    return out


base = work / "mlp_dynamic.pt2"
small = work / "small.pt"
torch.save(torch.randn(3, 4), str(small))


def set_target(target):
    def change(nodes):
        nodes[0]["target"] = target
    return change


def rename_input(nodes):
    nodes[0]["inputs"][0]["name"] = "no_such_argument"


def read_early(nodes):
    nodes[0]["inputs"][0]["arg"] = {"as_tensor": {"name": nodes[-1]["outputs"][0]["as_tensor"]["name"]}}


for name, change, words in [
    ("no_op", set_target("torch.ops.aten.no_such_op.default"), "names an op that this torch does not have"),
    ("custom_op", set_target("torch.ops.nobody.frob.default"), "which is not registered: load its library"),
    ("hop", set_target("torch.ops.higher_order.cond"), "is the higher-order op cond"),
    ("bad_arg", rename_input, "which the op's schema does not have"),
    ("read_early", read_early, "before it is defined"),
]:
    bad = rewritten(name, base, change)
    p, doc = run_tool(bad, small, name)
    err = p.stderr.strip()
    check(p.returncode == 3 and words in err and "node " in err and len(err.splitlines()) == 1,
          f"{name}: one line naming the node, exit 3: exit {p.returncode}: {err[-500:]}")

# A long graph runs in time linear in its nodes (120,000 relus after the first node); a graph past
# the JSON reader's cap on values (2^21: about 140,000 such nodes, so 10^6 nodes too) is refused in
# one line before it is built. 200,000 nodes stand for 10^6 here, which would take Python gigabytes.
def chain(n):
    def change(nodes):
        first = nodes[0]
        out = first["outputs"][0]["as_tensor"]["name"]
        extra = []
        for i in range(n):
            nxt = f"chain_{i}"
            extra.append({"target": "torch.ops.aten.relu.default", "name": nxt, "metadata": {},
                          "inputs": [{"name": "self", "arg": {"as_tensor": {"name": out}}, "kind": 1}],
                          "outputs": [{"as_tensor": {"name": nxt}}]})
            out = nxt
        # The chain ends where the first node's value went: its readers read the chain's end.
        last = extra[-1]
        last["outputs"][0]["as_tensor"]["name"] = first["outputs"][0]["as_tensor"]["name"]
        first["outputs"][0]["as_tensor"]["name"] = "chain_start"
        extra[0]["inputs"][0]["arg"]["as_tensor"]["name"] = "chain_start"
        nodes[1:1] = extra
    return change


long_graph = rewritten("long", base, chain(120_000))
p, doc = run_tool(long_graph, small, "long")
check(p.returncode == 0, f"a graph of 120,000 nodes runs: exit {p.returncode}: {p.stderr.strip()[-400:]}")
huge = rewritten("huge", base, chain(200_000))
p, doc = run_tool(huge, small, "huge")
check(p.returncode == 3 and len(p.stderr.strip().splitlines()) == 1,
      f"a graph past the cap: one line, exit 3: exit {p.returncode}: {p.stderr.strip()[-400:]}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
