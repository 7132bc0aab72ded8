#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The docs are true: every example of README.md and docs/GUIDE.md that shows a command and what it
# printed is run here, on fixtures this test makes, and what it prints is compared with the block.
#
# The problem. Examples drift: the GUIDE showed 12 differing tensors where the same command gives
# 2, and a command's advice named an option it does not have. Nobody reruns forty commands by hand.
# The approach. The two files are parsed into fenced blocks; a block whose first line starts with
# "$ " is an example: its "$ " lines are commands (a `cat > F <<'EOF'` line takes the lines up to
# EOF as F's text), the other lines are what the last command printed. Each example is found in
# FIXTURES by its first command (a function that makes what it needs, in its own folder), or in
# NOT_RUN with the reason it is not run here; a new example in neither fails the test, so the
# choice is made when the example is written. An expected line must appear in the output, in order;
# a line "..." stands for any lines, and a line ending in "..." for any end. Lines that depend on
# the machine are skipped by one rule (MACHINE): timing figures, hardware names, digests, and the
# measured statistics of differing tensors (their counts and sizes follow the CPU's kernels). A
# block whose last line says "(exit N)" must also exit N. The cost: a few minutes on 2 cores.
#
# usage: test_doc_examples.py BUILD_DIR SOURCE_DIR WORK_FOLDER
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

build, source, work = (pathlib.Path(p).resolve() for p in sys.argv[1:4])
binary = build / "repro-audit"
python = sys.executable
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
failures = []

MACHINE = re.compile(
    r"\b\d+(\.\d+)?\s?(ms|s)\b|\bx\d+\.\d+\b|\b\d+\.\d+x\b|wall time|ETA"  # timing
    r"|EPYC|Xeon|Intel|AMD|AVX|\bCPUs?\b|GPU|H100|H200"                    # hardware
    r"|\b[0-9a-f]{12}\b"                                                   # digests
    r"|elements differ|repeats differ|more tensors"                       # measured statistics
    r"|diverged \d+/\d+|\d+ diverged|alerted & |silent & |^\s+stable\s+\d|disagree with the documentation")  # races
TIMING_SUFFIX = re.compile(r" x\d+\.\d+\b")  # a probe's cost beside its verdict: dropped from both sides
COUNTED = re.compile(r"\b\d+ of (\d+) tensors differ")  # measured: the total is kept, the count is any


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def examples(path):
    """(first command, commands, files written by heredocs, expected lines) of every example block."""
    out, block, inside = [], None, False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            if inside and block and block[0].startswith("$ "):
                out.append(block)
            inside, block = not inside, []
            continue
        if inside:
            block.append(line)
    parsed = []
    for b in out:
        commands, files, expected, i = [], {}, [], 0
        while i < len(b):
            line = b[i]
            if line.startswith("$ "):
                cmd = line[2:]
                m = re.match(r"cat > (\S+) <<'EOF'$", cmd)
                if m:
                    end = b.index("EOF", i + 1)
                    files[m.group(1)] = "\n".join(b[i + 1:end]) + "\n"
                    i = end + 1
                    continue
                commands.append(cmd)
                expected = []
            else:
                expected.append(line)
            i += 1
        parsed.append((commands[0] if commands else "", commands, files, expected))
    return parsed


def shell_line(cmd):
    """The command as the docs write it, run against this build: `build/repro-audit` and a bare
    `repro-audit` are the binary, `python` and the venv's python are this python."""
    cmd = re.sub(r"\s+#.*$", "", cmd)
    cmd = cmd.replace("build/repro-audit ", f"{binary} ")
    cmd = re.sub(r"(^|[\s;|])repro-audit ", lambda m: f"{m.group(1)}{binary} ", cmd)
    cmd = cmd.replace("~/.cache/repro-audit/venv/bin/python", python)
    return re.sub(r"(^|\s)python ", lambda m: f"{m.group(1)}{python} ", cmd)


def compare(name, expected, out):
    lines, at = [TIMING_SUFFIX.sub("", l) for l in out.splitlines()], 0
    for want in expected:
        if want.strip() == "..." or MACHINE.search(want):
            continue
        # "..." inside a line stands for any text; how many tensors differ is measured, like the rest
        # of MACHINE's statistics (12 of 19 on one 2-core Xeon where another CPU's kernels give 2)
        want = COUNTED.sub(r"... of \1 tensors differ", TIMING_SUFFIX.sub("", want))
        pattern = re.compile(".*".join(re.escape(part) for part in want.split("...")) + r"\Z")
        for k in range(at, len(lines)):
            if pattern.match(lines[k]):
                at = k + 1
                break
        else:
            check(False, f"{name}: the docs show the line\n    {want!r}\n  which the command did not print (in order); it printed:\n"
                         + "\n".join("    " + l for l in lines))
            return


