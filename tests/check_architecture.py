#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The map is checked (STYLE.md, habit 20): every path docs/ARCHITECTURE.md names in backticks exists,
and the map stays a map: at most 150 lines, none wider than 120 characters (issue 52).

usage: check_architecture.py REPO

A name with a folder (`audit/trial/runner.h`, `probes/`) must exist at that path; a bare file
name (`report_finish.h`) somewhere in the tree, since basenames are unique; a pattern
(`cli/cmd_<command>.cpp`, `*_json.cpp`) must match at least one file. Commands, options and install
paths (`./dev test`, `--shard K/N`, `<prefix>/...`, `.../share/`) are not paths of the repository and are skipped.
"""
import fnmatch
import os
import re
import subprocess
import sys

MAX_LINES, MAX_WIDTH = 150, 120
FILE = re.compile(r"^[A-Za-z0-9_.*<>/-]+\.(h|cpp|cu|py|md|json|cmake|txt|sh|toml|1)$")


def main():
    repo = sys.argv[1]
    files = subprocess.run(["git", "-C", repo, "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    folders = {os.path.dirname(f) for f in files}
    folders |= {p for f in folders for p in (os.path.join(*f.split("/")[:i]) for i in range(1, f.count("/") + 1))}
    with open(os.path.join(repo, "docs", "ARCHITECTURE.md"), encoding="utf-8") as f:
        text = f.read()
    names = re.findall(r"`([^`\s]+)`", text)
    lines = text.splitlines()
    too_long = [i + 1 for i, line in enumerate(lines) if len(line) > MAX_WIDTH]
    if len(lines) > MAX_LINES or too_long:
        print(f"architecture: docs/ARCHITECTURE.md has {len(lines)} lines (at most {MAX_LINES}); lines wider than "
              f"{MAX_WIDTH} characters: {too_long or 'none'}")
        return 1
    missing = []
    for name in sorted(set(names)):
        if name.startswith(("./", "-", "<", "...", "$")) or ("/" not in name and not FILE.match(name)):
            continue
        pattern = re.sub(r"<[^>]*>", "*", name.rstrip("/"))
        if name.endswith("/") or "." not in os.path.basename(pattern):
            found = any(fnmatch.fnmatchcase(d, pattern) for d in folders)
        elif "/" in pattern:
            found = any(fnmatch.fnmatchcase(f, pattern) for f in files)
        else:
            found = any(fnmatch.fnmatchcase(os.path.basename(f), pattern) for f in files)
        if not found:
            missing.append(name)
    for name in missing:
        print(f"architecture: docs/ARCHITECTURE.md names `{name}`, which is not in the repository")
    if not missing:
        print(f"architecture: every path of {len(set(names))} backticked names exists")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
