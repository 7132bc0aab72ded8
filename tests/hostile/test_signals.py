#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Stopping the tool any way a user or a pipeline can (issue 18): SIGINT, SIGTERM, SIGHUP, SIGQUIT
# and SIGPIPE, each while trials run and right at the start (preflight, first specs), must end
# `repro-audit run` with exit 130 and one line on stderr, kill every child, leave no scratch folder
# (TMPDIR is private to the test and must be empty afterwards) and write no report. Killing the
# front outright (SIGKILL) must not leave trials running either: they die with their parent.
#
# Usage: test_signals.py REPRO_AUDIT WORKDIR   (the venv python with torch writes the model; exits
# 77, skipped, without torch).
import os
import signal
import subprocess
import sys
import time

from hostile_common import start

torch, TOOL, WORK = start()


class Slow(torch.nn.Module):
    def forward(self, x):
        for _ in range(300):
            x = torch.tanh(x @ x)
        return x


MODEL = os.path.join(WORK, "slow.pt")
torch.jit.script(Slow()).save(MODEL)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def processes_mentioning(text):
    """PIDs whose command line or environment mentions `text` (the test's private TMPDIR)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        for part in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{part}", "rb") as f:
                    if text.encode() in f.read():
                        found.append(int(pid))
                        break
            except OSError:
                pass
    return found


def wait_until(predicate, limit_s=60.0):
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def start(tmp, repeats, report):
    env = dict(os.environ, TMPDIR=tmp)
    return subprocess.Popen([TOOL, "run", MODEL, "--shape", "128x128", "--repeats", str(repeats), "--jobs", "2",
                             "--report", report], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=WORK)


def children_running(tmp):
    return [p for p in processes_mentioning(tmp) if b"__child" in open(f"/proc/{p}/cmdline", "rb").read()]


for sig in [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE]:
    for phase in ["trials", "start"]:
        name = f"{sig.name} during {phase}"
        tmp = os.path.join(WORK, f"tmp-{sig.name}-{phase}")
        os.makedirs(tmp)
        report = os.path.join(WORK, f"report-{sig.name}-{phase}.json")
        # A million repeats: specs are written as trials start, so nothing piles up before the signal.
        proc = start(tmp, 1000000 if phase == "start" else 40, report)
        if phase == "trials":
            check(wait_until(lambda: len(children_running(tmp)) > 0), f"{name}: trials started")
            time.sleep(0.3)
        else:
            time.sleep(0.2)
        proc.send_signal(sig)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            check(False, f"{name}: the tool did not stop within 60 s")
        lines = err.decode(errors="replace").strip().splitlines()
        print(f"{name:28} exit {proc.returncode}  {lines[-1] if lines else ''}", file=sys.stderr)
        check(proc.returncode == 130, f"{name}: exit 130 expected, got {proc.returncode}")
        check(lines == ["repro-audit: interrupted"], f"{name}: one line 'repro-audit: interrupted', got {lines}")
        check(not os.path.exists(report), f"{name}: no report expected")
        check(wait_until(lambda: not processes_mentioning(tmp), 10), f"{name}: children left: {processes_mentioning(tmp)}")
        check(os.listdir(tmp) == [], f"{name}: the scratch folder is left: {os.listdir(tmp)}")

# SIGKILL cannot be handled: the front dies at once, but its trials must die with it.
tmp = os.path.join(WORK, "tmp-SIGKILL")
os.makedirs(tmp)
proc = start(tmp, 40, os.path.join(WORK, "report-kill.json"))
check(wait_until(lambda: len(children_running(tmp)) > 0), "SIGKILL: trials started")
proc.kill()
proc.communicate()
check(wait_until(lambda: not children_running(tmp), 10), f"SIGKILL: trials outlived their parent: {children_running(tmp)}")
print(f"{'SIGKILL during trials':28} trials left: {len(children_running(tmp))}", file=sys.stderr)

if failures:
    print(f"{len(failures)} failure(s)", file=sys.stderr)
    sys.exit(1)
print("every stop signal: exit 130, no child, no scratch, no report", file=sys.stderr)
