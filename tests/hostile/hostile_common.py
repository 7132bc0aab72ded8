# SPDX-License-Identifier: Apache-2.0
# What the hostile-input test scripts share: they need the venv's torch (to write models and ask
# torch.load), and take the binary and a work folder on the command line.
import os
import shutil
import sys
import warnings


failures = []


def check(cond, what):
    """Records a failure (the script exits 1 at its end when `failures` is not empty)."""
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def start(fresh=True):
    """(torch, absolute path of the tool, work folder); exits 77 (skipped) where torch is missing."""
    try:
        import torch
    except ImportError:
        print("skipped: this python has no torch", file=sys.stderr)
        sys.exit(77)
    warnings.filterwarnings("ignore")  # torch warns that numpy is missing
    tool, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if fresh:
        shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work, exist_ok=True)
    return torch, tool, work


# Peak memory comes from wait4 in a small intermediate process: a child forked from a python that
# holds torch would inherit its high-water mark across exec, and count it as its own. wait4 counts
# the tool, the worker it execs and the children it waits for.
_MEASURE = """
import json, os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    json.dump({"rc": os.waitstatus_to_exitcode(status), "maxrss": usage.ru_maxrss * 1024}, f)
"""


def run_measured(argv, work, env=None, timeout=None):
    """Runs argv in `work`: (exit code, stdout, stderr, peak resident bytes of it and its children)."""
    import json
    import subprocess

    result = os.path.join(work, "measure.json")
    proc = subprocess.run(["/usr/bin/python3", "-S", "-c", _MEASURE, result] + argv, capture_output=True, cwd=work,
                          env=env, timeout=timeout)
    with open(result) as f:
        r = json.load(f)
    return r["rc"], proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"), r["maxrss"]


def with_deflated_entry(archive_bytes, entry_suffix, claim):
    """The zip `archive_bytes` with the entry whose name ends in `entry_suffix` rewritten deflated:
    its bytes, then zeros, `claim` bytes in all (a megabyte deflated per GiB claimed)."""
    import io
    import zipfile

    src = zipfile.ZipFile(io.BytesIO(archive_bytes))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for info in src.infolist():
            data = src.read(info.filename)
            if not info.filename.endswith(entry_suffix):
                z.writestr(info, data)
                continue
            bomb = zipfile.ZipInfo(info.filename)
            bomb.compress_type = zipfile.ZIP_DEFLATED
            with z.open(bomb, "w", force_zip64=True) as f:
                f.write(data)
                left = claim - len(data)
                while left > 0:
                    f.write(bytes(min(left, 8 << 20)))
                    left -= min(left, 8 << 20)
    return out.getvalue()
