#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The layout test: the torch side lives under worker/, probes/ (the probe catalogue) and bench/ (the
benchmarks of the torch side) and only there; every #include "folder/..." in the product code goes in an
allowed direction (docs/ARCHITECTURE.md, "Dependency rule"); the torch side includes nothing of the
front's client of the worker (it shares the protocol, audit/trial/worker_protocol.h); every source file
has a unique basename; and the front executable links no LibTorch.

usage: check_layout.py SOURCE_DIR [FRONT_BINARY]
"""
import os
import re
import subprocess
import sys

# Folder -> the folders its files may include (besides their own). The rule a reader needs: a file
# links LibTorch if and only if its path starts with worker/, probes/ (the probe catalogue, torch code at the
# top level because it is the product's second face) or bench/ (the benchmarks of the torch side). audit/, cli/ and reports/ are the
# torch-free side (the front, and what the worker shares with it); they never include worker/.
BASE = ["reports"]
DIGEST = BASE + ["audit/digest"]
COMMON = DIGEST + ["audit/common"]
TRIAL = COMMON + ["audit/trial"]
CONCERNS = ["audit/trace", "audit/knowledge", "audit/baseline", "audit/train", "audit/probes"]
WORKER_BASE = TRIAL + CONCERNS + ["worker/digest", "worker/runtime"]
WORKER_CONCERNS = ["worker/trace", "worker/lint", "worker/tensor_io", "worker/diff", "worker/train"]
ALLOWED = {
    "reports": [],
    # What a probe is (probe_info.h, which the worker's probes share) and the `probes` command's driver.
    "audit/probes": TRIAL + ["audit/trace", "audit/knowledge", "audit/baseline", "audit/fleet", "audit/skeleton"],
    "audit/digest": BASE,
    "audit/common": DIGEST,
    "audit/trial": COMMON,
    # The command line both executables share (the parser, the catch site, the options both register):
    # the ground floor under cli/ and worker/services/.
    "audit/cmdline": COMMON,
    **{c: TRIAL for c in CONCERNS if c != "audit/probes"},
    # Scale-out (shards, merge): above the concerns it joins.
    "audit/fleet": TRIAL + ["audit/trace", "audit/knowledge", "audit/baseline"],
    # Any command audited by what it writes (exec): beside fleet.
    # What every audit kind shares (plan, shard, run cells, analyse, finish): above fleet.
    "audit/skeleton": TRIAL + ["audit/trace", "audit/baseline", "audit/fleet"],
    "audit/exec": TRIAL + ["audit/trace", "audit/fleet", "audit/skeleton"],
    # The front's audits.
    "audit/run": TRIAL + CONCERNS + ["audit/fleet", "audit/skeleton"],
    "audit/selftest": TRIAL + CONCERNS + ["audit/fleet", "audit/skeleton", "audit/run"],
    # Batch invariance, the front's side: the protocol, the analysis, the driver, --trace's comparison.
    "audit/invariance": TRIAL + ["audit/trace", "audit/fleet", "audit/skeleton"],
    "cli": TRIAL + CONCERNS + ["audit/cmdline", "audit/fleet", "audit/skeleton", "audit/exec", "audit/run", "audit/selftest",
            "audit/invariance"],
    # The torch side.
    "worker/digest": DIGEST,
    "worker/runtime": TRIAL + ["worker/digest"],
    **{c: WORKER_BASE + ["worker/tensor_io"] for c in WORKER_CONCERNS},
    "probes": ["audit/probes"] + WORKER_BASE,
    "worker/targets": WORKER_BASE + WORKER_CONCERNS + ["probes"],
    "worker/child": WORKER_BASE + WORKER_CONCERNS + ["probes", "worker/targets"],
    "worker/invariance": WORKER_BASE + WORKER_CONCERNS + ["worker/targets", "audit/invariance"],
    "worker/services": ["audit/cmdline"] + WORKER_BASE + WORKER_CONCERNS +
                       ["probes", "worker/targets", "worker/child", "worker/invariance"],
    # The benchmarks of the torch side (docs/BENCHMARKS.md): digests, the tracer, the export interpreter.
    "bench": WORKER_BASE + WORKER_CONCERNS + ["worker/targets"],
}
TORCH_SIDE = ("worker/", "probes/", "bench/")
# The two towers: the worker (worker/, probes/) stands on the ground floor it shares with the front,
# never on the front's command line or its audits' drivers (the `worker_tower` test checks the binary).
FRONT_ONLY = ["cli", "audit/fleet", "audit/skeleton", "audit/exec", "audit/run", "audit/selftest"]
# Files of an allowed folder that only the front includes: the client of the worker's services (the
# worker reads and answers the same files through audit/trial/worker_protocol.h).
FRONT_ONLY_FILES = ["audit/trial/worker_client.h"]
TORCH_HEADER = re.compile(r'^\s*#\s*include\s+<(torch|ATen|c10|caffe2|cuda|cublas|cudnn)[/_.a-z]', re.M)
TOPS = ("audit", "cli", "reports", "worker", "probes", "bench")

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(path):
    parts = path.split("/")
    if parts[0] in ("audit", "worker", "cli") and len(parts) > 2:
        return "/".join(parts[:2])
    return parts[0]


def main():
    src = sys.argv[1]
    problems = []
    checked = 0
    for here, allowed in ALLOWED.items():
        if (here + "/").startswith(TORCH_SIDE):
            for there in allowed:
                if there in FRONT_ONLY:
                    problems.append(f"layout table: {here} may include {there}, the front's (the worker stands on its own)")
    basenames = {}
    for top in TOPS:
        for root, _, files in os.walk(os.path.join(src, top)):
            for name in files:
                if not name.endswith((".h", ".cpp", ".cu", ".cuh")):
                    continue
                rel = os.path.relpath(os.path.join(root, name), src)
                here = folder_of(rel)
                if here not in ALLOWED:
                    problems.append(f"{rel}: folder {here} has no row in the layout table (tests/check_layout.py)")
                    continue
                stem = os.path.splitext(name)[0]
                other = basenames.setdefault(stem, rel)
                if os.path.dirname(other) != os.path.dirname(rel):
                    problems.append(f"{rel}: basename {stem} is also {other} (every source basename is unique)")
                with open(os.path.join(root, name), encoding="utf-8") as f:
                    text = f.read()
                if not rel.startswith(TORCH_SIDE) and TORCH_HEADER.search(text):
                    problems.append(f"{rel}: includes a LibTorch or CUDA header outside worker/, probes/ and bench/ "
                                    "(the torch side)")
                for inc in INCLUDE.findall(text):
                    if "/" not in inc:
                        continue
                    checked += 1
                    if rel.startswith(TORCH_SIDE) and inc in FRONT_ONLY_FILES:
                        problems.append(f"{rel}: includes {inc}, the front's (the worker shares only its protocol, "
                                        "audit/trial/worker_protocol.h)")
                    there = folder_of(inc)
                    if there == here:
                        continue
                    if there not in ALLOWED[here]:
                        problems.append(f"{rel}: includes {inc} ({here} must not depend on {there})")
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
