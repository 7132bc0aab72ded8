#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `repro-audit exec` through the binary, on small programs that play the user's (tests/exec/programs/),
# run with the venv's Python and torch as a user's would: a seeded training script, an unseeded
# shuffling DataLoader (and its two fixes), index_put_ under threads, a script that overrides a
# switch, printed losses, torchrun with two gloo ranks, and every failure the issue names.
#
# usage: test_exec.py REPRO_AUDIT_BINARY WORK_FOLDER
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

binary, work = os.path.abspath(sys.argv[1]), pathlib.Path(sys.argv[2]).resolve()
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
programs = pathlib.Path(__file__).resolve().parent / "programs"
python = sys.executable
torchrun = str(pathlib.Path(python).parent / "torchrun")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


# The commands' temporary files (torchrun's torchelastic_* folders) stay in the work folder, which
# the next run removes: the test leaves /tmp as it found it.
TMP = work / "tmp"
TMP.mkdir()


def exec_(*args, report=None, timeout=900):
    cmd = [binary, "exec", *map(str, args)]
    if report is not None:
        i = cmd.index("--")
        cmd[i:i] = ["--report", str(report)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=work,
                       env=dict(os.environ, TMPDIR=str(TMP)))
    return r


def one_line_error(r, code, words, what):
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check(r.returncode == code, f"{what}: exit {r.returncode}, wanted {code}: {r.stderr[-300:]}")
    check(len(lines) == 1 and lines[0].startswith("repro-audit: ") and words in lines[0], f"{what}: stderr {lines}")


def line_of(script, text):
    for i, line in enumerate((programs / script).read_text().splitlines(), 1):
        if text in line:
            return f"{programs / script}:{i}"
    raise AssertionError(text)


def target(path):
    return json.loads(pathlib.Path(path).read_text())["targets"][0]


def items(t, item_id):
    return [c for c in t["exec"]["checklist"] if c["id"] == item_id]


# 1. A seeded, deterministic training script: every artifact reproducible, its own settings named.
rep = work / "seeded.json"
r = exec_("--repeats", "2", "--metric", r"loss=loss ([0-9.]+)", "--", python, programs / "seeded_train.py", report=rep)
check(r.returncode == 0, f"seeded: exit {r.returncode}: {r.stderr[-500:]}")
if r.returncode == 0:
    t = target(rep)
    kinds = {a["name"]: a["kind"] for a in t["exec"]["artifacts"]}
    check(kinds == {"ckpt.pt": "torch.save", "model.safetensors": "safetensors"}, f"seeded: artifacts {kinds}")
    check(t["exec"]["metrics"][0]["occurrences"] == 8, f"seeded: metric {t['exec']['metrics']}")
    check(t["exec"]["hook"] == "python", "seeded: the hook did not report")
    check(items(t, "seed.torch")[0]["status"] == "ok", f"seeded: {items(t, 'seed.torch')}")
    check(items(t, "checkpoint")[0]["status"] == "ok", f"seeded: {items(t, 'checkpoint')}")
    threads = [s for s in t["configs"][0]["switches"] if s["key"] == "threads"][0]
    check(threads.get("set_at") == line_of("seeded_train.py", "set_num_threads") and threads["effective"] == "1",
          f"seeded: threads {threads}")

# 2. Never seeded, DataLoader(shuffle=True, num_workers=2) over a dataset drawing from random.
rep = work / "unseeded.json"
r = exec_("--no-fix-search", "--", python, programs / "unseeded_loader.py", report=rep)
check(r.returncode == 1, f"unseeded: exit {r.returncode}: {r.stderr[-500:]}")
if rep.exists():
    t = target(rep)
    check(t["configs"][0]["verdict"] == "diverged", "unseeded: not diverged")
    check(t["configs"][0]["diverged_tensors"][0]["name"] == "batches.pt:batches", f"unseeded: {t['configs'][0]['diverged_tensors']}")
    seed = items(t, "seed.torch")[0]
    check(seed["status"] == "missing" and seed["artifact"] == "batches.pt", f"unseeded: seed item {seed}")
    loader = items(t, "dataloader")[0]
    check(loader["status"] == "missing" and loader["where"] == line_of("unseeded_loader.py", "loader = DataLoader"),
          f"unseeded: loader item {loader}")
    check("worker_init_fn" not in json.dumps(t["exec"]["checklist"]), "unseeded: generic worker_init_fn advice")
