#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# A full TMPDIR (issue 18): on a 1 MiB tmpfs, an audit whose trials dump 256 KiB each runs out of
# space. The user must read "no space left" (a crashed trial whose reason says so, exit 4, or a
# spec that cannot be written, exit 3), never "exited with code 3 without a result", never a crash
# of the tool, and the scratch folder must be gone afterwards. Skipped (77) where the test cannot
# mount a tmpfs (not root, no CAP_SYS_ADMIN).
#
# Usage: test_disk_full.py REPRO_AUDIT WORKDIR
import json
import os
import subprocess
import sys

from hostile_common import start

torch, TOOL, WORK = start()
FULL = os.path.join(WORK, "tmpfs")
os.makedirs(FULL)
if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", FULL], capture_output=True).returncode != 0:
    print("skipped: cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN)", file=sys.stderr)
    sys.exit(77)


class Double(torch.nn.Module):
    def forward(self, x):
        return x * 2


failures = []
try:
    model = os.path.join(WORK, "double.pt")
    torch.jit.script(Double()).save(model)
    report = os.path.join(WORK, "r.json")
    proc = subprocess.run([TOOL, "run", model, "--shape", "256x256", "--repeats", "6", "--report", report],
                          capture_output=True, env=dict(os.environ, TMPDIR=FULL), cwd=WORK)
    out, err = proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
    print(f"exit {proc.returncode}\n{err.strip()}", file=sys.stderr)
    text = (out + err).lower()
    if proc.returncode == 4:
        reasons = [t["message"] for tg in json.load(open(report))["targets"] for c in tg["configs"] for t in c["trials"]
                   if t["status"] == "crashed"]
        if not any("no space left in tmpdir" in r.lower() for r in reasons):
            failures.append(f"crashed trials should say 'no space left in TMPDIR': {reasons}")
    elif proc.returncode == 3:
        if "no space left" not in text:
            failures.append(f"exit 3 should say 'no space left': {err.strip()}")
        if os.path.exists(report):
            failures.append("no report expected with exit 3")
    else:
        failures.append(f"exit 3 or 4 expected, got {proc.returncode}")
    if "without a result" in text or "internal error" in text:
        failures.append(f"a misleading message: {err.strip()}")
    if os.listdir(FULL):
        failures.append(f"the scratch folder is left on the full disk: {os.listdir(FULL)}")
finally:
    subprocess.run(["umount", FULL])

for f in failures:
    print("FAIL:", f, file=sys.stderr)
sys.exit(1 if failures else 0)
