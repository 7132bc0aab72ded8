#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `repro-audit exec` against what a command can do to the audit (issue 28, defects 2 and 6), through
# the binary, with a private TMPDIR that must be empty after each audit:
#  - a long stdout line (std::regex crashed from about 50 KB): the metric is extracted, and a line
#    over the 64 KiB cap is matched on its first 64 KiB with a note on stderr;
#  - patterns RE2 refuses (backreference, lookahead): one line, exit 2, naming the feature;
#  - a process that clears its environment and leaves its session (env -i setsid sleep) does not
#    outlive the audit, whether trials get a cgroup each or the fallback (REPRO_AUDIT_CGROUP=off),
#    and whether the audit ends or is interrupted.
# Any leftover the test finds is killed by its pid, so that the machine is left as it was.
#
# usage: test_exec_stdout_and_trees.py REPRO_AUDIT_BINARY WORK_FOLDER
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
tmp = work / "tmp"
tmp.mkdir(parents=True)
python = sys.executable
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def env(**extra):
    return {**os.environ, "TMPDIR": str(tmp), **extra}


def exec_(*args, extra_env=None, timeout=300):
    return subprocess.run([binary, "exec", *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=work,
                          env=env(**(extra_env or {})))


def scratch_left(what):
    left = sorted(p.name for p in tmp.iterdir())
    check(not left, f"{what}: left in TMPDIR: {left}")
    for p in tmp.iterdir():
        shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink()


def one_line_error(r, code, words, what):
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check(r.returncode == code, f"{what}: exit {r.returncode}, wanted {code}: {r.stderr[-300:]}")
    check(len(lines) == 1 and lines[0].startswith("repro-audit: ") and words in lines[0], f"{what}: stderr {lines}")


def processes_with_argv(argv):
    """PIDs whose command line is exactly `argv`."""
    want = b"\0".join(a.encode() for a in argv) + b"\0"
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read() == want:
                    found.append(int(pid))
        except OSError:
            pass
    return found


def no_leftover(argv, what):
    """Checks that no process runs `argv`; kills (by pid) any the audit left."""
    left = []
    for _ in range(20):  # a SIGKILLed process may take a moment to leave /proc
        left = processes_with_argv(argv)
        if not left:
            break
        time.sleep(0.1)
    check(not left, f"{what}: left running: {left} {argv}")
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


# 1. Defect 2: a 50 KB stdout line, the reproducer (std::regex overflowed its stack: 139).
rep = work / "long.json"
r = exec_("--repeats", "2", "--report", rep, "--metric", "loss=loss=(.*)", "--",
          python, "-c", "print('loss=0.5 tensor(['+'0.1234, '*6250+'])')")
check(r.returncode == 0, f"long line: exit {r.returncode}: {r.stderr[-500:]}")
if rep.exists():
    m = json.loads(rep.read_text())["targets"][0]["exec"]["metrics"][0]
    check(m["name"] == "loss" and m["occurrences"] == 1, f"long line: metric {m}")
check("only the first" not in r.stderr, f"long line: a 50 KB line was cut: {r.stderr[-300:]}")
scratch_left("long line")

# A 200 KB line, over the cap: matched on its first 64 KiB, with one note per run; the value is
# still compared (here it diverges after the cap, which the audit cannot see, and says so).
rep = work / "longer.json"
r = exec_("--repeats", "2", "--report", rep, "--metric", r"loss=loss=([0-9.]+)", "--metric", "tail=x(.*)", "--",
          python, "-c", "import os; print('loss=0.25 x' + 'y'*200000 + os.environ['REPRO_AUDIT_TRIAL'])")
check(r.returncode == 0, f"longer line: exit {r.returncode}: {r.stderr[-500:]}")
notes = [l for l in r.stderr.splitlines() if "longer than 64 KiB" in l]
check(len(notes) == 2 and "first 65536 bytes" in notes[0], f"longer line: notes {notes}")
if rep.exists():
    ms = {m["name"]: m for m in json.loads(rep.read_text())["targets"][0]["exec"]["metrics"]}
    check(ms["loss"]["occurrences"] == 1 and ms["tail"]["occurrences"] == 1, f"longer line: metrics {ms}")
scratch_left("longer line")

# 100 MB of stdout in lines, read in chunks (reading it whole peaked at 413 MB).
r = exec_("--repeats", "2", "--metric", r"loss=loss=([0-9.]+)", "--",
          python, "-c", "import sys\nfor i in range(100000): sys.stdout.write('loss=0.5 ' + 'z'*1000 + '\\n')")
check(r.returncode == 0, f"100 MB: exit {r.returncode}: {r.stderr[-500:]}")
scratch_left("100 MB")

# Patterns RE2 does not run: one line, exit 2, the feature named.
one_line_error(exec_("--metric", r"x=(a)\1", "--", "true"), 2, "a backreference (\\1)", "backreference")
one_line_error(exec_("--metric", "x=loss(?=[0-9])", "--", "true"), 2, "a lookahead", "lookahead")
one_line_error(exec_("--metric", "x=([0-9", "--", "true"), 2, "does not compile", "bad regex")
scratch_left("patterns")

# 2. Defect 6: a process that clears its environment and leaves its session, in each run, does
# not outlive the audit: with a cgroup per trial where the machine allows it, and with the fallback.
for mode, extra in (("default", {}), ("fallback", {"REPRO_AUDIT_CGROUP": "off"})):
    sleep = ["sleep", f"{7703 + os.getpid() % 1000}{len(mode)}"]
    r = exec_("--repeats", "2", "--", "sh", "-c", f"env -i setsid {' '.join(sleep)} & echo a > $REPRO_AUDIT_OUT/a",
              extra_env=extra)
    check(r.returncode == 0, f"env -i setsid ({mode}): exit {r.returncode}: {r.stderr[-300:]}")
    no_leftover(sleep, f"env -i setsid ({mode})")
    # The same two levels down: a double fork whose middle process ends at once.
    sleep2 = [sleep[0], sleep[1] + "2"]
    r = exec_("--repeats", "2", "--", "sh", "-c",
              f"env -i setsid sh -c '{' '.join(sleep2)} >/dev/null 2>&1 &' ; echo a > $REPRO_AUDIT_OUT/a", extra_env=extra)
    check(r.returncode == 0, f"double fork ({mode}): exit {r.returncode}: {r.stderr[-300:]}")
    no_leftover(sleep2, f"double fork ({mode})")
    scratch_left(f"env -i setsid ({mode})")

    # Interrupted while the run and its escaped helper live.
    sleep3 = [sleep[0], sleep[1] + "3"]
    proc = subprocess.Popen([binary, "exec", "--repeats", "1", "--", "sh", "-c",
                             f"env -i setsid {' '.join(sleep3)} & sleep 600"],
                            cwd=work, env=env(**extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(300):  # until the helper has started
        if processes_with_argv(sleep3):
            break
        time.sleep(0.05)
    check(bool(processes_with_argv(sleep3)), f"interrupt ({mode}): the helper never started")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    check(proc.returncode == 130, f"interrupt ({mode}): exit {proc.returncode}: {err[-300:]}")
    no_leftover(sleep3, f"interrupt ({mode})")
    scratch_left(f"interrupt ({mode})")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("exec stdout and process trees: all checks passed")
