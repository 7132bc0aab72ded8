#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A torch newer than the newest release repro-audit is tested with runs (issue 54 item 5): `env` and
every report say so in one line, and the self-test runs once, at the first use of the build, its report
kept in the user's cache folder, whose result the line then quotes.

Without a real newer torch, the bound is pretended lower: REPRO_AUDIT_TEST_TORCH_NEWEST_TESTED=<an
older release> (audit/common/torch_release.h; the tool's own tests set it), so this build's real
torch is the untested one and every line still names it. The cache is a folder of the test's
(XDG_CACHE_HOME); each command runs in an empty working folder, which must stay empty.
  * without the variable: no line, no self-test, no cache folder;
  * first command (`env`): stderr says the self-test runs, then its result; env prints the line with
    that result; its report is in <cache>/repro-audit/first-use/;
  * second command (`run`): no second self-test (the report is not rewritten); the JSON report's
    environment.torch.untested is env's line, and the text summary and Markdown open with it;
  * a value that is not a release: one line, exit 2.

usage: test_untested_torch.py FRONT PYTHON WORK_FOLDER
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys

front, python, work = os.path.abspath(sys.argv[1]), sys.argv[2], pathlib.Path(sys.argv[3]).resolve()
shutil.rmtree(work, ignore_errors=True)
cwd, cache, out = work / "cwd", work / "cache", work / "out"
for d in (cwd, cache, out):
    d.mkdir(parents=True)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def tool(*args, bound=None):
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), OMP_NUM_THREADS="1")
    env.pop("REPRO_AUDIT_TEST_TORCH_NEWEST_TESTED", None)
    if bound:
        env["REPRO_AUDIT_TEST_TORCH_NEWEST_TESTED"] = bound
    return subprocess.run([front, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=900)


torch = subprocess.run([python, "-c", "import torch; print(torch.__version__.split('+')[0])"], capture_output=True,
                       text=True).stdout.strip()
major, minor = (int(x) for x in torch.split(".")[:2])
older = f"{major}.{minor - 1}.0"  # the bound pretended: this build's torch is then one minor newer
subprocess.run([python, "-c", "import sys, torch; torch.jit.trace(torch.nn.Tanh(), torch.ones(4, 3)).save(sys.argv[1])",
                str(out / "m.pt")], check=True, capture_output=True)

# A tested torch: nothing said, nothing run, nothing kept.
p = tool("env")
check(p.returncode == 0 and "untested" not in p.stdout + p.stderr and not (cache / "repro-audit").exists(),
      f"env on a tested torch: no line, no self-test: exit {p.returncode}: {p.stderr[-600:]}")

# First use: the self-test runs, once, and env prints the line with its result.
p = tool("env", bound=older)
lines = [l for l in p.stderr.splitlines() if l.strip()]
reports = sorted((cache / "repro-audit" / "first-use").glob(f"torch-{torch}-*.json"))
untested = [l.split(":", 1)[1].strip() for l in p.stdout.splitlines() if l.startswith("torch.untested")]
check(p.returncode == 0 and len(reports) == 1, f"first use: one self-test report in the cache: {reports}: {p.stderr[-600:]}")
check(len(lines) == 2 and "running selftest --device cpu once, at its first use" in lines[0]
      and f"torch {torch} is newer than {older.rsplit('.', 1)[0]}" in lines[1],
      f"first use: one line saying the self-test runs, one with its result: {lines}")
check(len(untested) == 1 and untested[0].startswith(f"torch {torch} is newer than {major}.{minor - 1}, the newest release")
      and "REPRO_AUDIT_TEST_TORCH_NEWEST_TESTED" in untested[0]
      and "selftest at its first use here: " in untested[0] and "not run yet" not in untested[0]
      and (not reports or str(reports[0]) in untested[0]),
      f"env: one line naming the release, the bound and the self-test's result: {p.stdout[:1500]}")
if reports:
    doc = json.loads(reports[0].read_text())
    passed = all(c["passed"] for c in doc["selftest"]["checks"])
    check(("all " in untested[0] and "checks passed" in untested[0]) == passed if untested else False,
          f"the line quotes the self-test's result ({passed}): {untested}")
    stamp = reports[0].stat().st_mtime_ns

# Later uses: no second self-test; every report carries env's line.
p = tool("run", str(out / "m.pt"), "--shape", "4x3", "--configs", "default", "--repeats", "2", "--report",
         str(out / "r.json"), "--markdown", str(out / "r.md"), "--junit", str(out / "r.xml"), bound=older)
check(p.returncode == 0 and "running selftest" not in p.stderr, f"run: no second self-test: {p.stderr[-600:]}")
if reports:
    check(reports[0].stat().st_mtime_ns == stamp, "run: the first use's report was not rewritten")
if p.returncode == 0 and untested:
    report = json.loads((out / "r.json").read_text())
    check(report["environment"]["torch"].get("untested") == untested[0],
          f"run's JSON: environment.torch.untested is env's line: {report['environment']['torch']}")
    check(p.stdout.splitlines()[0] == f"warning: {untested[0]}", f"run's summary opens with the line: {p.stdout[:800]}")
    check((out / "r.md").read_text().startswith("> **warning:** torch "), "run's Markdown opens with the line")
    check('<property name="untested_torch" value="torch ' in (out / "r.xml").read_text(),
          "run's JUnit suites carry the line as a property")

# The variable takes a release, nothing else.
p = tool("env", bound="newest")
check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "name a torch release" in p.stderr,
      f"a bound that is not a release: one line, exit 2: exit {p.returncode}: {p.stderr[-400:]}")
check(not any(cwd.iterdir()), f"nothing was written in the working folder: {list(cwd.iterdir())}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