def run_example(name, commands, files, expected, folder, env=None):
    for f, text in files.items():
        (folder / f).write_text(text)
    r = None
    for cmd in commands:
        r = subprocess.run(["bash", "-c", shell_line(cmd)], cwd=folder, capture_output=True, text=True, timeout=1200,
                           env={**os.environ, **(env or {})})
    compare(name, expected, r.stdout)
    m = re.search(r"\(exit (\d+)\)$", expected[-1]) if expected else None
    if m:
        check(r.returncode == int(m.group(1)), f"{name}: exit {r.returncode}, the docs say {m.group(1)}: {r.stderr[-400:]}")
    return r


# ---- fixtures: each makes what its example needs in `folder` and runs it ------------------------

def examples_folder(folder):
    subprocess.run([build / "repro-audit-examples", folder / "build/examples"], check=True, capture_output=True)


def readme_first_audit(folder, commands, files, expected):
    # make_model.py as printed, then the audit. The venv's numpy keeps torch quiet (a warning the
    # user cannot act on), and one Net serves net.pt and net.pt2, so they hold the same weights.
    r = run_example("README make_model.py", commands, files, expected, folder)
    # torch 2.14 and 2.15 warn from torch.jit.script that TorchScript is deprecated (their own warning, on
    # every script that uses it, which docs/TORCH_RELEASES.md answers); nothing else may be printed.
    stderr = [line for line in r.stderr.splitlines()
              if line.strip() and "FutureWarning: `torch.jit.script` is deprecated" not in line
              and line.strip() != "warnings.warn("]
    check(r.returncode == 0 and not stderr, f"README make_model.py: exit {r.returncode}, stderr {r.stderr!r}")
    import torch
    import warnings
    warnings.simplefilter("ignore")  # torch.export.load's own warnings, in this test, not the user's
    script = torch.jit.load(str(folder / "net.pt"))
    exported = torch.export.load(str(folder / "net.pt2")).state_dict
    for k, v in script.state_dict().items():
        check(torch.equal(v, exported[k]), f"README: net.pt and net.pt2 hold different {k}")


def readme_pt2(folder, commands, files, expected):
    # No output block: each command must run (exit 0), and what --trace cannot see is said once.
    for cmd in commands:
        r = subprocess.run(["bash", "-c", shell_line(cmd)], cwd=folder, capture_output=True, text=True, timeout=600)
        check(r.returncode == 0, f"README {cmd}: exit {r.returncode}: {r.stderr[-400:]}")
        both = r.stdout + r.stderr
        check("ModelRunnerHandle" not in both, f"README {cmd}: a note about NativeRT's internals: {both}")
        check(both.count("the trace cannot see into") <= 1, f"README {cmd}: the trace note is said more than once: {both}")


def readme_pt2_train(folder, commands, files, expected):
    # The example, then the claim beside it: the loss, gradients and parameters the tool kept under each
    # configuration are those of Python's torch.export.load("net.pt2").module() trained with
    # torch.optim.SGD, at the same thread count (tests/models/model_test.py computes them).
    run_example("README net.pt2 --mode train", commands, files, expected, folder)
    import torch
    sys.path.insert(0, str(source / "tests/models"))
    from model_test import differing_bits, kept_tensors, trained_in_python
    r = subprocess.run([binary, "run", "net.pt2", "--input", "input.pt", "--mode", "train", "--steps", "2", "--configs",
                        "default,threads-1", "--repeats", "1", "--save-baseline", "train.json", "--baseline-tensors"],
                       cwd=folder, capture_output=True, text=True, timeout=600)
    check(r.returncode == 0, f"README net.pt2 --mode train --baseline-tensors: exit {r.returncode}: {r.stderr[-400:]}")
    if r.returncode != 0:
        return
    x, threads = torch.load(str(folder / "input.pt")), torch.get_num_threads()
    for config, n in ((0, threads), (1, 1)):
        torch.set_num_threads(n)
        python = trained_in_python(torch, torch.export.load(str(folder / "net.pt2")).module(), (x,), steps=2)
        differ = differing_bits(torch, kept_tensors(torch, folder / "train.json", config), python)
        check(not differ, f"README: net.pt2 trained by the tool ({n} threads) is not Python's training: {differ}")
    torch.set_num_threads(threads)


