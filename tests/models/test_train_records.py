#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `run --mode train` keeps each step's values under that step's name, as Python's own training loop
# computes them (issue 51). The problem: the trial recorder kept `t.detach().to(kCPU).contiguous()`,
# which on the CPU is the live parameter, so every `stepK/param/*`, the initial `param/*` and every
# `stepK/buffer/*` of a dump held the last step's values; digests, taken at record time, were right,
# while every difference statistic and every `--baseline-tensors` file was wrong. The approach: train
# models with a BatchNorm (buffers that change in every step) and a LayerNorm for three steps with
# `--baseline-tensors`, then train the same saved files in Python as the worker does (TorchScript's
# optimisations off, one thread, SGD at the tool's learning rate; the export archive with the tool's
# plain update) and require every kept tensor, step by step, to be bit for bit Python's value at that
# step. Python's own steps are checked to differ, so that a record holding another step's values
# cannot pass. Then the issue's figure: the baseline saved at one thread and compared at two, where
# each measured tensor's statistics must be those Python measures between its own values at that step
# (on a machine where the thread count changes nothing, nothing is measured and that part checks
# nothing). The cost: small models, a few runs; under a minute on 2 cores.
#
# usage: test_train_records.py REPRO_AUDIT_BINARY SOURCE_DIR WORK_FOLDER
import json
import os
import subprocess
import warnings

from model_test import arguments, check, failures, fresh_folder, jit_as_the_worker

binary, source, work = arguments()
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

fresh_folder(work)
jit_as_the_worker(torch)
warnings.filterwarnings("ignore", message="The given buffer is not writable")  # torch.export.load's own
STEPS = 3
LR = 0.01  # the tool's default for sgd (audit/trial/trial_spec.h)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        self.bn = nn.BatchNorm1d(32)
        self.norm1 = nn.LayerNorm(32)
        self.head = nn.Linear(32, 8)

    def forward(self, x):
        h = self.enc(x)
        h = self.bn(h.transpose(1, 2)).transpose(1, 2)
        return self.head(torch.relu(self.norm1(h)))


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 32)
        self.norm1 = nn.LayerNorm(32)
        self.out = nn.Linear(32, 4)

    def forward(self, x):
        return self.out(torch.tanh(self.norm1(self.fc(x))))


torch.manual_seed(0)
torch.jit.script(Net()).save(str(work / "net.pt"))
x = torch.randn(4, 8, 32)
torch.save(x, str(work / "x.pt"))
small_x = torch.randn(8, 16)
torch.save(small_x, str(work / "small_x.pt"))
torch.export.save(torch.export.export(Small(), (small_x,)), str(work / "small.pt2"))


def tool(args, threads=None):
    env = dict(os.environ)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    r = subprocess.run([binary, *args], capture_output=True, text=True, env=env)
    check(r.returncode == 0, f"{' '.join(args)} exits 0 (got {r.returncode}: {r.stderr.strip()[-400:]})")
    return r


def kept(baseline):
    """The tensors --baseline-tensors kept for the baseline's one configuration, by name."""
    g = json.loads((work / baseline).read_text())
    name = g["targets"][0]["configs"][0]["reference_tensors"]
    return torch.load(str(work / g["tensors"] / name), weights_only=False)


def scripted_steps(threads):
    """Python's own training of net.pt, recorded as the worker names it (worker/targets/torchscript.cpp)."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    m = torch.jit.load(str(work / "net.pt"))
    m.train()
    params = [(n, p) for n, p in m.named_parameters() if p.is_floating_point()]
    for _, p in params:
        p.requires_grad_(True)
    opt = torch.optim.SGD([p for _, p in params], lr=LR)
    rec = {"param/" + n: p.detach().clone() for n, p in m.named_parameters()}
    rec.update({"buffer/" + n: b.detach().clone() for n, b in m.named_buffers()})
    for step in range(1, STEPS + 1):
        opt.zero_grad(set_to_none=True)
        y = m(x)
        loss = y.sum()
        rec[f"step{step}/output"] = y.detach().clone()
        rec[f"step{step}/loss"] = loss.detach().clone()
        loss.backward()
        for n, p in params:
            rec[f"step{step}/grad/{n}"] = p.grad.detach().clone()
        opt.step()
        for n, p in params:
            rec[f"step{step}/param/{n}"] = p.detach().clone()
        for n, b in m.named_buffers():
            rec[f"step{step}/buffer/{n}"] = b.detach().clone()
    return rec


def exported_steps():
    """Python's own training of small.pt2, as the export target trains (worker/targets/export.cpp)."""
    torch.set_num_threads(1)
    m = torch.export.load(str(work / "small.pt2")).module()
    params = list(m.named_parameters())
    rec = {"param/" + n: p.detach().clone() for n, p in params}
    for step in range(STEPS):
        for _, p in params:
            p.grad = None
        loss = m(small_x).sum()
        rec[f"step{step}/loss"] = loss.detach().clone()
        loss.backward()
        with torch.no_grad():
            for n, p in params:
                rec[f"step{step}/grad/{n}"] = p.grad.detach().clone()
                p.sub_(p.grad, alpha=LR)
    for n, p in params:
        rec["final/param/" + n] = p.detach().clone()
    return rec


