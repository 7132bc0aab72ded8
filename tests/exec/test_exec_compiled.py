#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `repro-audit exec` on compiled programs and collectives (issue 32), through the binary, with the
# venv's torch: Inductor's CPU backend compiles C++ with the machine's g++.
#   1. A compiled MLP with dropout (programs/compiled_mlp.py): this test first measures, in Python,
#      whether its compiled weights differ from eager ones with fallback_random off and on; then
#      exec's compile=on vs eager must report exactly that, with the compile call in the checklist.
#   2. The same program with a cold and a warm Inductor cache, compared: what exec reports.
#   3. torchrun with two gloo ranks and the NCCL switches: each rank's variables in the report.
#   4. compile=off on a program that never calls torch.compile (a note), an unknown switch value, and
#      an unseeded program, whose switch search is skipped for the seeding line that explains it.
# TORCHINDUCTOR_VEC_ISA_OK=0 spares Inductor its vector-ISA probes (a Python subprocess per ISA,
# about 30 s per process on a loaded 2-core machine); the compiled code stays Inductor's C++.
#
# usage: test_exec_compiled.py REPRO_AUDIT_BINARY WORK_FOLDER
import json
import os
import pathlib
import shutil
import subprocess
import sys

binary, work = os.path.abspath(sys.argv[1]), pathlib.Path(sys.argv[2]).resolve()
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
programs = pathlib.Path(__file__).resolve().parent / "programs"
python = sys.executable
torchrun = str(pathlib.Path(python).parent / "torchrun")
# The commands' temporary files (torchrun's torchelastic_* folders, Inductor's) stay in the work
# folder, which the next run removes: the test leaves /tmp as it found it.
(work / "tmp").mkdir()
env = dict(os.environ, TORCHINDUCTOR_VEC_ISA_OK="0", TORCHINDUCTOR_CACHE_DIR=str(work / "user-cache"),
           TMPDIR=str(work / "tmp"))
env.pop("TORCH_COMPILE_DISABLE", None)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def exec_(*args, report=None, timeout=1200, extra_env=None):
    cmd = [binary, "exec", *map(str, args)]
    if report is not None:
        i = cmd.index("--")
        cmd[i:i] = ["--report", str(report)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=work, env=dict(env, **(extra_env or {})))
    print(f"$ {' '.join(cmd[1:])}\n-> exit {r.returncode}\n{r.stdout}{r.stderr[-1500:]}", flush=True)
    return r


def target(path):
    return json.loads(pathlib.Path(path).read_text())["targets"][0]


def items(t, item_id):
    return [c for c in t["exec"]["checklist"] if c["id"] == item_id]


def switch(config, key):
    return [s for s in config["switches"] if s["key"] == key][0]


# 1. What the program does, measured here: eager, compiled, compiled with fallback_random on.
def measure(name, prelude, extra_env):
    out = work / "measure" / name
    out.mkdir(parents=True)
    code = prelude + f"import runpy, sys; sys.argv = ['compiled_mlp.py']; runpy.run_path({str(programs / 'compiled_mlp.py')!r})"
    r = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=1200, cwd=work,
                       env=dict(env, REPRO_AUDIT_OUT=str(out), **extra_env))
    assert r.returncode == 0, r.stderr[-2000:]
    import torch
    return torch.load(out / "model.pt"), [l for l in r.stdout.splitlines() if l.startswith("step ")]


def same(a, b):
    import torch
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


eager = measure("eager", "", {"TORCH_COMPILE_DISABLE": "1"})
compiled = measure("compiled", "", {})
fallback = measure("fallback", "import torch._inductor.config as c; c.fallback_random = True; ", {})
differs_off, differs_on = not same(eager[0], compiled[0]), not same(eager[0], fallback[0])
losses_off, losses_on = eager[1] != compiled[1], eager[1] != fallback[1]
print(f"measured: compiled vs eager weights differ with fallback_random off: {differs_off}, on: {differs_on}; "
      f"printed losses differ: {losses_off}, {losses_on}", flush=True)


def metric_differs(t):
    return any(f["name"] == "metric:loss" for f in t["configuration_dependence"].get("differing_tensors", []))

metric = ["--metric", r"loss=loss (\S+)"]
rep = work / "compiled.json"
r = exec_("--repeats", "1", "--no-fix-search", "--configs", "default+compile=on,eager", *metric, "--",
          python, programs / "compiled_mlp.py", report=rep)
check(r.returncode in (0, 1), f"compiled: exit {r.returncode}")
if rep.exists():
    t = target(rep)
    check(t["configuration_dependent"] == (differs_off or losses_off),
          f"compiled: configuration dependence {t['configuration_dependent']}, measured {differs_off}, {losses_off}")
    check(metric_differs(t) == losses_off, f"compiled: metric differs {metric_differs(t)}, measured {losses_off}")
    on, off = t["configs"]
    check(switch(on, "compile")["effective"] == "on" and switch(off, "compile")["effective"] == "off",
          f"compiled: compile read back {switch(on, 'compile')} {switch(off, 'compile')}")
    check(switch(on, "inductor.fallback_random")["effective"] == "off", f"compiled: {switch(on, 'inductor.fallback_random')}")
    calls = items(t, "compile")
    check(any("torch.compile(mode=default, backend=inductor" in c["text"] and c["where"].endswith("compiled_mlp.py:15")
              for c in calls), f"compiled: compile calls {calls}")
    random = items(t, "compile.random")
    check(bool(random) == differs_off, f"compiled: random-op line {random}, measured difference {differs_off}")

