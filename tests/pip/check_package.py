#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The Python package (python/repro_audit) as imported from the source tree, against this build's binary
# (REPRO_AUDIT_BINARY), without the wheel that tests/pip/test_pip_install.py builds: it follows Python's
# conventions and passes on the binary's one line (issue 51 items 9 and 10).
#  - a model that is not a torch.nn.Module ('not a model', None, a lambda) is a TypeError saying what
#    is expected, raised before anything is saved or started, never an AttributeError from inside;
#  - exec('echo hi') is a TypeError naming the list form, not a command of single characters;
#  - sizes of any length reach the binary as ranges (range(1, 10**6 + 1) is "1..1000000"): the
#    binary's own one line about the budget, not "Argument list too long" blamed on starting it; a
#    list's sizes are the sizes tried; sizes that are not whole numbers are a TypeError;
#  - an argument too long for any command line is said to be one;
#  - a model whose output holds non-tensors is ReproAuditError exit 3 with the binary's line;
#  - exit 4 is ReproAuditError with the first reason ("verdict incomplete: ... SIGABRT"), which the
#    binary prints on stderr even under -q;
#  - a report's kind is read from its "kind" key, or guessed from an older file's keys, and an unknown
#    kind is ReportKindError (issue 52);
#  - the pytest plugin's report names differ for ids that differ only in punctuation. pytest is not
#    in ./dev's venv: where it is missing, the plugin module is imported over a stand-in `pytest`
#    that has only what the module uses at import time (its name computation is what is tested).
#
# usage: check_package.py REPRO_AUDIT_BINARY SOURCE_DIR WORK_FOLDER  (run with ./dev's venv Python)
import os
import pathlib
import shutil
import sys
import types

binary, source, work = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3]).resolve()
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
os.environ["REPRO_AUDIT_BINARY"] = binary
os.environ["TMPDIR"] = str(work)  # the package's and the binary's temporary folders stay in the work folder
sys.path.insert(0, str(source / "python"))

import repro_audit  # noqa: E402  (from the source tree, after sys.path is set)
import torch  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def raises(call, kind):
    """The exception `call()` raises, checked to be a `kind`; None when it raises none."""
    try:
        call()
    except Exception as e:  # noqa: BLE001  (the kind is checked below)
        check(isinstance(e, kind), f"{type(e).__name__}: {e} is a {kind.__name__}")
        print(f"{type(e).__name__}: {e}", flush=True)
        return e
    check(False, f"raises {kind.__name__}")
    return None


x = torch.randn(4, 16)

# Not a model: TypeError naming what is expected.
for bad in ("not a model", None, lambda t: t * 2):
    for function in (repro_audit.run, repro_audit.invariance):
        e = raises(lambda: function(bad, x), TypeError)
        check(e is not None and "torch.nn.Module" in str(e) and not isinstance(e, AttributeError),
              f"{function.__name__}({type(bad).__name__}): a TypeError that names torch.nn.Module")

# exec's command is a list.
e = raises(lambda: repro_audit.exec("echo hi"), TypeError)
check(e is not None and "list of arguments" in str(e), f"exec('echo hi'): a TypeError naming the list form ({e})")
e = raises(lambda: repro_audit.exec(["true"], artifacts="out.pt"), TypeError)
check(e is not None and "glob patterns" in str(e), f"exec(artifacts='out.pt'): a TypeError ({e})")


class Elementwise(torch.nn.Module):
    def forward(self, t):
        return t * 2.0 + 1.0


# A million sizes: the binary's line on its budget, exit 2.
e = raises(lambda: repro_audit.invariance(Elementwise(), x, sizes=range(1, 10**6 + 1)), repro_audit.ReproAuditError)
check(e is not None and e.exit_code == 2 and "exceeds the budget" in e.message and "\n" not in e.message,
      f"sizes=range(1, 10**6 + 1): the binary's one line on the budget, exit 2 ({e and (e.exit_code, e.message)})")
raises(lambda: repro_audit.invariance(Elementwise(), x, sizes=[1, 2.5]), TypeError)

