#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `pip install --no-build-isolation` into a fresh environment, and everything a user then does from
# that environment only: `repro-audit selftest --device cpu`, repro_audit.run and .invariance on model
# objects (check_api.py), the pytest plugin (pytest_models.py: two tests pass, the batch-variant
# Linear fails with its classes in the message, reports are written, `-p no:repro_audit` turns it
# off), the launcher against another torch version (one line, exit 2), the RPATH, and an uninstall
# that leaves the environment as it was.
#
# How torch gets into the fresh venv without a second download: ./dev's venv holds the pinned torch
# (pip's cache may not: ./dev installs with whatever cache the machine has), and a copy of a CUDA
# torch is ~4 GB. So the new site-packages gets links to ./dev's `torch` and `nvidia` folders (the
# binaries' RPATH looks for site-packages/torch/lib, and libtorch_cpu's own RPATH for
# site-packages/nvidia) and a .pth line with ./dev's site-packages for torch's pure-Python
# dependencies (sympy, numpy ...). pip treats what the .pth shows as outside the environment and never
# uninstalls it. scikit-build-core and pytest come from PyPI (pip's cache after the first run).
#
# The other torch is faked: a folder on PYTHONPATH with a `torch` package holding only version.py,
# which the launcher reads as text (it never imports torch); nothing is installed for it.
#
# Cost: the build is the expensive part. It builds in BUILD_DIR-pip (a sibling of the ctest build
# folder, at the same depth under the source tree), so with CCACHE_BASEDIR (cmake/Ccache.cmake) and
# the same real torch path its compile lines equal the ctest build's and ccache hits them. Measured on
# the shared 2-core machine under load: the whole test 6.6 min, of which pip install 164 s with a warm
# ccache, 115 s of it nvcc for the CUDA digest module (ccache is not nvcc's launcher). With no compiler
# cache (CCACHE_DISABLE=1, an idle 2-core AMD EPYC, 2026-11-29): pip install 259 s, the test 310 s.
#
# usage: test_pip_install.py SOURCE_DIR BUILD_DIR WORK_FOLDER  (run with ./dev's venv Python)
import os
import pathlib
import shutil
import subprocess
import sys
import time

SCIKIT_BUILD_CORE = "scikit-build-core==1.1.2"
PYTEST = "pytest==9.2.0"

