# SPDX-License-Identifier: Apache-2.0
"""Which binary to start, and whether the torch installed now is the one it was built against.

A pip install puts the prefix layout of `cmake --install` inside the package (cmake/Wheel.cmake):
repro_audit/bin/repro-audit (the front), repro_audit/libexec/repro-audit/ (the worker), and
repro_audit/share/repro-audit/. The worker finds torch/lib through an RPATH relative to its own
folder, ../../../torch/lib: site-packages/torch/lib. LibTorch has no stable ABI for what the worker
uses, so a build serves one torch; before every start this module checks, without importing torch,
that the torch found on sys.path has the version the build wrote into _build_info.py and sits where
the RPATH looks. Either mismatch is one line (SetupError, exit 2), never a symbol error later."""
import os
import pathlib

from ._torch_locate import find_torch

PACKAGE = pathlib.Path(__file__).resolve().parent


class ReproAuditError(Exception):
    """The binary exited with a usage (2), input (3), incomplete (4) or interrupted (130) code, or
    could not be started. `message` is its one-line message on stderr."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class SetupError(ReproAuditError):
    """The installed binaries cannot run with this environment's torch: reinstall."""

    def __init__(self, message: str):
        super().__init__(message, 2)


REINSTALL = "pip install --no-build-isolation --force-reinstall <clone or sdist of repro-audit>"


def check_torch() -> None:
    """Raises SetupError unless this environment's torch is the build's, where the RPATH finds it."""
    try:
        from . import _build_info
    except ImportError:
        raise SetupError(f"repro_audit has no build information (not installed by pip?): {REINSTALL}") from None
    found = find_torch()
    if found is None:
        raise SetupError(f"repro-audit was built against torch {_build_info.TORCH_VERSION} and this environment has "
                         f"no torch: install torch=={_build_info.TORCH_VERSION.split('+')[0]} or reinstall repro-audit")
    folder, version = found
    if version != _build_info.TORCH_VERSION:
        raise SetupError(f"repro-audit was built against torch {_build_info.TORCH_VERSION} and this environment has "
                         f"torch {version} ({folder}): reinstall it: {REINSTALL}")
    beside = PACKAGE.parent / "torch"
    if beside.resolve() != folder.resolve():
        raise SetupError(f"torch is at {folder}, but repro-audit's binaries look for it beside the package, at "
                         f"{beside}: install repro-audit into the environment that holds torch")


def front() -> str:
    """The front executable. REPRO_AUDIT_BINARY names another one (a build folder's), which is used
    as it is, without the torch check; else the installed one, after check_torch()."""
    env = os.environ.get("REPRO_AUDIT_BINARY")
    if env:
        return env
    installed = PACKAGE / "bin" / "repro-audit"
    if not os.access(installed, os.X_OK):
        raise SetupError(f"repro-audit's binaries are missing ({installed}): {REINSTALL}")
    check_torch()
    return str(installed)