for fix in ("--seed-torch", "--generator"):
    r = exec_("--repeats", "2", "--no-fix-search", "--", python, programs / "unseeded_loader.py", fix)
    check(r.returncode == 0, f"unseeded {fix}: exit {r.returncode}: {r.stdout[-800:]}{r.stderr[-300:]}")

# 3. index_put_ with accumulate under threads=4: diverged, fixed by threads=1 or det, with costs.
rep = work / "index_put.json"
r = exec_("--configs", "threads=4", "--", python, programs / "index_put.py", report=rep)
check(r.returncode == 1, f"index_put: exit {r.returncode}: {r.stderr[-500:]}")
if rep.exists():
    c = target(rep)["configs"][0]
    check(c["verdict"] == "diverged", "index_put: not diverged")
    fs = c.get("fix_search") or {}
    keys = {k for cand in fs.get("candidates", []) if cand["reproducible"] and cand["stage"] == "single" for k in cand["toggles"]}
    check({"threads", "deterministic"} <= keys, f"index_put: fixing toggles {keys}")
    timing = json.loads(rep.read_text())["timing"]
    check("fix" in json.dumps(timing) and "cost" in json.dumps(timing), "index_put: no costs in the timing section")

# --repeats auto: a divergence decides after the first round; runs without one go on in rounds,
# here to --max-repeats.
rep = work / "auto_diverged.json"
r = exec_("--repeats", "auto", "--configs", "threads=4", "--no-fix-search", "--", python, programs / "index_put.py", report=rep)
check(r.returncode == 1, f"auto diverged: exit {r.returncode}: {r.stderr[-300:]}")
if rep.exists():
    c = target(rep)["configs"][0]
    check(c["stopped_by"] == "divergence" and c["completed"] == 3, f"auto diverged: {c['stopped_by']} after {c['completed']}")
    check(json.loads(rep.read_text())["auto_repeats"]["max"] == 20, "auto diverged: the rule is not in the report")
rep = work / "auto_clean.json"
r = exec_("--repeats", "auto", "--max-repeats", "5", "--", python, programs / "seeded_train.py", report=rep)
check(r.returncode == 0, f"auto clean: exit {r.returncode}: {r.stderr[-300:]}")
if rep.exists():
    c = target(rep)["configs"][0]
    check(c["stopped_by"] == "max-repeats" and c["completed"] == 5, f"auto clean: {c['stopped_by']} after {c['completed']}")
    check("undecided at --max-repeats 5" in r.stdout, f"auto clean: text {r.stdout[-400:]}")

# 4. A script that turns cudnn.benchmark on itself under det: the override and its line.
rep = work / "override.json"
r = exec_("--configs", "det", "--repeats", "2", "--", python, programs / "sets_benchmark.py", report=rep)
check(r.returncode == 0, f"override: exit {r.returncode}: {r.stderr[-500:]}")
if rep.exists():
    sw = [s for s in target(rep)["configs"][0]["switches"] if s["key"] == "cudnn.benchmark"][0]
    check(sw["requested"] == "off" and sw["effective"] == "on" and sw.get("set_at") == line_of("sets_benchmark.py", "benchmark = True"),
          f"override: {sw}")
    check("overridden by the program at" in r.stdout, f"override: text {r.stdout[-600:]}")

# 5. Printed losses: the first diverging step.
rep = work / "losses.json"
r = exec_("--repeats", "2", "--metric", "loss=loss=([0-9.]+)", "--", python, programs / "losses.py", report=rep)
check(r.returncode == 1, f"losses: exit {r.returncode}")
if rep.exists():
    f = target(rep)["configs"][0]["diverged_tensors"][0]
    check(f["name"] == "metric:loss" and f["stats"]["first_index"] == 3 and "step 4" in f["stats"]["note"], f"losses: {f}")

