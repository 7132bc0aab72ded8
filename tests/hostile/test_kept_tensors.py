#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# A baseline's kept tensors (--baseline-tensors) that are damaged, hostile or symlinks (issue 51).
# A baseline is saved with its tensors, its output digest is tampered with (so that the next run
# measures how far the output moved, from the kept file), and each case puts one kind of kept file
# beside a copy of it, then runs `run --baseline`:
#   * an empty, cut or non-tensor kept file, one that holds a list, one whose tensor has another shape
#     than the baseline declares: the statistics' note names the baseline's file and what is wrong
#     with it, never "trial dump missing" (which blamed the trial);
#   * a kept file whose storage, or whose version record, is deflated to 1 MB and claims 512 MiB, and
#     one that stores more bytes than its tensors are declared to need: refused before anything is
#     inflated, and the run's peak memory (wait4: the tool, its worker and the statistics worker)
#     stays within a fixed budget above the genuine case;
#   * a kept file, or the tensors folder, that is a symlink to a genuine one: not followed; a warning
#     names it and the changed tensor is named, not measured.
# `compare` reads kept files the same way: one case through it. The cost: about a dozen small runs.
#
# Usage: test_kept_tensors.py REPRO_AUDIT WORKDIR   (run by ctest with the project venv's python;
# exits 77, skipped, when that python has no torch).
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile

from hostile_common import check, failures, run_measured, start, with_deflated_entry

torch, TOOL, WORK = start()
BUDGET = 128 << 20  # above the genuine case's peak: the statistics of a few small tensors, slack
if os.environ.get("REPRO_AUDIT_TEST_ASAN") == "1":
    BUDGET += 256 << 20  # AddressSanitizer's quarantine

model = os.path.join(WORK, "m.pt")
torch.jit.script(torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU())).save(model)
RUN = [TOOL, "run", model, "--shape", "4x16", "--configs", "default", "--repeats", "1"]
saved = os.path.join(WORK, "saved")
os.makedirs(saved)
r = subprocess.run(RUN + ["--save-baseline", os.path.join(saved, "g.json"), "--baseline-tensors"],
                   capture_output=True, text=True)
check(r.returncode == 0, f"the baseline is saved: exit {r.returncode}, {r.stderr}")
baseline = json.load(open(os.path.join(saved, "g.json")))
config = baseline["targets"][0]["configs"][0]
kept_name = config["reference_tensors"]
genuine = os.path.join(saved, "g.json.tensors", kept_name)
declared = {t["name"]: t for t in config["reference_digests"]}
for t in config["reference_digests"]:
    if t["name"] == "output":
        t["digest"] = "0" * len(t["digest"])  # the output "changed": its distance is measured from the kept file


def saved_bytes(obj):
    out = io.BytesIO()
    torch.save(obj, out)
    return out.getvalue()


