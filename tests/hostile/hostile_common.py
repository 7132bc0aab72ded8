# SPDX-License-Identifier: Apache-2.0
# What the hostile-input test scripts share: they need the venv's torch (to write models and ask
# torch.load), and take the binary and a work folder on the command line.
import os
import shutil
import sys
import warnings


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
