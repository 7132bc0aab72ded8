# SPDX-License-Identifier: Apache-2.0
"""The pytest plugin (entry point pytest11 "repro_audit"; `pytest -p no:repro_audit` turns it off).

    def test_rows_are_batch_invariant(repro_audit):
        model = torch.nn.Sequential(torch.nn.LayerNorm(256), torch.nn.GELU())
        repro_audit.assert_batch_invariant(model, torch.randn(20, 256), sizes=[1, 2, 3, 4, 8])

The fixture's assertions run the binary through the API (api.py) and fail the test with the report's
own findings: the classes of batch sizes, the first differing op and the fix, then the binary's
summary as the CLI prints it. With --repro-audit-reports DIR (or the ini option repro_audit_reports)
each assertion writes its JSON, JUnit and Markdown reports there, named after the test (report_stem)."""
from __future__ import annotations

import hashlib
import pathlib
import re

import pytest

from . import api
from .results import Result


def pytest_addoption(parser):
    group = parser.getgroup("repro_audit", "repro-audit: reproducibility and batch invariance of models")
    group.addoption("--repro-audit-reports", metavar="DIR", default=None,
                    help="write each repro_audit assertion's JSON, JUnit and Markdown reports into DIR")
    group.addoption("--repro-audit-device", metavar="DEVICE", default=None,
                    help="the device the audits run on (cpu, cuda, cuda:N); default: the tool's")
    parser.addini("repro_audit_reports", "folder for each repro_audit assertion's reports", default="")
    parser.addini("repro_audit_device", "the device repro_audit assertions run on", default="")


def report_stem(nodeid: str) -> str:
    """The reports' file name for a test: its id with every run of punctuation made one "_", then
    "-" and 8 hex digits of the id's SHA-256, since ids that differ only in punctuation
    (test_x[a-b] and test_x[a+b]) would otherwise share, and overwrite, one file."""
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")
    return f"{readable}-{hashlib.sha256(nodeid.encode()).hexdigest()[:8]}"


class Auditor:
    """What the `repro_audit` fixture gives a test."""

    def __init__(self, name: str, reports: pathlib.Path | None, device: str | None):
        self._name, self._reports, self._device, self._count = name, reports, device, 0

    def _files(self) -> dict:
        if self._reports is None:
            return {}
        self._count += 1
        stem = self._name + ("" if self._count == 1 else f"-{self._count}")
        self._reports.mkdir(parents=True, exist_ok=True)
        return {k: str(self._reports / f"{stem}.{ext}") for k, ext in (("report", "json"), ("junit", "xml"),
                                                                        ("markdown", "md"))}

    def _check(self, result: Result, what: str) -> Result:
        if not result.ok:
            pytest.fail(f"repro-audit: {what}: {result.describe()}\n\n{result.summary}", pytrace=False)
        return result

    def assert_reproducible(self, model, inputs, **kwargs) -> Result:
        """Fails the test unless `repro-audit run` finds the model bitwise reproducible under every
        configuration (kwargs as repro_audit.run's; trace defaults to on, to name the first op)."""
        kwargs.setdefault("trace", True)
        kwargs.setdefault("device", self._device)
        return self._check(api.run(model, inputs, **kwargs, **self._files()), "not reproducible")

    def assert_batch_invariant(self, model, rows, sizes=None, **kwargs) -> Result:
        """Fails the test unless `repro-audit invariance` finds every row's result independent of the
        batch it shares, over `sizes` (kwargs as repro_audit.invariance's)."""
        kwargs.setdefault("device", self._device)
        return self._check(api.invariance(model, rows, sizes=sizes, **kwargs, **self._files()), "not batch-invariant")


@pytest.fixture
def repro_audit(request) -> Auditor:
    """Assertions that a model is reproducible or batch-invariant, judged by the repro-audit binary."""
    config = request.config
    # The command line's folder is relative to where pytest was started, the ini file's to the rootdir.
    folder = None
    if config.getoption("--repro-audit-reports"):
        folder = pathlib.Path(config.invocation_params.dir) / config.getoption("--repro-audit-reports")
    elif config.getini("repro_audit_reports"):
        folder = pathlib.Path(config.rootpath) / config.getini("repro_audit_reports")
    device = config.getoption("--repro-audit-device") or config.getini("repro_audit_device") or None
    return Auditor(report_stem(request.node.nodeid), folder, device)