# The command's own options, even those exec also has (--seed, --repeats), are the command's.
rep = work / "argv.json"
r = exec_("--configs", "default", "--repeats", "2", "--", python, "-c",
          "import os, sys; open(os.path.join(os.environ['REPRO_AUDIT_OUT'], 'argv.txt'), 'w').write(repr(sys.argv[1:]))",
          "--seed", "5", "--repeats", "9", report=rep)
check(r.returncode == 0 and rep.exists() and target(rep)["exec"]["command"][-4:] == ["--seed", "5", "--repeats", "9"],
      f"argv: exit {r.returncode}: {r.stderr[-300:]}")

# 6. torchrun, two gloo ranks: reproducible and equal across ranks; then a rank-dependent update.
rep = work / "ddp.json"
r = exec_("--repeats", "2", "--artifact", "{out}/model-{rank}.pt", "--ranks-equal", "--", torchrun, "--nproc-per-node", "2",
          programs / "ddp.py", report=rep)
check(r.returncode == 0, f"ddp: exit {r.returncode}: {r.stdout[-600:]}{r.stderr[-600:]}")
if rep.exists():
    e = target(rep)["exec"]
    check(e["world_size"] == 2 and e["backend"] == "gloo", f"ddp: world {e['world_size']} backend {e['backend']}")
    check(e["launcher_set"].get("OMP_NUM_THREADS") == "1", f"ddp: launcher_set {e['launcher_set']}")
    check(e["ranks_equal"]["equal"] and e["ranks_equal"]["compared"] == 2, f"ddp: ranks {e['ranks_equal']}")
    check(items(target(rep), "seed.torch")[0]["ranks"] == [0, 1], "ddp: checklist ranks")
rep = work / "ddp-bad.json"
r = exec_("--repeats", "2", "--artifact", "{out}/model-{rank}.pt", "--ranks-equal", "--", torchrun, "--nproc-per-node", "2",
          programs / "ddp.py", "--rank-dependent", report=rep)
check(r.returncode == 1, f"ddp rank-dependent: exit {r.returncode}")
if rep.exists():
    q = target(rep)["exec"]["ranks_equal"]
    check(not q["equal"] and q["rank"] == 1 and q["tensor"] == "bias", f"ddp rank-dependent: {q}")

# 7. A command that is not Python: environment switches reach it, in-process ones are marked.
rep = work / "shell.json"
r = exec_("--configs", "det", "--repeats", "2", "--", "sh", "-c", 'echo "$CUBLAS_WORKSPACE_CONFIG" > "$REPRO_AUDIT_OUT/env.txt"',
          report=rep)
check(r.returncode == 0, f"shell: exit {r.returncode}: {r.stderr}")
if rep.exists():
    t = target(rep)
    sw = {s["key"]: s for s in t["configs"][0]["switches"]}
    check(t["exec"]["hook"] == "none" and sw["deterministic"]["effective"].startswith("not applied"), f"shell: {sw['deterministic']}")
    check(sw["cublas_workspace"]["effective"] == ":4096:8", f"shell: {sw['cublas_workspace']}")
    check(t["exec"]["artifacts"][0]["kind"] == "bytes", "shell: artifact kind")

# 8. Failures and bad input: one line each, the documented exit code.
one_line_error(exec_("--", "no-such-command-here"), 3, "not found on PATH", "missing command")
one_line_error(exec_("--repeats", "2", "--", python, programs / "fails.py"), 3, "dataset folder /data/imagenet not found", "always exits 1")
one_line_error(exec_("--repeats", "1", "--timeout", "3", "--", python, programs / "hangs.py"), 4, "--timeout 3 s", "hangs")
one_line_error(exec_("--repeats", "2", "--", python, programs / "writes_nothing.py"), 3, "wrote no artifact", "writes nothing")
one_line_error(exec_("--repeats", "2", "--artifact", "nothere.pt", "--", python, programs / "writes_nothing.py"), 3,
               "'nothere.pt' matched no file", "pattern matching nothing")
