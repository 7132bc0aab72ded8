# SPDX-License-Identifier: Apache-2.0
"""Where the installed torch is and which version it is, without importing it (an import costs
seconds and loads LibTorch into the launcher). One rule for both sides: the pip build runs this
file as a script to find the torch it compiles against (cmake/Wheel.cmake), and the launcher calls
find_torch() before every start to check that the same torch is still installed.

Run as a script it prints "DIR;VERSION" and exits 0, or exits 1 when no torch is found."""
import importlib.util
import pathlib
import re
import sys

_VERSION = re.compile(r"""^__version__\s*(?::\s*\w+\s*)?=\s*['"]([^'"]+)['"]""", re.M)


def find_torch():
    """(torch's package folder, its __version__) as found on sys.path, or None when there is none.
    Reads torch/version.py as text."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = pathlib.Path(list(spec.submodule_search_locations)[0])
    try:
        match = _VERSION.search((folder / "version.py").read_text(encoding="utf-8"))
    except OSError:
        return None
    return (folder, match.group(1)) if match else None


if __name__ == "__main__":
    found = find_torch()
    if found is None:
        sys.exit(1)
    print(f"{found[0]};{found[1]}")
