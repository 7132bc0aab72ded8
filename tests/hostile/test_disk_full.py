#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# A full TMPDIR (issues 12 and 18), on a 1 MiB tmpfs, three ways:
#   - the dumps do not fit (each trial's tensors are 8 MiB): a dump only feeds divergence
#     statistics, so the audit still completes with its verdict, and says once on stderr that the
#     tensors could not be dumped and why;
#   - the results do not fit (a model with 400 parameters, 24 KiB left): the trials are crashed
#     with the reason "no space left in TMPDIR", exit 4, in a complete report;
#   - nothing fits (the disk is full before the audit): "no space left", exit 3, no report;
#   - invariance: the worker that cannot write its files says "no space left in TMPDIR", exit 3,
#     never the last line the model printed (issue 39);
#   - exec: a command that cannot write its outputs, or an artifact that cannot be taken, says "no
#     space left" and where (issue 28), exit 3.
# Never "exited with code 3 without a result", never a crash of the tool, and the scratch folder
# is gone afterwards. Skipped (77) where the test cannot mount a tmpfs (not root, no CAP_SYS_ADMIN).
#
# Usage: test_disk_full.py REPRO_AUDIT WORKDIR
import json
import os
import subprocess
import sys

from hostile_common import start

torch, TOOL, WORK = start()
FULL = os.path.join(WORK, "tmpfs")
if os.path.ismount(FULL):  # left by a run that was killed before its clean-up
    subprocess.run(["umount", FULL])
os.makedirs(FULL, exist_ok=True)
if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", FULL], capture_output=True).returncode != 0:
    print("skipped: cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN)", file=sys.stderr)
    sys.exit(77)


class Double(torch.nn.Module):
    def forward(self, x):
        return x * 2


