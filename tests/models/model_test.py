# SPDX-License-Identifier: Apache-2.0
# What the model tests in this folder share: their first three arguments, a fresh work folder, the
# list of failures and check(), and TorchScript run as the worker runs it. A test imports it by name
# (Python puts a script's own folder first on sys.path); the tests run with python -B
# (tests/CMakeLists.txt), so the import writes no __pycache__ into the source tree.
import os
import pathlib
import shutil
import sys

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def arguments():
    """BINARY SOURCE_DIR WORK_FOLDER ...: the binary's absolute path, the source tree, the work folder."""
    return os.path.abspath(sys.argv[1]), pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3]).resolve()


def fresh_folder(work):
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)


def jit_as_the_worker(torch):
    """TorchScript's profiling executor and graph optimisations off, as in the worker's trials."""
    torch._C._jit_set_profiling_executor(False)
    torch._C._jit_set_profiling_mode(False)
    torch._C._set_graph_executor_optimize(False)
