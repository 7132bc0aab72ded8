#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `repro-audit invariance` where the other audits go: baselines and `compare` (the classes of sizes
# are part of the baseline, so a moved class boundary is a finding), allowlists, `--shard K/N` and
# `merge`, and every exit code. The problem: whether a Linear layer's rows depend on the batch is a
# fact of this CPU's library, so nothing here writes down expected sizes: Python measures first
# (the Linear layer's rows alone and in batches, and layer_norm's), the tool's own unsharded run
# is the reference of the shards, and a "moved boundary" is made by editing a saved baseline.
# The cost: small models, sizes up to 64; about a minute on 2 cores.
#
# usage: test_invariance_fleet.py REPRO_AUDIT_BINARY SOURCE_DIR WORK_FOLDER TEST_OPS_LIBRARY
import json
import os
import pathlib
import subprocess
import sys

import torch

from model_test import arguments, check, failures, fresh_folder

binary, source, work = arguments()
test_ops = pathlib.Path(sys.argv[4])
fresh_folder(work)
SIZES = [1, 2, 3, 4, 5, 8, 9, 16]


def tool(*args, env=None):
    cmd = [binary, "-q", *map(str, args)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    print(f"$ {' '.join(cmd[2:])}\n[exit {p.returncode}]\n{p.stdout}{p.stderr}", flush=True)
    return p


def load(path):
    return json.loads(pathlib.Path(path).read_text()) if pathlib.Path(path).exists() else None


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(256, 256)

    def forward(self, x):
        return self.fc(x)


class Norm(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.layer_norm(x, [x.shape[-1]])


torch.manual_seed(0)
x = torch.randn(20, 256)
rows = work / "rows.pt"
torch.save(x, rows)
linear, norm = work / "linear.pt", work / "norm.pt"
torch.jit.script(Linear().eval()).save(str(linear))
torch.jit.script(Norm()).save(str(norm))

# What Python sees on this machine: row 0 alone and at the start of a batch of the input's rows.
with torch.inference_mode():
    def differs(path):
        m = torch.jit.load(str(path))
        ref = m(x[:1])
        return any(not torch.equal(m(torch.cat([x[:4], x[4:]])[:size])[:1], ref) for size in SIZES[1:])

    linear_variant, norm_variant = differs(linear), differs(norm)
print(f"Python: Linear rows differ across batch sizes here: {linear_variant}; layer_norm rows: {norm_variant}", flush=True)
check(not norm_variant, "Python: layer_norm rows are batch-invariant here (the negative control this test needs)")
sizes = ",".join(map(str, SIZES))
allow = work / "allow.json"
allow.write_text(json.dumps({"allowlist": 1, "entries": [{"target": "linear.pt", "reason": "MKL's GEMM blocking"}]}))

# --- baselines and compare (and exit 0 for the invariant model, 1 for the variant one) -----------
p = tool("invariance", norm, "--input", rows, "--sizes", sizes, "--report", work / "norm.json",
         "--save-baseline", work / "norm.baseline.json")
check(p.returncode == 0, f"layer_norm, invariant in Python: exit 0 (got {p.returncode})")
p = tool("invariance", linear, "--input", rows, "--sizes", sizes, "--report", work / "linear.json",
         "--save-baseline", work / "linear.baseline.json")
check(p.returncode == (1 if linear_variant else 0), f"Linear: exit {p.returncode} follows Python ({linear_variant})")
base = load(work / "linear.baseline.json")
check(base is not None and "invariance" in base, "the baseline holds the invariance section")
v = subprocess.run(["/usr/bin/python3", str(source / "tests/validate_schema.py"),
                    str(source / "share/schema/baseline-v1.schema.json"), str(work), "linear.baseline.json",
                    "norm.baseline.json"], capture_output=True, text=True)
check(v.returncode == 0, f"the baselines match the schema: {(v.stdout + v.stderr)[-400:]}")

p = tool("compare", work / "linear.baseline.json", work / "linear.json", "--allowlist", allow)
check(p.returncode == 0, f"compare with its own baseline, variance allowed: exit 0 (got {p.returncode})")
check("classes of sizes are the baseline's" in p.stdout, "compare says the classes match")

if linear_variant and base is not None:
    cfg = base["invariance"]["configs"][0]
    measured = cfg["outputs"][0]["classes"]
    first = min(min(c) for c in measured if min(c) != 1)  # the measured first boundary
    moved = next(s for s in SIZES[1:] if s != first)     # another tried size: the "old" boundary
    edited = [[s for s in SIZES if s < moved], [s for s in SIZES if s >= moved]]
    cfg["outputs"][0]["classes"] = edited
    cfg["classes"] = edited
    (work / "moved.baseline.json").write_text(json.dumps(base))
    want = f"class boundary moved: {moved} -> {first} for the output"
    p = tool("compare", work / "moved.baseline.json", work / "linear.json", "--allowlist", allow)
    check(p.returncode == 1, f"compare: a moved class boundary is a finding, exit 1 (got {p.returncode})")
    check(want in p.stdout, f"compare names it: '{want}'")
    p = tool("invariance", linear, "--input", rows, "--sizes", sizes, "--baseline", work / "moved.baseline.json",
             "--allowlist", allow, "--report", work / "moved.json")
    check(p.returncode == 1, f"--baseline: a moved class boundary is a finding, exit 1 (got {p.returncode})")
    check(want in p.stdout, f"--baseline names it: '{want}'")
    rep = load(work / "moved.json")
    check(rep is not None and any(want in r["reason"] for r in rep["baseline"]["results"]), "the JSON report says it")
    p = tool("invariance", linear, "--input", rows, "--sizes", sizes, "--baseline", work / "linear.baseline.json",
             "--allowlist", allow)
    check(p.returncode == 0, f"--baseline unchanged, variance allowed: exit 0 (got {p.returncode})")

# An invariant model whose baseline had a boundary: the boundary went, and that is a finding too.
nb = load(work / "norm.baseline.json")
if nb is not None:
    split = [[1, 2, 3], [s for s in SIZES if s >= 4]]
    nb["invariance"]["configs"][0]["classes"] = split
    nb["invariance"]["configs"][0]["outputs"][0]["classes"] = split
    (work / "norm.edited.json").write_text(json.dumps(nb))
    p = tool("invariance", norm, "--input", rows, "--sizes", sizes, "--baseline", work / "norm.edited.json")
    check(p.returncode == 1 and "class boundary at 4 gone for the output" in p.stdout,
          f"a boundary that went: exit 1 and named (got {p.returncode})")
    # Old baselines (no invariance section, and from before baselines said their kind) still read; for
    # invariance they are another experiment.
    del nb["invariance"]
    nb.pop("kind", None)
    (work / "old.baseline.json").write_text(json.dumps(nb))
    p = tool("invariance", norm, "--input", rows, "--sizes", "1,2", "--baseline", work / "old.baseline.json")
    check(p.returncode == 3 and "holds no invariance audit" in p.stderr, f"an old baseline: exit 3 named ({p.returncode})")
p = tool("invariance", norm, "--input", rows, "--sizes", sizes, "--device", "cpu", "--rows", "2",
         "--baseline", work / "norm.baseline.json")
check(p.returncode == 3 and "anchor rows" in p.stderr, f"another experiment (--rows 2): exit 3 (got {p.returncode})")

# --- allowlists -------------------------------------------------------------------------------
if linear_variant:
    p = tool("invariance", linear, "--input", rows, "--sizes", sizes, "--allowlist", allow, "--report", work / "allowed.json")
    rep = load(work / "allowed.json")
    check(p.returncode == 0, f"an allowed batch-variant model: exit 0 (got {p.returncode})")
    check("allowed: MKL's GEMM blocking" in p.stdout, "the finding is shown as allowed")
    check(rep is not None and rep["invariance"]["configs"][0].get("allowed_by", {}).get("entry") == 0,
          "the JSON says which entry allowed it")
    other = work / "other.json"
    other.write_text(json.dumps({"allowlist": 1, "entries": [
        {"target": "linear.pt", "output": "output/7", "reason": "another output"}]}))
    p = tool("invariance", linear, "--input", rows, "--sizes", sizes, "--allowlist", other)
    check(p.returncode == 1, f"an entry for another output allows nothing: exit 1 (got {p.returncode})")
    expired = work / "expired.json"
    expired.write_text(json.dumps({"allowlist": 1, "entries": [
        {"target": "linear.pt", "output": "output", "reason": "old", "expires": "2020-01-01"}]}))
    p = tool("invariance", linear, "--input", rows, "--sizes", sizes, "--allowlist", expired)
    check(p.returncode == 1 and "expired" in p.stdout, f"an expired entry: exit 1, said (got {p.returncode})")

# --- --shard K/N and merge give the classes of one unsharded run -------------------------------
def classes_of(rep):
    """Each configuration's classes of sizes; a shard runs no float64 referee, so the classes' errors
    against it (and their difference's class) are left out."""
    def sizes(classes):
        return [{k: v for k, v in cls.items() if k not in ("errors", "difference")} for cls in classes]

    return {c["config"]: (c["verdict"], sizes(c["classes"]), c["position_dependent"], c["warmup_dependent"],
                          sorted({cell["size"] for cell in c["cells"]})) for c in rep["invariance"]["configs"]}


for label, model, sweep in [("linear-auto", linear, ["--sizes", "auto", "--budget", "64"]),
                            ("norm-list", norm, ["--sizes", sizes])]:
    common = ["invariance", model, "--input", rows, *sweep, "--configs", "default,threads-1"]
    whole = tool(*common, "--report", work / f"{label}.whole.json")
    shards = []
    for k in (1, 2, 3):
        path = work / f"{label}.{k}.json"
        p = tool(*common, "--shard", f"{k}/3", "--report", path)
        check(p.returncode in (0, 1), f"{label}: shard {k}/3 ran (exit {p.returncode})")
        shards.append(path)
    merged = tool("merge", *shards, "--report", work / f"{label}.merged.json")
    a, b = load(work / f"{label}.whole.json"), load(work / f"{label}.merged.json")
    check(a is not None and b is not None, f"{label}: both reports written")
    if a and b:
        check(classes_of(a) == classes_of(b), f"{label}: merged classes {classes_of(b)} equal unsharded {classes_of(a)}")
        check(merged.returncode == whole.returncode, f"{label}: merge exits {merged.returncode} as the whole run ({whole.returncode})")
        check("shard" not in b, f"{label}: the merged report is not a shard")
        # The fix search runs only unsharded; the shard that finds the first configuration variant
        # says it left the search to an unsharded run, and merge keeps that note.
        check(all((load(s) or {}).get("invariance", {}).get("fix") is None for s in shards),
              f"{label}: no shard ran the fix search")
        if a["invariance"].get("fix") is not None:
            check(any("fix search: not run in a shard" in n for n in b["invariance"]["notes"]),
                  f"{label}: the merged report says the fix search was left to an unsharded run")
p = tool("merge", work / "linear-auto.1.json", work / "linear-auto.2.json")
check(p.returncode == 3 and "missing" in p.stderr, f"a missing shard: exit 3 (got {p.returncode})")

# --- exit codes 2 (usage), 3 (bad input) and 4 (a crash); 0 and 1 are checked above ---------------
for what, extra, code, words in [
    ("--shard out of range", ["--shard", "3/2", "--report", work / "x.json"], 2, "shard"),
    ("--shard without --report", ["--shard", "1/2"], 2, "--report"),
    ("--trace with --shard", ["--trace", "--shard", "1/2", "--report", work / "x.json"], 2, "--trace"),
    ("--baseline missing", ["--baseline", work / "missing.json"], 3, "missing.json"),
    ("--allowlist malformed", ["--allowlist", rows], 3, "allowlist"),
]:
    p = tool("invariance", norm, "--input", rows, "--sizes", "1,2", *extra)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    check(p.returncode == code, f"{what}: exit {p.returncode}, expected {code}")
    check(len(lines) == 1 and words in lines[0], f"{what}: one line naming it ({lines})")
    check(not (work / "x.json").exists(), f"{what}: no report written")

# A crash: ra_test::fault raises SIGSEGV under one intra-op thread (tests/support/test_ops.cpp).
check(test_ops.exists(), f"the test ops library {test_ops} is built (cli_tests builds it)")
if test_ops.exists():
    torch.ops.load_library(str(test_ops))

    class Fault(torch.nn.Module):
        def forward(self, x):
            return torch.ops.ra_test.fault(x)

    torch.jit.script(Fault()).save(str(work / "fault.pt"))
    p = tool("invariance", work / "fault.pt", "--input", rows, "--sizes", "1,2", "--configs", "threads-1",
             "--load-library", test_ops, "--report", work / "fault.json")
    rep = load(work / "fault.json")
    check(p.returncode == 4, f"a worker that dies of SIGSEGV: exit 4 (got {p.returncode})")
    check(rep is not None and rep["invariance"]["configs"][0]["verdict"] == "crashed", "the configuration is crashed")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("invariance baselines, allowlists, shards and exit codes hold on this machine")