def guide_reduce_mlp(folder, commands, files, expected):
    examples_folder(folder)
    run_example("GUIDE reduce_mlp", commands, files, expected, folder)


def guide_baseline_saved(folder, commands, files, expected):
    examples_folder(folder)
    run_example("GUIDE reduce_mlp --baseline (one thread)", commands, files, expected, folder)


def guide_baseline_two_cores(folder, commands, files, expected):
    # Uses the baseline the previous example saved; "explained" needs two threads by default.
    if (os.cpu_count() or 1) < 2:
        print("GUIDE reduce_mlp --baseline on two cores: one CPU here, not run")
        return
    run_example("GUIDE reduce_mlp --baseline (two threads)", commands, files, expected, shared)


def guide_baseline_tensors(folder, commands, files, expected):
    # Saved on one thread with its tensors, compared on two: the distances of the changed tensors.
    if (os.cpu_count() or 1) < 2:
        print("GUIDE reduce_mlp --baseline-tensors on two cores: one CPU here, not run")
        return
    examples_folder(folder)
    run_example("GUIDE reduce_mlp --baseline-tensors", commands, files, expected, folder)


def guide_compare_edited(folder, commands, files, expected):
    # The docs' edit: the baseline's default step2/loss digest and its cuDNN version, by hand.
    examples_folder(folder)
    subprocess.run([binary, "run", "build/examples/reduce_mlp.pt", "--shape", "64x4096", "--mode", "train", "--steps", "2",
                    "--save-baseline", "edited.json", "--report", "today.json"], cwd=folder, capture_output=True,
                   env={**os.environ, "OMP_NUM_THREADS": "1"}, check=True, timeout=900)
    b = json.loads((folder / "edited.json").read_text())
    b["environment"]["cuda"]["cudnn"] = "9.8.0"
    for d in b["targets"][0]["configs"][0]["reference_digests"]:
        if d["name"] == "step2/loss":
            d["digest"] = "0123456789ab" + d["digest"][12:]
    (folder / "edited.json").write_text(json.dumps(b, indent=2))
    # today.json ran under OMP_NUM_THREADS=1 too; the example's environment line names cuDNN only,
    # at the version the docs show (the torch 2.11 wheel's; 2.15's brings 9.26.0).
    t = json.loads((folder / "today.json").read_text())
    t["environment"]["env_vars"]["OMP_NUM_THREADS"] = b["environment"]["env_vars"]["OMP_NUM_THREADS"]
    t["environment"]["cuda"]["cudnn"] = "9.19.0"
    (folder / "today.json").write_text(json.dumps(t, indent=2))
    run_example("GUIDE compare edited.json today.json", commands, files, expected, folder)


def plain(label):
    def run(folder, commands, files, expected):
        run_example(label, commands, files, expected, folder)
    return run


def diff_pair(folder, commands, files, expected):
    import torch
    a = {"0.bias": torch.zeros(3), "0.weight": torch.linspace(-1, 1, 12).reshape(3, 4),
         "1.num_batches_tracked": torch.tensor(4), "1.running_var": torch.ones(3)}
    b = {k: v.clone() for k, v in a.items() if k != "1.running_var"}
    a["0.weight"][1, 2] = 0.01
    b["0.weight"][1, 2] = 0.01 + 107 * 2.0 ** -30  # 107 ULP of a value in [2^-7, 2^-6)
    b["1.num_batches_tracked"] = torch.tensor(4.0)
    b["extra"] = torch.zeros(2)
    torch.save(a, folder / "a.pt")
    torch.save(b, folder / "b.pt")
    run_example("GUIDE diff a.pt b.pt", commands, files, expected, folder)


def diff_tolerance(folder, commands, files, expected):
    import torch
    # +0.0 against -0.0 twice (across zero, no distance), and one ULP of 2.0.
    w = torch.tensor([1.0, 0.0, 0.0, 2.0, 4.0])
    v = w.clone()
    v[1], v[2] = -0.0, -0.0
    v[3] = torch.nextafter(w[3], torch.tensor(3.0))
    x = torch.arange(3.0)
    torch.save({"w": w, "x": x}, folder / "a.pt")
    torch.save({"w": v, "x": x}, folder / "b.pt")
    run_example("GUIDE diff --rtol", commands, files, expected, folder)


