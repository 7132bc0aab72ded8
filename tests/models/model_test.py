# SPDX-License-Identifier: Apache-2.0
# What the model tests in this folder share: their first three arguments, a fresh work folder, the
# list of failures and check(), and TorchScript run as the worker runs it. A test imports it by name
# (Python puts a script's own folder first on sys.path); the tests run with python -B
# (tests/CMakeLists.txt), so the import writes no __pycache__ into the source tree.
import os
import pathlib
import shutil
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
