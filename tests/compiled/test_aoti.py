#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# AOTInductor packages through the binary, as a user makes them: this script compiles a small
# module with torch._inductor.aoti_compile_and_package (g++ on the CPU, about half a minute) and
# checks what `repro-audit run` says of the package: reproducible, its constants and outputs
# digested, its build metadata in the report; --trace dropped with one line; --mode train and wrong
# shapes refused with one line; a package whose metadata names another device or CPU instructions this machine lacks
# refused before it is loaded, naming exactly the instructions this CPU lacks (read from /proc/cpuinfo); one
# compiled by another release (its metadata's torch_version) runs, with a note naming both releases; the
# report's notes say the package's library ran as native code, and
# --no-native refuses it; no load, failed or not, leaves a folder in /tmp or TMPDIR.
#
# usage: test_aoti.py REPRO_AUDIT_BINARY WORK_FOLDER
import glob
import json
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import torch

binary, work = sys.argv[1], pathlib.Path(sys.argv[2])
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


# The tool's TMPDIR: its scratch folders must be gone after every run, the refused and crashed
# ones included (checked at the end). LibTorch's package loader would unpack into /tmp/XXXXXX
# whatever TMPDIR says, and leave that folder when the library fails to load: the tool unpacks into
# its own scratch instead, so no folder of this test's packages ("net/") may appear in /tmp.
tmp = work / "tmp"
tmp.mkdir()
in_tmp_before = set(glob.glob("/tmp/*/net/data/aotinductor"))


def run(*args):
    return subprocess.run([binary, *map(str, args)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TMPDIR": str(tmp)})


sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "data"))
from make_model_kinds import Net  # noqa: E402  (the fixtures' module: Linear(4, 3), then relu)

torch.manual_seed(0)
net = Net().eval()
ep = torch.export.export(net, (torch.randn(2, 4),))
package = work / "net.pt2"
torch._inductor.aoti_compile_and_package(ep, package_path=str(package))

r = run("run", package, "--shape", "2x4", "--report", work / "r.json")
check(r.returncode == 0, f"run exit {r.returncode}: {r.stderr}")
check("AOTInductor package: " in r.stdout and "AOTI_DEVICE_KEY cpu" in r.stdout, f"no package line: {r.stdout}")
report = json.loads((work / "r.json").read_text())
target = report["targets"][0]
check(target["package"].get("AOTI_DEVICE_KEY") == "cpu", f"package metadata: {target.get('package')}")
names = [t["name"] for t in target["configs"][0]["reference_digests"]]
check(names[-1] == "output/0" and any(n.startswith("constant/") for n in names), f"tensors: {names}")
check(target["verdict"] == "reproducible", f"verdict {target['verdict']}")
check(any("ran as native code" in n for n in target.get("notes", [])) and "ran as native code" in r.stdout,
      f"no note that the package's library ran as native code: {target.get('notes')}")


def refused(args, code, text):
    r = run(*args)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == code and len(lines) == 1 and text in r.stderr,
          f"{args}: exit {r.returncode}, stderr {r.stderr!r} (wanted {code}, '{text}')")


refused(["run", package, "--shape", "2x5"], 3, "the compiled package rejects the inputs (float32[2x5])")
refused(["run", package, "--shape", "2x4", "--no-native"], 3, "--no-native refuses native code")
# --trace: one line on stderr, then the audit without it; the float64 referee, which cannot run a package
# compiled for one dtype, says so in one line of its own.
r = run("run", package, "--shape", "2x4", "--trace", "--report", work / "t.json")
lines = r.stderr.strip().splitlines()
check(r.returncode == 0 and len(lines) == 2 and "--trace: an AOTInductor package (compiled, fused kernels) cannot be "
      "traced op by op; auditing its outputs without --trace" in lines[0] and
      "float64 referee: did not run (an AOTInductor package: its kernels are compiled for one dtype)" in lines[1],
      f"--trace: exit {r.returncode}, stderr {r.stderr!r}")
check(r.returncode != 0 or json.loads((work / "t.json").read_text())["targets"][0]["configs"][0].get("trace") is None,
      "a trace section in a package's report")
refused(["run", package, "--shape", "2x4", "--mode", "train"], 2, "--mode train needs autograd")


# The same package with its metadata changed: built for CUDA, or for an instruction set no CPU has.
def rewritten(name, change):
    out = work / name
    with zipfile.ZipFile(package) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename.endswith("_metadata.json") and "wrapper" in item.filename:
                meta = json.loads(data)
                change(meta)
                data = json.dumps(meta).encode()
            dst.writestr(item, data)
    return out


cuda = rewritten("cuda.pt2", lambda m: m.update(AOTI_DEVICE_KEY="cuda"))
refused(["run", cuda, "--shape", "2x4"], 3, "is an AOTInductor package compiled for cuda, not cpu")


def cpu_flags():
    """This CPU's feature flags, as the worker reads them: the first "flags" line of /proc/cpuinfo."""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.partition(":")[2].split())
    return set()


