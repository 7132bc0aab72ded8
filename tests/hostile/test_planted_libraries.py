#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Nothing loads code from where the user stands (issue 51 item 1). The worker's RPATH ended in an empty
# element, which the loader reads as the working directory (and its glibc-hwcaps/x86-64-v2, -v3 and -v4
# folders, which glibc searches first): a libspdlog.so.1.10 in the folder a user cloned a model into ran
# its constructor inside every worker. Here a library whose constructor writes a mark (the path it was
# loaded from) is planted under every NEEDED name of the front and of the worker, in a working folder and
# in each of its glibc-hwcaps folders; then `run`, `invariance`, `lint` (forwarded to the worker) and
# `probes` run there, on small fixtures copied in as a user's own files. Each must exit as it does
# anywhere, and no mark may appear. Then a worker that the dynamic loader cannot start (below).
#
# usage: test_planted_libraries.py REPRO_AUDIT_BINARY FIXTURES_FOLDER WORK_FOLDER
import json
import os
import pathlib
import shutil
import subprocess
import sys

binary, fixtures, work = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3]).resolve()
worker = pathlib.Path(binary).resolve().parent / "repro-audit-worker"
shutil.rmtree(work, ignore_errors=True)
here = work / "here"  # the user's folder
marks = work / "marks"
here.mkdir(parents=True)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def needed(path):
    out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
    return [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


names = sorted(set(needed(binary)) | set(needed(worker)))
print(f"planted as: {' '.join(names)}", flush=True)
source = work / "mark.c"
source.write_text(f"""#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
__attribute__((constructor)) static void mark(void) {{
  Dl_info info;
  FILE *f = fopen("{marks}", "a");
  if (!f) return;
  fprintf(f, "%s\\n", dladdr((void *)mark, &info) && info.dli_fname ? info.dli_fname : "?");
  fclose(f);
}}
""")
library = work / "mark.so"
subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
for name in ("net.pt", "input.pt", "batchmean.pt", "rows.pt"):
    shutil.copy(fixtures / name, here / name)
hwcaps = [here / "glibc-hwcaps" / f"x86-64-v{v}" for v in (2, 3, 4)]
# First the reproducer (a libspdlog that loads), then every name everywhere (a libc.so.6 or a
# libstdc++.so.6 that lacks every symbol, which no process would survive).
scenarios = [("libspdlog.so.1.10 in the working folder", [here], ["libspdlog.so.1.10"]),
             ("every NEEDED name in the working folder and its glibc-hwcaps folders", [here] + hwcaps, names)]
env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
# (command, the exit it has anywhere): a reproducible run; a row minus its batch's mean, variant at
# every size; a lint forwarded to the worker by exec; a control probe.
cases = [(["run", "net.pt", "--input", "input.pt", "--configs", "default", "--repeats", "2"], 0),
         (["invariance", "batchmean.pt", "--input", "rows.pt", "--rows", "2", "--sizes", "1,2", "--no-fix-search"], 1),
         (["lint", "net.pt"], 0),
         (["probes", "--only", "sum.dim.threads-control", "--configs", "default", "--repeats", "2", "--no-census"], 0)]
for scenario, places, planted in scenarios:
    for place in places:
        place.mkdir(parents=True, exist_ok=True)
        for name in planted:
            shutil.copy(library, place / name)
    for args, code in cases:
        marks.unlink(missing_ok=True)
        p = subprocess.run([binary, *args], cwd=here, env=env, capture_output=True, text=True, timeout=600)
        loaded = sorted(set(marks.read_text().split())) if marks.exists() else []
        print(f"{scenario}: repro-audit {' '.join(args)}: exit {p.returncode}, planted libraries loaded: {len(loaded)}",
              flush=True)
        check(not loaded, f"{scenario}: {args[0]} loaded a library planted where it runs: {loaded}")
        check(p.returncode == code, f"{scenario}: {args[0]}: exit {p.returncode}, not {code}: {p.stderr[-600:]!r}")

# A library the loader cannot satisfy (a libspdlog.so.1.10 that needs a library nowhere to be found, on
# LD_LIBRARY_PATH given to the worker alone through a wrapper named by REPRO_AUDIT_WORKER): the loader
# stops the worker before main() (exit 127, its own lines), and the front says so in one line with a
# documented exit, 4: nothing of the user's is at fault and nothing was audited. (A library that lacks a
# symbol fails the same way, at the symbol's first call: the worker binds lazily, so that a worker run
# with another torch reaches its own check and names both releases, tests/torch/test_torch_mismatch.py.) Forwarded (lint), at the preflight (run), and in the
# trials alone (run, the preflight spared): there the trials are `crashed` with the loader's line.
bad = work / "bad"
bad.mkdir()
(work / "empty.c").write_text("int ra_nothing;\n")
subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(work / "libra_absent.so"), str(work / "empty.c")], check=True)
subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(bad / "libspdlog.so.1.10"), str(work / "empty.c"),
                "-Wl,--no-as-needed", f"-L{work}", "-lra_absent"], check=True)
(work / "libra_absent.so").unlink()
shutil.rmtree(here / "glibc-hwcaps")
for name in names:
    (here / name).unlink()
wrapper = work / "worker.sh"
wrapper.write_text(f"""#!/bin/sh
case "$1 $2" in *preflight*|*catalogue*) [ -n "$RA_TEST_TRIALS_ONLY" ] && exec "{worker}" "$@" ;; esac
LD_LIBRARY_PATH="{bad}" exec "{worker}" "$@"
""")
wrapper.chmod(0o755)
for what, args, extra in (("lint, forwarded", ["lint", "net.pt"], {}),
                          ("run, at the preflight", ["run", "net.pt", "--input", "input.pt", "--repeats", "2"], {}),
                          ("run, in the trials", ["run", "net.pt", "--input", "input.pt", "--repeats", "2",
                                                  "--configs", "default", "--report", str(work / "r.json")],
                           {"RA_TEST_TRIALS_ONLY": "1"})):
    p = subprocess.run([binary, *args], cwd=here, env={**env, "REPRO_AUDIT_WORKER": str(wrapper), **extra},
                       capture_output=True, text=True, timeout=600)
    lines = p.stderr.strip().splitlines()
    print(f"a libspdlog the loader cannot satisfy, {what}: exit {p.returncode}, stderr {p.stderr.strip()[:300]!r}", flush=True)
    check(p.returncode == 4 and len(lines) == 1 and "the dynamic loader failed (" in lines[0] and
          "libra_absent.so: cannot open shared object file" in lines[0], f"{what}: exit {p.returncode}, stderr {p.stderr!r}")
    if "RA_TEST_TRIALS_ONLY" in extra and (work / "r.json").exists():
        config = json.loads((work / "r.json").read_text())["targets"][0]["configs"][0]
        check(config["verdict"] == "crashed" and "could not start: the dynamic loader failed (" in config["message"],
              f"{what}: the report's configuration: {config['verdict']}, {config.get('message')!r}")

print(f"{len(failures)} failed" if failures else "no planted library was loaded")
sys.exit(1 if failures else 0)