# A list of sizes is what the binary tries; it gets them as ranges.
r = repro_audit.invariance(Elementwise(), x, sizes=[8, 1, 2, 3, 4], trace=False, fix_search=False)
tried = sorted(s for c in r.classes for s in c)
check(r.exit_code == 0 and tried == [1, 2, 3, 4, 8], f"sizes=[8, 1, 2, 3, 4]: sizes tried {tried}, exit {r.exit_code}")
check("1..4,8" in r.report["command"], f"the sizes went as ranges: {r.report['command']}")

# An argument no command line holds: said to be the arguments, not the binary.
e = raises(lambda: repro_audit.exec(["echo", "x" * (8 << 20)]), repro_audit.ReproAuditError)
check(e is not None and e.exit_code == 2 and "too long" in e.message and "cannot start" not in e.message,
      f"an 8 MB argument: 'too long', not 'cannot start' ({e and e.message[:120]})")


# Non-tensor outputs: exit 3 from the binary's preflight, with its line.
class NotTensors(torch.nn.Module):
    def forward(self, t):
        return {"a": 1, "b": "text"}


e = raises(lambda: repro_audit.run(NotTensors(), x, configs="default", repeats=2), repro_audit.ReproAuditError)
check(e is not None and e.exit_code == 3 and "not tensors" in e.message,
      f"a model returning {{'a': 1, 'b': 'text'}}: exit 3 naming it ({e and (e.exit_code, e.message)})")

# Exit 4: the first reason, from the binary's stderr under -q.
flag = work / "second-run-aborts"
script = f"import os; p = {str(flag)!r}; print('loss 1.0', flush=True)\n" \
         f"os.abort() if os.path.exists(p) else open(p, 'w').close()"
e = raises(lambda: repro_audit.exec([sys.executable, "-c", script], metrics={"loss": r"loss (\S+)"}, configs="default",
                                    repeats=2), repro_audit.ReproAuditError)
check(e is not None and e.exit_code == 4 and e.message.startswith("repro-audit: verdict incomplete: ") and
      "SIGABRT" in e.message, f"a run that aborts: exit 4 with why ({e and (e.exit_code, e.message)})")

# The report's kind: its "kind" key, or for an older file without it its keys (legacy_kind); a kind
# this package does not know is ReportKindError, never a run's Result.
from repro_audit.results import from_report  # noqa: E402

ex = repro_audit.exec([sys.executable, "-c", "print('loss 1.0')"], metrics={"loss": r"loss (\S+)"}, configs="default",
                      repeats=2)
check(r.kind == "invariance" == r.report.get("kind"), f"invariance's Result and report say its kind ({r.kind})")
check(ex.kind == "exec" == ex.report.get("kind"), f"exec's Result and report say its kind ({ex.kind})")
for result in (r, ex):
    older = {k: v for k, v in result.report.items() if k != "kind"}
    back = from_report(older, result.exit_code, result.summary, "")
    check(back.kind == result.kind and back.configs == result.configs and back.verdict == result.verdict,
          f"a {result.kind} report without \"kind\" reads as before ({back.kind})")
e = raises(lambda: from_report(dict(ex.report, kind="census-v2"), 0, "", ""), repro_audit.ReportKindError)
check(e is not None and isinstance(e, ValueError) and "'census-v2'" in str(e) and "exec" in str(e),
      f"an unknown kind: ReportKindError naming it and the kinds read ({e})")

# The pytest plugin's report names.
try:
    import pytest  # noqa: F401
except ImportError:
    sys.modules["pytest"] = types.SimpleNamespace(fixture=lambda f: f, fail=None)
from repro_audit.pytest_plugin import report_stem  # noqa: E402

a, b = report_stem("test_m.py::test_x[x+y]"), report_stem("test_m.py::test_x[x*y]")
check(a != b and a.startswith("test_m.py_test_x_x_y-") and b.startswith("test_m.py_test_x_x_y-"),
      f"ids that differ only in punctuation get two names ({a}, {b})")
check(report_stem("t.py::test_a") == report_stem("t.py::test_a"), "a test's name is the same every run")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("python package: Python's conventions, and the binary's one line in every error")