# The ISAs of a package this machine cannot run: the line names exactly those this CPU lacks, by the
# worker's rule (AOTI_CPU_ISA's AVX512 is cpuinfo's avx512f; the others are cpuinfo's names in upper
# case). AVX2 and AVX512 are each present or missing by the CPU; NO_SUCH_ISA is missing everywhere.
ISAS = ["AVX2", "AVX512", "AVX512_VNNI", "NO_SUCH_ISA"]
flags = cpu_flags()
missing = [w for w in ISAS if {"avx512": "avx512f"}.get(w.lower(), w.lower()) not in flags]
check(flags and missing[-1:] == ["NO_SUCH_ISA"], f"no CPU flags read from /proc/cpuinfo: {sorted(flags)[:5]}")
print(f"this CPU lacks {missing} of {ISAS}", flush=True)
isa = rewritten("isa.pt2", lambda m: m.update(AOTI_CPU_ISA=" ".join(ISAS)))
refused(["run", isa, "--shape", "2x4"], 3, f"compiled for CPUs with {', '.join(missing)}, which this CPU lacks: "
        "compile it again on this machine")
# INVALID_VEC_ISA is Inductor's name for no vector ISA (scalar code, as it compiles under
# ATEN_CPU_CAPABILITY=default): every CPU runs it.
scalar = rewritten("scalar.pt2", lambda m: m.update(AOTI_CPU_ISA="INVALID_VEC_ISA"))
r = run("run", scalar, "--shape", "2x4")
check(r.returncode == 0, f"a package of scalar code (INVALID_VEC_ISA): exit {r.returncode}, {r.stderr!r}")

# The release that compiled it, where the metadata names it (torch records none; the GUIDE's snippet
# adds torch_version): another release's package runs, with one note saying whose kernels it runs;
# this release's gets none.
for name, version, noted in [("other_release.pt2", "2.99.0+cu999", True), ("same_release.pt2", torch.__version__, False)]:
    r = run("run", rewritten(name, lambda m, v=version: m.update(torch_version=v)), "--shape", "2x4", "--report",
            work / f"{name}.json")
    notes = json.loads((work / f"{name}.json").read_text())["targets"][0]["notes"] if r.returncode == 0 else []
    said = [n for n in notes if "was compiled by torch" in n]
    check(r.returncode == 0 and len(said) == int(noted) and (not noted or (
          f"compiled by torch 2.99.0+cu999 and runs under torch {torch.__version__.split('+')[0]}" in said[0]
          and said[0] in r.stdout)),
          f"{name}: exit {r.returncode}, notes {notes}, stdout {r.stdout[-600:]}")


# A package whose compiled library is damaged: not a library at all, or cut short. One line, exit 3,
# no report.
def library(name, change):
    out = work / name
    with zipfile.ZipFile(package) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            dst.writestr(item, change(data) if item.filename.endswith(".wrapper.so") else data)
    return out


# (A library cut short is refused from its ELF headers before any loader maps it: torch 2.11's loader
# crashed on one, and 2.15's ran it.)
for name, change, texts in (("junk.pt2", lambda d: b"not a library" * 64, ["is not an ELF shared library"]),
                            ("cut.pt2", lambda d: d[: len(d) // 3], ["is cut short: it holds "])):
    damaged = library(name, change)
    report = work / (name + ".json")
    r = run("run", damaged, "--shape", "2x4", "--report", report)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 3 and len(lines) == 1 and any(t in r.stderr for t in texts) and not report.exists(),
          f"{name}: exit {r.returncode}, stderr {r.stderr!r}, report written: {report.exists()}")

# Identity by content: the same package with only comments added to its generated C++ (as
# Inductor's cache adds the compile commands) matches a baseline of the original; the report
# carries the package's weights and graph digests.
r = run("run", package, "--shape", "2x4", "--repeats", "2", "--save-baseline", work / "g.json", "--quiet")
check(r.returncode == 0, f"--save-baseline: exit {r.returncode}, {r.stderr!r}")
head = json.loads((work / "g.json").read_text())["targets"][0]
check(len(head.get("weights_digest", "")) == 32 and len(head.get("graph_digest", "")) == 32, f"identity: {head}")
commented = work / "commented.pt2"
with zipfile.ZipFile(package) as src, zipfile.ZipFile(commented, "w") as dst:
    for item in src.infolist():
        data = src.read(item.filename)
        if item.filename.endswith(".cpp"):
            data += b"\n// Compile cmd\n// g++ /tmp/torchinductor_someone/x.cpp -O3\n"
        dst.writestr(item, data)
r = run("run", commented, "--shape", "2x4", "--repeats", "2", "--baseline", work / "g.json")
check(r.returncode == 0 and "was saved or exported again" in r.stdout and "match" in r.stdout,
      f"re-saved package: exit {r.returncode}, {r.stdout!r} {r.stderr!r}")

check(not any(tmp.iterdir()), f"left in TMPDIR: {sorted(p.name for p in tmp.iterdir())}")
left = sorted(set(glob.glob("/tmp/*/net/data/aotinductor")) - in_tmp_before)
check(not left, f"left in /tmp: {left}")

for f in failures:
    print("FAIL:", f, file=sys.stderr)
print(f"aoti: {len(failures)} failures")
sys.exit(1 if failures else 0)
