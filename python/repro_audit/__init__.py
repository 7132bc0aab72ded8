# SPDX-License-Identifier: Apache-2.0
"""repro-audit from Python: run, invariance and exec on model objects, and a pytest plugin
(pytest_plugin.py). The C++ binaries do every audit; this package saves models and inputs to files,
starts the binary and reads its JSON report into a Result. Importing it imports no torch, and the
names below are loaded on first use, so the `repro-audit` launcher (_launcher.py) starts quickly."""
import importlib

_WHERE = {"run": "api", "invariance": "api", "exec": "api", "save_model": "api", "Result": "results",
          "ConfigVerdict": "results", "FirstOp": "results", "Fix": "results", "ReportKindError": "results",
          "ReproAuditError": "_binary", "SetupError": "_binary"}
__all__ = list(_WHERE)


def __getattr__(name):
    if name not in _WHERE:
        raise AttributeError(f"module 'repro_audit' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
