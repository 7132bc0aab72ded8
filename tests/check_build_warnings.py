#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The build prints no warning (issue 54): `./dev audit` printed 54 on a machine with GCC 12, GCC's own
-Wmaybe-uninitialized in its AVX-512 header where audit/digest/digest_kernel.cpp inlines the
intrinsics, and one -Winvalid-pch where a library reused the plain precompiled header without its
FMT_HEADER_ONLY. This compiles those translation units again, with the build's own command lines
(compile_commands.json) into a scratch folder, and fails on any warning they print.

usage: check_build_warnings.py BUILD_DIR WORK_FOLDER"""
import json
import pathlib
import shlex
import shutil
import subprocess
import sys

build, work = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2]).resolve()
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
UNITS = ("audit/digest/digest_kernel.cpp", "audit/probes/probe_info.cpp")
failures, seen = 0, set()
for entry in json.loads((build / "compile_commands.json").read_text()):
    if not entry["file"].endswith(UNITS):
        continue
    seen.add(entry["file"])
    given = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    args, skip = [], False  # without the dependency file (-MD -MF ...), which would touch the build's
    for a in given:
        if skip:
            skip = False
        elif a in ("-MF", "-MT", "-MQ"):
            skip = True
        elif a not in ("-MD", "-MMD"):
            args.append(a)
    args[args.index("-o") + 1] = str(work / (pathlib.Path(entry["file"]).stem + ".o"))
    p = subprocess.run(args, cwd=entry["directory"], capture_output=True, text=True)
    warned = [line for line in p.stderr.splitlines() if "warning:" in line]
    print(f"{entry['file']}: exit {p.returncode}, {len(warned)} warning(s)")
    for line in warned[:5]:
        print("  " + line)
    failures += p.returncode != 0 or bool(warned)
if len(seen) != len(UNITS):
    print(f"FAIL: compile_commands.json has {sorted(seen)}, not every one of {UNITS}")
    failures += 1
sys.exit(1 if failures else 0)
