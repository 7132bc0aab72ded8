# SPDX-License-Identifier: Apache-2.0
# What the model tests in this folder share: their first three arguments, a fresh work folder, the
# list of failures and check(), and TorchScript run as the worker runs it. A test imports it by name
# (Python puts a script's own folder first on sys.path); the tests run with python -B
# (tests/CMakeLists.txt), so the import writes no __pycache__ into the source tree.
import os
import pathlib
import shutil
import subprocess
import sys

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def arguments():
    """BINARY SOURCE_DIR WORK_FOLDER ...: the binary's absolute path, the source tree, the work folder."""
    return os.path.abspath(sys.argv[1]), pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3]).resolve()


def fresh_folder(work):
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)


def validate_reports(python3, source, work, *names):
    """check() that the reports `names` in `work` fit report-v1.schema.json (tests/validate_schema.py)."""
    v = subprocess.run([python3, str(source / "tests/validate_schema.py"),
                        str(source / "share/schema/report-v1.schema.json"), str(work), *names],
                       capture_output=True, text=True)
    print(v.stdout + v.stderr)
    check(v.returncode == 0, "the reports validate against report-v1.schema.json")


def ordered(torch, t):
    """float32 bits as integers in the order of the floats, -0 and +0 one value (as the tool counts)."""
    i = t.contiguous().view(torch.int32).to(torch.int64)
    return torch.where(i < 0, -(2 ** 31) - i, i)


def python_error(torch, x, r):
    """Max ULP (in x's float32), max abs and max relative error of x against the float64 r: the float64
    referee's figures (reports/referee_model.h, ReferenceError), computed by torch."""
    x64 = x.double()
    diff = (x64 - r).abs()
    scale = torch.maximum(x64.abs(), r.abs())
    rel = torch.where(scale > 0, diff / scale, torch.zeros_like(diff))
    ulp = (ordered(torch, x) - ordered(torch, r.to(torch.float32))).abs()
    return ulp.max().item(), diff.max().item(), rel.max().item()


def jit_as_the_worker(torch):
    """TorchScript's profiling executor and graph optimisations off, as in the worker's trials."""
    torch._C._jit_set_profiling_executor(False)
    torch._C._jit_set_profiling_mode(False)
    torch._C._set_graph_executor_optimize(False)


def trained_in_python(torch, module, args=(), kwargs=None, steps=2, lr=0.01):
    """What `run MODEL --mode train --steps STEPS` records, computed in Python on `module` (e.g.
    `torch.export.load(p).module()`), under the report's names: stepK/loss, stepK/grad/NAME and
    final/param/NAME. The tool's loss: a one-element output itself, else the sum of the floating
    outputs' sums, in order; each step a forward, a backward and torch.optim.SGD (no momentum)."""
    params = list(module.named_parameters())
    sgd = torch.optim.SGD([p for _, p in params], lr=lr)
    recorded = {}
    for step in range(steps):
        sgd.zero_grad()
        leaves = [t for t in torch.utils._pytree.tree_leaves(module(*args, **(kwargs or {})))
                  if isinstance(t, torch.Tensor)]
        if len(leaves) == 1 and leaves[0].numel() == 1:
            loss = leaves[0].reshape(())
        else:
            loss = None
            for t in (t for t in leaves if t.is_floating_point()):
                loss = t.sum() if loss is None else loss + t.sum()
        loss.backward()
        recorded[f"step{step}/loss"] = loss.detach().clone()
        recorded.update({f"step{step}/grad/{n}": p.grad.clone() for n, p in params if p.grad is not None})
        sgd.step()
    recorded.update({f"final/param/{n}": p.detach().clone() for n, p in params})
    return recorded


def kept_tensors(torch, baseline, config):
    """The reference tensors of configuration number `config` that `run --save-baseline BASELINE
    --baseline-tensors` kept (BASELINE.tensors/t0-c<config>.pt, written by the tool itself)."""
    return torch.load(f"{baseline}.tensors/t0-c{config}.pt", weights_only=False)


def differing_bits(torch, tool, python):
    """The names of `python`'s tensors whose dtype, shape or bits the tool's tensor of that name lacks."""
    def bits(t):
        return t.detach().contiguous().reshape(-1).view(torch.uint8)

    return [n for n, t in python.items() if n not in tool or tool[n].dtype != t.dtype or tool[n].shape != t.shape
            or not torch.equal(bits(tool[n]), bits(t))]


def tool_batches(n, rows, size):
    """The batches `invariance` builds of `size` rows from an input of n rows whose first `rows` are
    the anchors: [(anchors, start batch, end batch)], a batch a list of row indices, the anchors first
    in the start batch and last in the end batch, the other places filled with the input's other rows
    in order (all its rows where it has no others)."""
    fillers = list(range(rows, n)) if n > rows else list(range(n))
    g = min(rows, size)
    out = []
    for first in range(0, rows, g):
        anchors = list(range(first, min(first + g, rows)))
        base = [fillers[j % len(fillers)] for j in range(size)]
        start, end = list(base), list(base)
        for k, a in enumerate(anchors):
            start[k] = a
            end[size - len(anchors) + k] = a
        out.append((anchors, start, end))
    return out


def batch_variant(model, rows, sizes, anchors=4, last=True):
    """Whether `model` (a callable on a batch of `rows`) gives one of the first `anchors` rows other bits
    first (or, with `last`, last) in a batch of one of `sizes`, built as `invariance` builds it, than
    alone. First only is what its classes of sizes follow; last too, what its verdict follows."""
    def differs(batch, place, anchor):
        return not (model(rows[batch])[place] == model(rows[anchor:anchor + 1])[0]).all()

    return any(differs(start, k, a) or (last and differs(end, size - len(group) + k, a))
               for size in sizes for group, start, end in tool_batches(len(rows), anchors, size)
               for k, a in enumerate(group))
