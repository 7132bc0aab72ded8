# SPDX-License-Identifier: Apache-2.0
"""The `repro-audit` command of a pip install ([project.scripts]): find the binary, check the
installed torch against the build's without importing it (_binary.check_torch), and exec the front
with the arguments, so signals, exit codes and the terminal are the binary's own. A mismatch is one
line on stderr and exit 2."""
import os
import sys

from ._binary import SetupError, front


def main() -> None:
    try:
        binary = front()
    except SetupError as e:
        print(f"repro-audit: {e.message}", file=sys.stderr)
        sys.exit(e.exit_code)
    os.execv(binary, [binary, *sys.argv[1:]])