class Many(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ps = torch.nn.ParameterList([torch.nn.Parameter(torch.full([1], float(i))) for i in range(400)])

    def forward(self, x):
        acc = x
        for p in self.ps:
            acc = acc + p
        return acc


failures = []


def audit(name, model, shape, filler_kib=0):
    """Runs `run MODEL --shape SHAPE` with TMPDIR on the tmpfs (after a filler file of FILLER_KIB
    KiB); returns (exit code, stderr, the report or None). Checks what every case must give."""
    filler = os.path.join(FULL, "filler")
    if filler_kib:
        with open(filler, "wb") as f:
            try:
                f.write(b"\0" * (filler_kib << 10))
            except OSError:
                pass
    report = os.path.join(WORK, name + ".json")
    proc = subprocess.run([TOOL, "run", model, "--shape", shape, "--repeats", "3", "--report", report],
                          capture_output=True, env=dict(os.environ, TMPDIR=FULL), cwd=WORK)
    err = proc.stderr.decode(errors="replace")
    print(f"{name}: exit {proc.returncode}\n{err.strip()}", file=sys.stderr)
    text = (proc.stdout.decode(errors="replace") + err).lower()
    if "without a result" in text or "internal error" in text:
        failures.append(f"{name}: a misleading message: {err.strip()}")
    left = [f for f in os.listdir(FULL) if f != "filler"]
    if left:
        failures.append(f"{name}: the scratch folder is left on the full disk: {left}")
    if os.path.exists(filler):
        os.remove(filler)
    rep = json.load(open(report)) if os.path.exists(report) else None
    return proc.returncode, err, rep


try:
    double = os.path.join(WORK, "double.pt")
    torch.jit.script(Double()).save(double)
    many = os.path.join(WORK, "many.pt")
    torch.jit.script(Many()).save(many)

    code, err, rep = audit("dumps", double, "1024x2048")
    if code != 0 or rep is None or rep["verdict"] != "reproducible":
        failures.append(f"dumps: the audit should complete as reproducible, got exit {code}")
    if "could not be dumped" not in err or "no space left on device" not in err.lower():
        failures.append("dumps: stderr should say once that the tensors could not be dumped, and why")
    elif err.count("could not be dumped") != 1:
        failures.append("dumps: the warning should appear once, not per trial")

    code, err, rep = audit("results", many, "4", filler_kib=1000)
    reasons = [t["message"] for tg in (rep or {}).get("targets", []) for c in tg["configs"] for t in c["trials"]
               if t["status"] == "crashed"]
    if code == 4:
        if not reasons or not all("no space left in tmpdir" in r.lower() for r in reasons):
            failures.append(f"results: crashed trials should say 'no space left in TMPDIR': {reasons}")
    elif code != 3 or "no space left" not in err.lower():
        failures.append(f"results: exit 4 with crashed trials (or 3 saying 'no space left') expected, got {code}")

    code, err, rep = audit("nothing", double, "4", filler_kib=1024)
    if code != 3 or "no space left" not in err.lower() or rep is not None:
        failures.append(f"nothing: exit 3 saying 'no space left' and no report expected, got {code}: {err.strip()}")

    # invariance (issue 39): the worker that cannot write its files is named with the full disk, never
    # with the last line the model printed.
    class Chatty(torch.nn.Module):
        def forward(self, x):
            print("a line the model printed")
            return x * 2

    chatty = os.path.join(WORK, "chatty.pt")
    torch.jit.script(Chatty()).save(chatty)
    rows = os.path.join(WORK, "rows.pt")
    torch.save(torch.randn(64, 8), rows)
    with open(os.path.join(FULL, "filler"), "wb") as f:
        try:
            f.write(b"\0" * (1000 << 10))
        except OSError:
            pass
    proc = subprocess.run([TOOL, "invariance", chatty, "--input", rows, "--configs", "default", "--no-fix-search"],
                          capture_output=True, env=dict(os.environ, TMPDIR=FULL), cwd=WORK)
    err = proc.stderr.decode(errors="replace")
    print(f"invariance: exit {proc.returncode}\n{err.strip()}", file=sys.stderr)
    os.remove(os.path.join(FULL, "filler"))
    if proc.returncode != 3 or "no space left in TMPDIR" not in err or "a line the model printed" in err:
        failures.append(f"invariance: exit 3 saying 'no space left in TMPDIR' expected, got {proc.returncode}: "
                        f"{err.strip()}")
    left = [f for f in os.listdir(FULL) if f != "filler"]
    if left:
        failures.append(f"invariance: the scratch folder is left on the full disk: {left}")

    # exec (issue 28, defect 10): a command that cannot write to $REPRO_AUDIT_OUT (in TMPDIR), and an
    # artifact that cannot be moved from the working directory into the full scratch folder, say
    # so: not "exited with code 1", not "Input/output error".
    def exec_audit(name, args, filler_kib=0):
        filler = os.path.join(FULL, "filler")
        if filler_kib:
            with open(filler, "wb") as f:
                f.write(b"\0" * (filler_kib << 10))
        wd = os.path.join(WORK, name)
        os.makedirs(wd, exist_ok=True)
        proc = subprocess.run([TOOL, "exec", "--repeats", "2", "--configs", "default"] + args, capture_output=True,
                              env=dict(os.environ, TMPDIR=FULL), cwd=wd)
        err = proc.stderr.decode(errors="replace")
        print(f"{name}: exit {proc.returncode}\n{err.strip()}", file=sys.stderr)
        left = [f for f in os.listdir(FULL) if f != "filler"]
        if left:
            failures.append(f"{name}: the scratch folder is left on the full disk: {left}")
        if os.path.exists(filler):
            os.remove(filler)
        return proc.returncode, err

    code, err = exec_audit("exec-out", ["--", "sh", "-c", "head -c 2000000 /dev/zero > $REPRO_AUDIT_OUT/a"])
    if code != 3 or "no space left in TMPDIR" not in err or "exited with code" in err:
        failures.append(f"exec-out: exit 3 saying 'no space left in TMPDIR' expected, got {code}: {err.strip()}")
    code, err = exec_audit("exec-take", ["--artifact", "out.bin", "--", "sh", "-c",
                                         "head -c 400000 /dev/urandom > out.bin"], filler_kib=500)
    if code != 3 or "no space left in " not in err or "while taking artifact 'out.bin'" not in err \
            or "Input/output error" in err:
        failures.append(f"exec-take: exit 3 saying 'no space left in ... while taking artifact' expected, got {code}: "
                        f"{err.strip()}")
finally:
    subprocess.run(["umount", FULL])

for f in failures:
    print("FAIL:", f, file=sys.stderr)
sys.exit(1 if failures else 0)