def guide_exec_no_match(folder, commands, files, expected):
    # The reader's train.py saves into $REPRO_AUDIT_OUT; the docs' line is the error on stderr.
    (folder / "train.py").write_text("import os\n"
                                     "with open(os.path.join(os.environ['REPRO_AUDIT_OUT'], 'ckpt.pt'), 'wb') as f:\n"
                                     "    f.write(b'weights')\n")
    r = subprocess.run(["bash", "-c", shell_line(commands[-1])], cwd=folder, capture_output=True, text=True,
                       timeout=1200)
    compare("GUIDE exec --artifact that matches nothing", expected, r.stderr)
    check(r.returncode == 3, f"GUIDE exec --artifact that matches nothing: exit {r.returncode}, expected 3")


FIXTURES = {
    "build/repro-audit selftest --device cpu": plain("README selftest"),
    "~/.cache/repro-audit/venv/bin/python make_model.py": readme_first_audit,
    "build/repro-audit run net.pt --input input.pt --mode train --steps 2 --report audit.json": plain("README first audit"),
    "build/repro-audit run net.pt2 --input input.pt --mode train --steps 2": readme_pt2_train,
    "build/repro-audit run build/examples/reduce_mlp.pt --shape 64x4096 --mode train --steps 2 --report audit.json":
        guide_reduce_mlp,
    "OMP_NUM_THREADS=1 repro-audit run build/examples/reduce_mlp.pt --shape 64x4096 --mode train --steps 2 --save-baseline golden.json":
        guide_baseline_saved,
    "repro-audit run build/examples/reduce_mlp.pt --shape 64x4096 --mode train --steps 2 --baseline golden.json":
        guide_baseline_two_cores,
    "OMP_NUM_THREADS=1 repro-audit run build/examples/reduce_mlp.pt --shape 64x4096 --mode train --steps 2 --save-baseline golden.json --baseline-tensors":
        guide_baseline_tensors,
    "repro-audit compare edited.json today.json": guide_compare_edited,
    "repro-audit probes --only index_put.accumulate,index_add --configs default,det --repeats auto":
        plain("GUIDE probes --repeats auto"),
    "build/repro-audit probes --only 'index_put*,put,sum.threads,max_unpool2d'": plain("GUIDE probes"),
    "repro-audit diff a.pt b.pt": diff_pair,
    "repro-audit diff a.pt b.pt --rtol 1e-3": diff_tolerance,
    "repro-audit exec --artifact model.pt -- python train.py": guide_exec_no_match,
}
# Examples not run here, each with its reason (a fixture would have to reproduce a rare event or
# files the docs do not give).
NOT_RUN = {
    "repro-audit compare probes-2.11.0.json probes-2.15.0.json":
        "needs a build under each of two torch releases (docs/evidence/cpu-torch-2.11-vs-2.15)",
    "repro-audit run net.pt --shape 64x4096 --configs default,mkl-cbwr --repeats auto --detect-rate 5% --max-repeats 80":
        "a divergence in one process of ten to twenty, up to 160 runs",
    "repro-audit run bigsum.pt --shape 4096x4096 --configs threads-N,threads-1 --repeats 2 --trace":
        "bigsum.py is not given in the docs",
    "build/repro-audit run model.pt --shape 4x16 --mode train --steps 4 --replay --replay-omit rng":
        "model.py is not given in the docs",
    "build/repro-audit run ip.pt --shape 100000x64 --configs threads=4 --trace":
        "a fix search timed on four threads (minutes on 2 cores)",
    "OMP_NUM_THREADS=2 repro-audit run sum2.pt --shape 4096x4096 --configs default --trace --save-baseline base.json":
        "sum2.py is not given in the docs",
    "repro-audit diff checkpoint_a.pt checkpoint_b.pt | grep -v identical": "the 38-entry checkpoints are not given",
    "repro-audit exec --metric 'loss=loss=([0-9.]+)' -- python train.py": "train.py is not given in the docs",
    "build/repro-audit exec --artifact ckpt.pt --metric 'loss=loss ([0-9.]+)' -- ~/.cache/repro-audit/venv/bin/python train.py":
        "no output block, and train.py is the reader's own script",
    "repro-audit exec --artifact '{out}/model-{rank}.pt' --ranks-equal -- torchrun --nproc-per-node 2 ddp.py":
        "ddp.py is not given in the docs",
    "repro-audit exec -- python unseeded_train.py": "unseeded_train.py is not given in the docs",
    "repro-audit exec --repeats 1 --configs default+compile=on,eager --metric 'loss=loss (\\S+)' -- python compiled_mlp.py":
        "compiled_mlp.py is not given in the docs (tests/exec/programs/compiled_mlp.py is; ctest exec_compiled runs it)",
}

