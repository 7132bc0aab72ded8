#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A worker run with another torch's libraries than it was built against (issue 40) says so in one
line and exits 3, through the front as well as alone: never a symbol-lookup error or a crash.

Another torch is simulated as a replaced environment gives it: a copy of the worker whose DT_RPATH
(the torch lib folder it was built against) is rewritten, at the same length, to a folder that
links to another torch's libraries. That other torch is any venv of ./dev's (REPRO_AUDIT_HOME,
venv or venv-VERSION) with another release; without one the test skips (77).

usage: test_torch_mismatch.py FRONT WORKER PYTHON WORK_FOLDER
"""
import glob
import os
import shutil
import subprocess
import sys

front, worker, python, work = sys.argv[1:5]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)


def version(py):
    r = subprocess.run([py, "-c", "import torch; print(torch.__version__.split('+')[0])"], capture_output=True,
                       text=True)
    return r.stdout.strip() if r.returncode == 0 else ""


# The worker holds no copy of torch's data (a copy relocation, cmake/TorchTargets.cmake): its size
# is fixed at build time, so another torch's libraries would make the dynamic loader print its own
# lines before the worker's. Checked here, without another torch, from the worker's relocations.
r = subprocess.run(["readelf", "-rW", worker], capture_output=True, text=True)
copies = [line.split()[4] for line in r.stdout.splitlines()
          if len(line.split()) > 4 and line.split()[2].endswith("_COPY") and
          any(name in line.split()[4] for name in ("N3c10", "N5torch", "N2at", "N6caffe2"))]
if r.returncode != 0 or copies:
    print(f"FAIL: the worker copies torch's data (readelf exit {r.returncode}): {copies[:5]}")
    sys.exit(1)

mine = version(python)
home = os.environ.get("REPRO_AUDIT_HOME") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "repro-audit")
other = None
for py in sorted(glob.glob(os.path.join(home, "venv*", "bin", "python"))):
    v = version(py)
    if v and v != mine:
        lib = glob.glob(os.path.join(os.path.dirname(os.path.dirname(py)), "lib", "python*", "site-packages", "torch",
                                     "lib"))
        if lib:
            other = (v, lib[0])
            break
if other is None:
    print(f"test_torch_mismatch: no venv with a torch other than {mine} under {home}: skipped")
    sys.exit(77)
# The copy: the RPATH string replaced by a path of the same length to a link to the other torch.
with open(worker, "rb") as f:
    data = f.read()
own = os.path.join(os.path.dirname(os.path.dirname(python)), "lib")
start = data.find(own.encode())
end = data.find(b"/torch/lib", start) + len(b"/torch/lib") if start >= 0 else -1
if start < 0 or end < len(b"/torch/lib"):
    print(f"test_torch_mismatch: no RPATH under {own} in {worker}: skipped")
    sys.exit(77)
link = os.path.join(work, "t")
os.symlink(other[1], link)
replacement = link.encode()
if len(replacement) > end - start:
    print("test_torch_mismatch: the work folder's path is longer than the RPATH: skipped")
    sys.exit(77)
replacement = replacement[:1] + b"/" * (end - start - len(replacement)) + replacement[1:]
wrapper = os.path.join(work, "repro-audit-worker")
with open(wrapper, "wb") as f:
    f.write(data[:start] + replacement + data[end:])
os.chmod(wrapper, 0o755)
failures = []


def check(what, argv, env=None):
    r = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ, **(env or {})), cwd=work,
                       timeout=300)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    ok = (r.returncode == 3 and len(lines) == 1 and
          (f"built against torch {mine} but loaded torch {other[0]}" in lines[0] or
           "cannot load the torch it was built against" in lines[0]))
    print(f"{'ok' if ok else 'FAIL'}: {what}: exit {r.returncode}: {r.stderr.strip()[:400]}")
    if not ok:
        failures.append(what)


# The worker alone (what `env`, `lint` and `diff` exec into), then through the front, whose worker
# services and preflight start it as a child.
check("worker env", [wrapper, "env"])
check("front probes", [front, "probes", "--only", "*unique-control", "--repeats", "2"],
      {"REPRO_AUDIT_WORKER": wrapper})
sys.exit(1 if failures else 0)