def same_records(what, got, want):
    check(sorted(got) == sorted(want), f"{what}: the kept names are Python's ({sorted(set(got) ^ set(want))})")
    for name in sorted(set(got) & set(want)):
        a, b = got[name], want[name]
        equal = a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
        check(equal, f"{what}: {name} is Python's value at its step")


def steps_differ(what, rec, prefixes):
    """Each named tensor changes from one recorded step to the next in Python (else the check proves nothing)."""
    for prefix in prefixes:
        names = [k for k in rec if k.startswith(prefix)]
        check(names, f"{what}: Python recorded {prefix}*")
        for n in names:
            later = [n.replace(prefix, p, 1) for p in prefixes[prefixes.index(prefix) + 1:]]
            for o in later:
                check(o not in rec or not torch.equal(rec[n], rec[o]), f"{what}: Python's {n} and {o} differ")


# 1. TorchScript, one thread, every step's parameters, gradients and buffers.
tool(["run", str(work / "net.pt"), "--input", str(work / "x.pt"), "--mode", "train", "--steps", str(STEPS),
      "--configs", "threads-1", "--repeats", "1", "--quiet", "--save-baseline", str(work / "g1.json"),
      "--baseline-tensors"])
python1 = scripted_steps(1)
steps_differ("net.pt", python1, ["param/", "step1/param/", "step2/param/", "step3/param/"])
steps_differ("net.pt", python1, ["buffer/", "step1/buffer/", "step2/buffer/", "step3/buffer/"])
check(any(k.startswith("step2/buffer/bn.running_mean") for k in python1), "net.pt has BatchNorm buffers")
same_records("net.pt", kept("g1.json"), python1)

# 2. torch.export, the interpreter's training: the initial weights, each step's gradients, the final.
tool(["run", str(work / "small.pt2"), "--input", str(work / "small_x.pt"), "--mode", "train", "--steps", str(STEPS),
      "--configs", "threads-1", "--repeats", "1", "--quiet", "--save-baseline", str(work / "e.json"),
      "--baseline-tensors"])
exported = exported_steps()
steps_differ("small.pt2", exported, ["param/", "final/param/"])
same_records("small.pt2", kept("e.json"), exported)

# 3. The issue's figure: saved at one thread (the default configuration), compared at two.
args = ["run", str(work / "net.pt"), "--input", str(work / "x.pt"), "--mode", "train", "--steps", "2",
        "--configs", "default", "--repeats", "1", "--quiet"]
tool(args + ["--save-baseline", str(work / "t1.json"), "--baseline-tensors"], threads=1)
tool(args + ["--baseline", str(work / "t1.json"), "--report", str(work / "t2.json")], threads=2)
one, two = scripted_steps(1), scripted_steps(2)
report = json.loads((work / "t2.json").read_text())
measured = 0
for t in report["baseline"]["results"][0].get("differing_tensors", []):
    if "stats" not in t or t["name"] not in one:
        continue
    a, b = one[t["name"]].double(), two[t["name"]].double()
    differing = int((one[t["name"]] != two[t["name"]]).sum())
    s = t["stats"]
    check(s["differing"] == differing, f"{t['name']}: {s['differing']} elements differ, Python says {differing}")
    max_abs = float((a - b).abs().max())
    check(abs(s["max_abs_diff"] - max_abs) <= 1e-12 * max(max_abs, 1e-300),
          f"{t['name']}: max abs {s['max_abs_diff']}, Python says {max_abs}")
    measured += 1
    if t["name"] == "step1/param/norm1.bias":
        print(f"step1/param/norm1.bias at 1 and 2 threads: the tool says {s['differing']}/{a.numel()} differ, max abs "
              f"{s['max_abs_diff']:.3g}, max {s['max_ulp']:g} ULP; Python says {differing}/{a.numel()}, max abs "
              f"{max_abs:.3g}")
print(f"{measured} tensors measured between one and two threads")

if failures:
    print(f"{len(failures)} failure(s)")
    raise SystemExit(1)
print("ok")
