#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The layout test: every #include "folder/..." in the product code goes in an allowed direction
(docs/ARCHITECTURE.md, "Folders"), and the front executable links no LibTorch.

usage: check_layout.py SOURCE_DIR [FRONT_BINARY]
"""
import os
import re
import subprocess
import sys

# Folder -> the folders its files may include (besides their own). Worker-side folders (runtime,
# tensor_io, targets, child, cli/worker) may include torch; the CMake targets keep torch out of
# the others, and FRONT_BINARY's dynamic section shows it stayed out.
BASE = ["reports"]
DIGEST = BASE + ["audit/digest"]
COMMON = DIGEST + ["audit/common"]
TRIAL = COMMON + ["audit/trial"]
RUNTIME = TRIAL + ["audit/runtime"]
CONCERNS = ["audit/trace", "audit/knowledge", "audit/baseline", "audit/tensor_io", "audit/train"]
ALLOWED = {
    "reports": [],
    "probes": [],
    "audit/digest": BASE,
    "audit/common": DIGEST,
    "audit/trial": COMMON,
    "audit/runtime": TRIAL,
    **{c: RUNTIME for c in CONCERNS},
    "audit/targets": RUNTIME + CONCERNS + ["probes"],
    "audit/child": RUNTIME + CONCERNS + ["audit/targets", "probes"],
    # Scale-out (shards, merge): the front's, above the concerns it joins.
    "audit/fleet": TRIAL + ["audit/trace", "audit/knowledge", "audit/baseline"],
    # What every audit kind shares (plan, shard, run cells, analyse, finish): the front's, above fleet.
    "audit/skeleton": TRIAL + ["audit/trace", "audit/baseline", "audit/fleet"],
    # Any command audited by what it writes (exec): the front's, beside fleet.
    "audit/exec": TRIAL + ["audit/trace", "audit/fleet", "audit/skeleton"],
    # The front's audits: never the worker side.
    "audit/run": TRIAL + ["audit/trace", "audit/knowledge", "audit/baseline", "audit/train", "audit/fleet", "audit/skeleton",
                  "probes"],
    "cli": TRIAL + ["audit/trace", "audit/knowledge", "audit/baseline", "audit/train", "audit/fleet", "audit/skeleton", "audit/exec",
                    "audit/run", "probes"],
    "cli/worker": ["cli"] + RUNTIME + CONCERNS + ["audit/targets", "audit/child", "audit/run", "probes"],
}
# Within probes/, the front may include only the torch-free descriptions.
FRONT_PROBE_HEADERS = {"probes/probe_info.h"}
FRONT = {"audit/run", "audit/skeleton", "audit/fleet", "audit/exec", "cli", "audit/trial", "audit/common", "audit/digest", "audit/baseline"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(path):
    parts = path.split("/")
    if parts[0] in ("audit",) and len(parts) > 2:
        return "/".join(parts[:2])
    if parts[0] == "cli" and len(parts) > 2:
        return "cli/" + parts[1]
    return parts[0]


def main():
    src = sys.argv[1]
    problems = []
    checked = 0
    for top in ("audit", "cli", "probes", "reports"):
        for root, _, files in os.walk(os.path.join(src, top)):
            for name in files:
                if not name.endswith((".h", ".cpp", ".cu", ".cuh")):
                    continue
                rel = os.path.relpath(os.path.join(root, name), src)
                here = folder_of(rel)
                if here not in ALLOWED:
                    problems.append(f"{rel}: folder {here} has no row in the layout table (tests/check_layout.py)")
                    continue
                with open(os.path.join(root, name), encoding="utf-8") as f:
                    text = f.read()
                for inc in INCLUDE.findall(text):
                    if "/" not in inc:
                        continue
                    checked += 1
                    there = folder_of(inc)
                    if there == here:
                        continue
                    if there not in ALLOWED[here]:
                        problems.append(f"{rel}: includes {inc} ({here} must not depend on {there})")
                    elif there == "probes" and here in FRONT and inc not in FRONT_PROBE_HEADERS:
                        problems.append(f"{rel}: includes {inc} (the front may use only {', '.join(FRONT_PROBE_HEADERS)})")
    if len(sys.argv) > 2:
        out = subprocess.run(["readelf", "-d", sys.argv[2]], capture_output=True, text=True, check=True).stdout
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
        torch = [n for n in needed if re.match(r"lib(torch|c10|cuda|cublas|cudnn|nccl)", n)]
        if torch:
            problems.append(f"{sys.argv[2]} links {', '.join(torch)}: the front must not link LibTorch or CUDA")
        checked += 1
    for p in problems:
        print(p)
    print(f"{checked} includes and links checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
