# SPDX-License-Identifier: Apache-2.0
"""repro-audit from Python: run, invariance and exec on model objects, and a pytest plugin
(pytest_plugin.py). The C++ binaries do every audit; this package saves models and inputs to files,
starts the binary and reads its JSON report into a Result. Importing it imports no torch."""
from ._binary import ReproAuditError, SetupError
from .api import exec, invariance, run, save_model
from .results import ConfigVerdict, FirstOp, Fix, Result

__all__ = ["run", "invariance", "exec", "save_model", "Result", "ConfigVerdict", "FirstOp", "Fix",
           "ReproAuditError", "SetupError"]