source, build_dir, work = (pathlib.Path(a).resolve() for a in sys.argv[1:4])
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def sh(cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    p = subprocess.run([str(c) for c in cmd], **kw)
    print(f"$ {' '.join(str(c) for c in cmd)}  -> {p.returncode}\n{(p.stdout or '')[-12000:]}{(p.stderr or '')[-3000:]}",
          flush=True)
    return p


def tree(root):
    """Every path under root, without following links (torch's folder is one)."""
    out = set()
    for here, dirs, files in os.walk(root):
        out.update(os.path.relpath(os.path.join(here, n), root) for n in dirs + files)
    return out


shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
venv = work / "venv"
sh([sys.executable, "-m", "venv", venv])
py = venv / "bin" / "python"
site = pathlib.Path(sh([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
dev_site = pathlib.Path(subprocess.check_output(
    [sys.executable, "-c", "import importlib.util, pathlib; "
     "print(pathlib.Path(importlib.util.find_spec('torch').origin).parent.parent)"], text=True).strip())
for name in ("torch", "nvidia"):
    if (dev_site / name).exists():
        (site / name).symlink_to(dev_site / name)
(site / "repro-audit-dev-venv.pth").write_text(f"{dev_site}\n")

pip = [py, "-m", "pip", "--disable-pip-version-check"]
p = sh([*pip, "install", "-q", SCIKIT_BUILD_CORE, PYTEST])
if p.returncode != 0:
    print(f"FAIL: pip could not install {SCIKIT_BUILD_CORE} and {PYTEST} from PyPI or its cache")
    sys.exit(1)

# A missing Debian package: one line with the apt command (configure only; CLI11 hidden from CMake).
p = sh(["cmake", "-S", source, "-B", work / "no-cli11", "-G", "Ninja", "-DSKBUILD=ON", f"-DPython_EXECUTABLE={py}",
        "-DRA_TESTS=OFF", "-DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON"])
check(p.returncode != 0 and any(line.startswith("repro-audit needs Debian packages") and
                                line.endswith("sudo apt-get install libcli11-dev") for line in p.stderr.splitlines()),
      "a missing Debian package is one line with the apt command")

before = tree(venv)
pip_build = pathlib.Path(f"{build_dir}-pip")
# A fresh build folder each run, as in CI's clone: one kept from an earlier configure once hid a
# target the wheel installs but pip's build no longer built (ccache keeps the cost down).
shutil.rmtree(pip_build, ignore_errors=True)
start = time.monotonic()
p = sh([*pip, "install", "--no-build-isolation", "-C", f"build-dir={pip_build}", source])
print(f"pip install took {time.monotonic() - start:.0f} s", flush=True)
if p.returncode != 0:
    print("FAIL: pip install --no-build-isolation")
    sys.exit(1)
installed = site / "repro_audit"
front, worker = installed / "bin" / "repro-audit", installed / "libexec" / "repro-audit" / "repro-audit-worker"
check(front.exists() and worker.exists(), "the front and the worker are inside the package")
check((installed / "share" / "repro-audit" / "knowledge" / "ops.json").exists(), "share/ is inside the package")
# The fused CUDA digest, where this machine's build makes one (CUDA toolkit and a CUDA torch): beside
# the worker, since pip builds only the targets pyproject.toml names.
if (pip_build / "repro-audit-digest-cuda.so").exists():
    check((worker.parent / "repro-audit-digest-cuda.so").exists(), "the CUDA digest module is beside the worker")

# The RPATH: relative to the worker's folder, to site-packages/torch/lib; no absolute path.
dyn = sh(["readelf", "-d", worker]).stdout
runpath = [line.split("[", 1)[1].rstrip("]") for line in dyn.splitlines() if "RUNPATH" in line or "RPATH" in line]
check(runpath == ["$ORIGIN/../../../torch/lib"], f"the worker's RPATH is $ORIGIN/../../../torch/lib ({runpath})")
check("libtorch" not in sh(["readelf", "-d", front]).stdout, "the front links no LibTorch")

# From the venv only: its PATH, no LD_LIBRARY_PATH, no REPRO_AUDIT_* variables.
env = {k: v for k, v in os.environ.items()
       if not k.startswith(("REPRO_AUDIT", "LD_LIBRARY_PATH", "PYTHON", "VIRTUAL_ENV"))}
env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
env["PYTHONDONTWRITEBYTECODE"] = "1"
launcher = venv / "bin" / "repro-audit"
p = sh([launcher, "selftest", "--device", "cpu"], env=env)
check(p.returncode == 0, f"repro-audit selftest --device cpu exits 0 ({p.returncode})")

p = sh([py, source / "tests/pip/check_api.py", work], env=env)
check(p.returncode == 0, "repro_audit.run and repro_audit.invariance (check_api.py)")

# The pytest plugin, on a copy of the test file in the work folder (pytest writes nothing in the source).
cases = work / "plugin"
cases.mkdir()
shutil.copy(source / "tests/pip/pytest_models.py", cases / "test_models.py")
(cases / "pytest.ini").write_text("[pytest]\n")  # the rootdir, so that test ids (and report names) start here
reports = work / "plugin-reports"
p = sh([py, "-m", "pytest", "-p", "no:cacheprovider", "-rA", cases / "test_models.py", "--repro-audit-reports", reports],
       env=env, cwd=cases)
out = p.stdout
check("PASSED test_models.py::test_elementwise_is_batch_invariant" in out,
      "pytest: the elementwise model is batch-invariant")
check("PASSED test_models.py::test_linear_is_reproducible" in out, "pytest: the Linear layer is reproducible")
check("PASSED test_models.py::test_scaled_is_reproducible[x+y]" in out and
      "PASSED test_models.py::test_scaled_is_reproducible[x*y]" in out, "pytest: the parametrized tests pass")
check("FAILED test_models.py::test_linear_is_batch_invariant" in out, "pytest: the Linear layer is not batch-invariant")
check(p.returncode == 1, f"pytest exits 1 on the failing test ({p.returncode})")


def written(stem, ext="json"):
    """The reports of the test whose id reads `stem`: STEM-<8 hex digits of the id's hash>.EXT."""
    return sorted(reports.glob(f"{stem}-[0-9a-f]*.{ext}"))


linear = (written("test_models.py_test_linear_is_batch_invariant") or [reports / "missing.json"])[0]
check(linear.exists(), f"the failing test's JSON report is in {reports}")
for stem in ("test_models.py_test_elementwise_is_batch_invariant", "test_models.py_test_linear_is_reproducible"):
    for ext in ("json", "xml", "md"):
        check(len(written(stem, ext)) == 1, f"report {stem}-*.{ext} written")
# Ids that differ only in punctuation (x+y, x*y) read alike, and keep a report each.
for ext in ("json", "xml", "md"):
    check(len(written("test_models.py_test_scaled_is_reproducible_x_y", ext)) == 2,
          f"test_scaled_is_reproducible[x+y] and [x*y]: two {ext} reports, not one overwritten")
if linear.exists():
    import json
    doc = json.loads(linear.read_text())
    classes = [c["sizes"] for c in doc["invariance"]["configs"][0]["classes"]]
    # The CLI's notation: a…b for a run of three or more sizes consecutive among those tried.
    tried = sorted(x for c in classes for x in c)
    def run_text(sizes):
        idx = [tried.index(x) for x in sizes]
        runs, cur = [], [sizes[0]]
        for a, b, x in zip(idx, idx[1:], sizes[1:]):
            if b == a + 1:
                cur.append(x)
            else:
                runs.append(cur)
                cur = [x]
        runs.append(cur)
        return ",".join(f"{r[0]}…{r[-1]}" if len(r) > 2 else ",".join(map(str, r)) for r in runs)
    named = " | ".join("{" + run_text(sorted(c)) + "}" for c in classes)
    check(len(classes) > 1 and f"classes {named}" in out, f"the failure names the report's classes '{named}'")
    trace = doc["invariance"]["configs"][0].get("trace") or {}
    check(trace.get("outcome") == "found" and f"first differing op {trace.get('op')}" in out,
          f"the failure names the first differing op ({trace.get('op')})")
    conclusion = (doc["invariance"].get("fix") or {}).get("conclusion", "")
    check(conclusion and conclusion in out, f"the failure names the fix search's conclusion ({conclusion[:80]})")

p = sh([py, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:repro_audit", cases / "test_models.py"], env=env, cwd=cases)
check(p.returncode != 0 and "fixture 'repro_audit' not found" in p.stdout, "-p no:repro_audit turns the plugin off")

# Another torch: one line on stderr, exit 2, before the binary starts.
fake = work / "other-torch" / "torch"
fake.mkdir(parents=True)
(fake / "__init__.py").write_text("raise ImportError('the launcher must not import torch')\n")
(fake / "version.py").write_text("__version__ = '2.99.0'\n")
p = sh([launcher, "env"], env={**env, "PYTHONPATH": str(fake.parent)})
lines = p.stderr.strip().splitlines()
check(p.returncode == 2 and len(lines) == 1 and "2.99.0" in lines[0] and "reinstall" in lines[0],
      f"another torch: one line, exit 2 ({p.returncode}: {p.stderr!r})")

# Uninstall: the environment is as it was before the install.
p = sh([*pip, "uninstall", "-y", "repro-audit"])
left = sorted(tree(venv) - before)
check(p.returncode == 0 and not left, f"pip uninstall removes every installed file (left: {left[:10]})")

print(f"{len(failures)} failed" if failures else "pip install: all checks passed")
sys.exit(1 if failures else 0)