rep = work / "fallback.json"
r = exec_("--repeats", "1", "--no-fix-search", "--configs", "default+compile=on+inductor.fallback_random=on,eager", *metric,
          "--", python, programs / "compiled_mlp.py", report=rep)
check(r.returncode in (0, 1), f"fallback: exit {r.returncode}")
if rep.exists():
    t = target(rep)
    check(t["configuration_dependent"] == (differs_on or losses_on),
          f"fallback: configuration dependence {t['configuration_dependent']}, measured {differs_on}, {losses_on}")
    check(metric_differs(t) == losses_on, f"fallback: metric differs {metric_differs(t)}, measured {losses_on}")
    check(switch(t["configs"][0], "inductor.fallback_random")["effective"] == "on",
          f"fallback: {switch(t['configs'][0], 'inductor.fallback_random')}")
    check(not items(t, "compile.random"), f"fallback: {items(t, 'compile.random')}")

# 2. A cold cache against a warm one: each read back as asked; the warm one's warm-up is said.
# Nothing of a run outlives it (issue 39): the audit's TMPDIR, private to this check, is empty
# afterwards (Inductor's precompiled headers went to $TMPDIR/torchinductor_$USER and stayed).
rep = work / "cache.json"
tmp = work / "cache-tmp"
tmp.mkdir()
r = exec_("--repeats", "1", "--no-fix-search", "--configs", "default+inductor.cache=cold,default+inductor.cache=warm", *metric,
          "--", python, programs / "compiled_mlp.py", report=rep, extra_env={"TMPDIR": str(tmp)})
check(r.returncode in (0, 1), f"cache: exit {r.returncode}")
check(not list(tmp.iterdir()), f"cache: the runs left {sorted(p.name for p in tmp.iterdir())} in TMPDIR")
check("warm-up run fills its Inductor cache" in r.stderr, "cache: no warm-up said")
check("inductor.cache=cold: its runs spent a median" in r.stderr and "(a cold Inductor cache: every run compiles)" in r.stderr,
      "cache: the cold cache's compile time not said")
if rep.exists():
    t = target(rep)
    cold, warm = t["configs"]
    check(switch(cold, "inductor.cache")["effective"] == "cold" and switch(warm, "inductor.cache")["effective"] == "warm",
          f"cache: {switch(cold, 'inductor.cache')} {switch(warm, 'inductor.cache')}")
    print(f"cold vs warm: verdicts {cold['verdict']}, {warm['verdict']}; configuration dependent: "
          f"{t['configuration_dependent']}", flush=True)

# 3. torchrun, two gloo ranks, the NCCL switches in every rank's environment.
rep = work / "nccl.json"
r = exec_("--repeats", "1", "--no-fix-search", "--configs", "default+nccl.algo=Ring+nccl.proto=LL128+nccl.nvls=off",
          "--artifact", "{out}/model-{rank}.pt", "--", torchrun, "--nproc-per-node", "2", programs / "ddp.py", report=rep)
check(r.returncode == 0, f"nccl: exit {r.returncode}")
if rep.exists():
    t = target(rep)
    lines = items(t, "collectives")
    check(len(lines) == 1 and lines[0]["ranks"] == [0, 1] and lines[0]["status"] == "ok"
          and "NCCL_ALGO=Ring, NCCL_PROTO=LL128, NCCL_NVLS_ENABLE=0" in lines[0]["text"] and "backend gloo" in lines[0]["text"],
          f"nccl: {lines}")
    c = t["configs"][0]
    check([switch(c, k)["effective"] for k in ("nccl.algo", "nccl.proto", "nccl.nvls")] == ["Ring", "LL128", "off"],
          f"nccl: switches {[switch(c, k) for k in ('nccl.algo', 'nccl.proto', 'nccl.nvls')]}")
    check("NCCL_ALGO=Ring" in r.stdout and "[ranks 0,1]" in r.stdout, "nccl: text report")

# 4. Bad input and answers before a search.
rep = work / "never.json"
r = exec_("--repeats", "1", "--configs", "eager", "--", python, programs / "seeded_train.py", report=rep)
check(r.returncode == 0, f"never compiles: exit {r.returncode}")
check(sum("never called torch.compile" in l for l in r.stderr.splitlines()) == 1, "never compiles: no one-line note")
if rep.exists():
    notes = items(target(rep), "compile")
    check(len(notes) == 1 and notes[0]["status"] == "note", f"never compiles: {notes}")
r = exec_("--configs", "compile=maybe", "--", python, programs / "seeded_train.py")
lines = [l for l in r.stderr.splitlines() if l.strip()]
check(r.returncode == 2 and len(lines) == 1 and "switch 'compile' takes on or off, not 'maybe'" in lines[0],
      f"bad value: exit {r.returncode}: {lines}")
r = exec_("--configs", "inductor.cache=lukewarm", "--", python, programs / "seeded_train.py")
check(r.returncode == 2 and "takes one of unset, cold, warm" in r.stderr, f"bad cache value: exit {r.returncode}")
rep = work / "unseeded.json"
r = exec_("--repeats", "2", "--", python, programs / "unseeded_loader.py", report=rep)
check(r.returncode == 1, f"unseeded: exit {r.returncode}")
if rep.exists():
    f = target(rep)["configs"][0].get("fix_search") or {}
    check(f.get("candidates") == [] and f.get("conclusion", "").startswith("not searched: the seeding checklist"),
          f"unseeded: fix search {f}")
    check("the seeding checklist says why" in r.stderr, "unseeded: not said first")

print("FAILED:\n  " + "\n  ".join(failures) if failures else "all passed")
sys.exit(1 if failures else 0)