genuine_bytes = open(genuine, "rb").read()
others = {n: torch.zeros(t["shape"]) for n, t in declared.items() if n != "output"}
a_storage = next(n for n in zipfile.ZipFile(genuine).namelist() if "/data/" in n)
cases = {
    # name: (bytes of the kept file, what the note must say after the file's path)
    "empty": (b"", "is empty, not a torch.save file"),
    "cut": (genuine_bytes[: len(genuine_bytes) // 2], "has no end of central directory record"),
    "text": (b"not tensors\n", "is not a torch.save file: it is not a zip archive"),
    "list": (saved_bytes([torch.zeros(2)]), "not the dict of tensors a dump holds"),
    "reshaped": (saved_bytes({**others, "output": torch.zeros(3)}), "holds 'output' as float32[3], not the float32[4x8]"),
    "stores_more": (saved_bytes({**others, "output": torch.zeros(1 << 20)}),
                    "bytes its tensors are declared to hold in all"),
    "storage_bomb": (with_deflated_entry(genuine_bytes, a_storage, 512 << 20), "536870912 bytes"),
    "version_bomb": (with_deflated_entry(genuine_bytes, "/version", 512 << 20), "536870912 bytes"),
}


def case_folder(name):
    folder = os.path.join(WORK, name)
    os.makedirs(os.path.join(folder, "g.json.tensors"))
    with open(os.path.join(folder, "g.json"), "w") as f:
        json.dump(baseline, f)
    return folder


def run_against(folder, argv=None):
    report = os.path.join(folder, "r.json")
    argv = argv or RUN + ["--baseline", os.path.join(folder, "g.json"), "--report", report]
    rc, out, err, rss = run_measured(argv, WORK)
    got = json.load(open(report)) if os.path.exists(report) else {}
    tensors = got.get("baseline", {}).get("results", [{}])[0].get("differing_tensors", [])
    output = next((t for t in tensors if t["name"] == "output"), {})
    return rc, err, rss, output


# The genuine kept file: measured, no note.
control = case_folder("genuine")
shutil.copy(genuine, os.path.join(control, "g.json.tensors", kept_name))
rc, err, control_rss, output = run_against(control)
check(rc == 1, f"genuine: the tampered output is a regression, exit 1 (got {rc}: {err.strip()})")
check("stats" in output and not output["stats"].get("note"), f"genuine: the output is measured, got {output}")
print(f"genuine kept file: peak {control_rss >> 20} MiB", file=sys.stderr)

for name, (data, says) in cases.items():
    folder = case_folder(name)
    path = os.path.join(folder, "g.json.tensors", kept_name)
    with open(path, "wb") as f:
        f.write(data)
    rc, err, rss, output = run_against(folder)
    note = output.get("stats", {}).get("note", "")
    print(f"{name:13} {len(data):>9} bytes  exit {rc}  peak {rss >> 20} MiB  note: {note[:150]}", file=sys.stderr)
    check(rc == 1, f"{name}: exit 1 (the regression stands), got {rc}: {err.strip()}")
    check(note.startswith(f"kept tensors unreadable: file '{path}'"), f"{name}: the note names the kept file: {note}")
    check(says in note, f"{name}: the note says {says!r}: {note}")
    check("trial dump" not in note, f"{name}: the note blames no trial: {note}")
    check(rss <= control_rss + BUDGET, f"{name}: peak {rss >> 20} MiB above {(control_rss + BUDGET) >> 20} MiB")

# compare reads them the same way: the damaged baseline against the genuine one.
rc, out, err, _ = run_measured([TOOL, "compare", os.path.join(WORK, "empty", "g.json"), os.path.join(WORK, "saved", "g.json"),
                                "--report", os.path.join(WORK, "compare.json")], WORK)
result = json.load(open(os.path.join(WORK, "compare.json")))["baseline"]["results"][0]
note = next(t for t in result["differing_tensors"] if t["name"] == "output").get("stats", {}).get("note", "")
check("kept tensors unreadable: file '" + os.path.join(WORK, "empty", "g.json.tensors", kept_name) in note,
      f"compare names the empty kept file: {note}")

# Symlinks: a kept file that is one, and a tensors folder that is one, each to a genuine copy.
link_file = case_folder("linked_file")
os.symlink(genuine, os.path.join(link_file, "g.json.tensors", kept_name))
link_folder = case_folder("linked_folder")
os.rmdir(os.path.join(link_folder, "g.json.tensors"))
os.symlink(os.path.join(saved, "g.json.tensors"), os.path.join(link_folder, "g.json.tensors"))
for folder, says in [(link_file, "is a symlink, not followed"),
                     (link_folder, "lies in '" + os.path.join(link_folder, "g.json.tensors") + "', a symlink")]:
    rc, err, _, output = run_against(folder)
    name = os.path.basename(folder)
    print(f"{name:13} exit {rc}  {err.strip()[:200]}", file=sys.stderr)
    check(rc == 1, f"{name}: exit 1 (the regression stands), got {rc}: {err.strip()}")
    check(says in err and "changed tensors are named, not measured" in err, f"{name}: a warning says {says!r}: {err}")
    check(output and "stats" not in output, f"{name}: the output is named, not measured: {output}")

if failures:
    print(f"{len(failures)} failure(s)", file=sys.stderr)
    sys.exit(1)
print(f"{len(cases) + 3} kept files: each named with what is wrong, memory within the bound", file=sys.stderr)