one_line_error(exec_(python, "x.py"), 2, "needs -- before the command", "missing --")
one_line_error(subprocess.run([binary, "exec", "--"], capture_output=True, text=True), 2, "needs a command", "no command")
one_line_error(exec_("--jobs", "2", "--artifact", "daemon.pt", "--", "true"), 2, "{trial}", "--jobs without {trial}")
(work / "stale.pt").write_bytes(b"old")
one_line_error(exec_("--artifact", "stale.pt", "--", "true"), 3, "before the first run", "stale artifact")
rep = work / "corrupt.json"
r = exec_("--repeats", "2", "--no-fix-search", "--", python, programs / "corrupt_save.py", report=rep)
if rep.exists():
    a = target(rep)["exec"]["artifacts"][0]
    check(a["kind"] == "bytes" and "compared by bytes" in a["note"], f"corrupt: {a}")
    stats = target(rep)["configs"][0]["diverged_tensors"][0]["stats"]
    check("compared by bytes" in stats["note"], f"corrupt: {stats}")

# A run that fails only sometimes is a finding: crashed in that run, exit 4, its stderr tail kept.
rep = work / "flaky.json"
r = exec_("--repeats", "3", "--", python, programs / "flaky.py", report=rep)
check(r.returncode == 4, f"flaky: exit {r.returncode}: {r.stderr[-300:]}")
if rep.exists():
    trials = target(rep)["configs"][0]["trials"]
    crashed = [t for t in trials if t["status"] == "crashed"]
    check(len(crashed) == 1 and "out of memory" in crashed[0]["stderr_tail"], f"flaky: {trials}")

# The program's own sitecustomize still runs: the hook chains to it.
chain = work / "chain"
chain.mkdir(exist_ok=True)
(chain / "sitecustomize.py").write_text(
    "import os\nif os.environ.get('REPRO_AUDIT_OUT'):\n"
    "    open(os.path.join(os.environ['REPRO_AUDIT_OUT'], 'chained.txt'), 'w').write('yes')\n")
r = subprocess.run([binary, "exec", "--repeats", "2", "--", python, programs / "writes_nothing.py"], capture_output=True, text=True,
                   cwd=work, env={**os.environ, "PYTHONPATH": str(chain)})
check(r.returncode == 0 and "chained.txt" in r.stdout, f"chain: exit {r.returncode}: {r.stdout[-300:]}{r.stderr[-300:]}")

# A saved baseline of an exec audit, checked against a new run of the same command.
base = work / "seeded.baseline.json"
r = exec_("--repeats", "2", "--save-baseline", base, "--", python, programs / "seeded_train.py")
check(r.returncode == 0 and base.exists(), f"baseline save: exit {r.returncode}: {r.stderr[-300:]}")
r = exec_("--repeats", "2", "--baseline", base, "--", python, programs / "seeded_train.py")
check(r.returncode == 0 and "match" in r.stdout, f"baseline check: exit {r.returncode}: {r.stdout[-500:]}{r.stderr[-300:]}")

# Sharded: each configuration in its own shard, then merge, as run's shards join.
for k in (1, 2):
    r = exec_("--shard", f"{k}/2", "--configs", "default,threads-1", "--repeats", "2", "--", python, programs / "seeded_train.py",
              report=work / f"shard-{k}.json")
    check(r.returncode == 0, f"shard {k}: exit {r.returncode}: {r.stderr[-300:]}")
m = subprocess.run([binary, "merge", work / "shard-1.json", work / "shard-2.json", "--report", work / "merged.json"],
                   capture_output=True, text=True)
check(m.returncode == 0, f"merge: exit {m.returncode}: {m.stderr[-300:]}")
if (work / "merged.json").exists():
    merged = json.loads((work / "merged.json").read_text())
    t = merged["targets"][0]
    check([c["config"] for c in t["configs"]] == ["default", "threads-1"] and t["kind"] == "command" and "exec" in t,
          f"merge: {[c['config'] for c in t['configs']]}")
    check(merged["command"][-2:] == [python, str(programs / "seeded_train.py")] and "--shard" not in merged["command"],
          f"merge: command {merged['command']}")