shared = work / "guide-baseline"  # the two baseline examples share golden.json
only = os.environ.get("RA_DOC_EXAMPLES_ONLY", "")  # while editing the docs: run the examples whose command has this
seen = set()
for doc in (source / "README.md", source / "docs/GUIDE.md"):
    for n, (first, commands, files, expected) in enumerate(examples(doc)):
        key = first
        if only and only not in key and "make_model" not in key:
            seen.add(key)
            continue
        if key in NOT_RUN:
            print(f"{doc.name}: not run: {key}: {NOT_RUN[key]}")
            continue
        fixture = FIXTURES.get(key)
        if fixture is None and re.sub(r"\s+#.*$", "", key).startswith("build/repro-audit run net.pt2"):
            fixture = readme_pt2
        if fixture is None:
            check(False, f"{doc.name}: an example with no fixture and no reason not to run it: {key!r} (add it to FIXTURES "
                         f"or NOT_RUN in {pathlib.Path(__file__).name})")
            continue
        if fixture in (guide_baseline_saved, guide_baseline_two_cores):
            folder = shared  # the second uses the baseline the first saved
        elif fixture in (readme_first_audit, readme_pt2, readme_pt2_train) or key.startswith("build/repro-audit run net.pt "):
            folder = work / "readme"  # the README's audit runs where make_model.py wrote its files
        else:
            folder = work / f"{doc.stem}-{n}"
        folder.mkdir(parents=True, exist_ok=True)
        print(f"{doc.name}: {key}", flush=True)
        fixture(folder, commands, files, expected)
        seen.add(key)

for key in FIXTURES:
    check(key in seen, f"a fixture whose example is no longer in the docs: {key!r}")

# The README's pytest example, run by the plugin's own assertion (python/repro_audit/pytest_plugin.py,
# with a stand-in for pytest's fail, as the venv has no pytest) against this build: it passes, as the
# README says it does on any CPU; with torch.nn.Linear(256, 256) as the model it fails exactly where
# Python sees a row's bits change with the batch, and the failure names the classes.
def readme_pytest_example():
    import types
    import torch
    stand_in = types.ModuleType("pytest")

    class Failed(AssertionError):
        pass

    def fail(message, pytrace=True):
        raise Failed(message)

    stand_in.fail, stand_in.fixture = fail, (lambda f: f)
    sys.modules["pytest"] = stand_in
    sys.path.insert(0, str(source / "python"))
    os.environ["REPRO_AUDIT_BINARY"] = str(binary)
    from repro_audit.pytest_plugin import Auditor
    readme = (source / "README.md").read_text()
    code = next(b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "def test_" in b)
    name = re.search(r"^def (test_\w+)\(repro_audit\):", code, re.M).group(1)
    for label, text in (("as printed", code),
                        ("with the Linear", re.sub(r"model = .*", "model = torch.nn.Linear(256, 256)", code))):
        space = {}
        exec(compile(text, "README.md", "exec"), space)
        torch.manual_seed(0)
        try:
            space[name](Auditor("readme", None, None))
            failed = ""
        except Failed as e:
            failed = str(e)
        if label == "as printed":
            check(not failed, f"README's pytest example fails here, where the README says it passes: {failed[:800]}")
            continue
        torch.manual_seed(0)
        model, rows = torch.nn.Linear(256, 256), torch.randn(20, 256)
        with torch.inference_mode():
            variant = any(not torch.equal(model(rows[:n])[:1], model(rows[:1])) for n in (2, 3, 4, 8))
        check(bool(failed) == variant and (not failed or "classes {1}" in failed),
              f"README's pytest example {label}: Python sees a batch-variant Linear: {variant}; the test "
              f"{'failed: ' + failed[:600] if failed else 'passed'}")


print("README.md: the pytest example", flush=True)
readme_pytest_example()

# Statements about the tool that no example shows.
man = (source / "share/man/repro-audit.1").read_text()
check("(TorchScript) models" not in man.split(".SH SYNOPSIS")[0], "the man page's NAME line says only TorchScript")
lint = subprocess.run([binary, "lint", work / "readme/net.pt2"], capture_output=True, text=True)
guide = (source / "docs/GUIDE.md").read_text()
exits = guide[guide.index("## Exit codes of the other subcommands"):]
lint_exits = exits[:exits.index("`diff` exits")]
check(lint.returncode == 0 and "torch.export" in lint_exits,
      f"lint reads a .pt2 (exit {lint.returncode}), but the GUIDE's lint exit codes say: {lint_exits!r}")

print(f"{len(failures)} failed" if failures else "ok")
sys.exit(1 if failures else 0)