# diff reads safetensors files too, and refuses one whose header lies (the fuzz corpus's).
corpus = pathlib.Path(__file__).resolve().parent.parent / "fuzz/corpus/safetensors"
d = subprocess.run([binary, "diff", corpus / "two_tensors.safetensors", corpus / "two_tensors.safetensors"], capture_output=True, text=True)
check(d.returncode == 0 and "identical" in d.stdout, f"diff safetensors: exit {d.returncode}: {d.stdout}{d.stderr}")
for bad, words in (("overlap", "overlap"), ("wrong_length", "has 4 bytes for 3 elements"), ("huge_shape", "more elements than any file holds")):
    one_line_error(subprocess.run([binary, "diff", corpus / f"{bad}.safetensors", corpus / "two_tensors.safetensors"],
                                  capture_output=True, text=True), 3, words, f"diff {bad}.safetensors")

# 9. Interrupting exec kills every process tree it started and leaves no report.
rep = work / "interrupted.json"
marker = f"hangs-{os.getpid()}"
proc = subprocess.Popen([binary, "exec", "--report", str(rep), "--", python, programs / "hangs.py", marker], cwd=work,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
time.sleep(4)
proc.send_signal(signal.SIGINT)
_, err = proc.communicate(timeout=60)
check(proc.returncode == 130, f"interrupt: exit {proc.returncode}: {err}")
check(not rep.exists() and not list(work.glob("interrupted.json*")), "interrupt: a report was written")
time.sleep(1)
left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
check(not left, f"interrupt: processes left: {left}")

# A helper the program started in a session of its own does not outlive the audit, whether the
# audit ends or is interrupted.
marker = f"daemon-{os.getpid()}"
r = exec_("--repeats", "2", "--configs", "default", "--artifact", "daemon.pt", "--", python, programs / "daemon.py", marker)
check(r.returncode == 0, f"daemon: exit {r.returncode}: {r.stderr[-300:]}")
left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
check(not left, f"daemon: helpers left after the audit: {left}")
proc = subprocess.Popen([binary, "exec", "--repeats", "1", "--configs", "default", "--artifact", "daemon.pt", "--",
                         python, programs / "daemon.py",
                         marker + "-i", "wait"], cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
time.sleep(0.5)
for _ in range(100):  # until the helper has started
    if subprocess.run(["pgrep", "-f", marker + "-i"], capture_output=True).returncode == 0:
        break
    time.sleep(0.1)
proc.send_signal(signal.SIGINT)
_, err = proc.communicate(timeout=60)
check(proc.returncode == 130, f"daemon interrupt: exit {proc.returncode}: {err}")
time.sleep(0.5)
left = subprocess.run(["pgrep", "-f", marker + "-i"], capture_output=True, text=True).stdout.split()
check(not left, f"daemon interrupt: helpers left: {left}")

# 9b. The attention backends and cuBLAS's reduced-precision reductions reach the program through the
# hook and are read back as they were (off), the switches not named as torch starts (on).
rep = work / "sdpa.json"
r = exec_("--repeats", "2", "--configs", "sdpa.cudnn=off+sdpa.flash=off+cublas.fp16_reduction=off", "--",
          python, programs / "seeded_train.py", report=rep)
check(r.returncode == 0, f"sdpa switches: exit {r.returncode}: {r.stderr[-500:]}")
if r.returncode == 0:
    sw = {s["key"]: s for s in target(rep)["configs"][0]["switches"]}
    for key, want in (("sdpa.cudnn", "off"), ("sdpa.flash", "off"), ("cublas.fp16_reduction", "off"),
                      ("sdpa.mem_efficient", "on"), ("cublas.bf16_reduction", "on")):
        check(sw.get(key, {}).get("effective") == want, f"sdpa switches: {key} {sw.get(key)}")

# 10. Every report written above follows the shipped schema (system Python: jsonschema is a Debian package).
tests = pathlib.Path(__file__).resolve().parent.parent
written = [p.name for p in sorted(work.glob("*.json")) if not p.name.endswith(".baseline.json")]
v = subprocess.run(["/usr/bin/python3", str(tests / "validate_schema.py"), str(tests.parent / "share/schema/report-v1.schema.json"),
                    str(work), *written], capture_output=True, text=True)
check(v.returncode == 0 and len(written) >= 8, f"schema: {v.stdout[-800:]}{v.stderr[-800:]}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("exec: all checks passed")
