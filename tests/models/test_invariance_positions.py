#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `repro-audit invariance` advice where a row's place matters, checked against Python (issue 43 item 1,
# issue 54 item 2).
#
# The model plays a kernel that handles rows in blocks of four and takes another path for the rows
# left over below twelve rows (MobileNetV3 and a GPT-2 decode step showed this shape: a row at the
# end of a batch of 5, 6, 7, 9, 10 or 11 gets other bits). `--sizes auto` used to bisect on class
# changes only: it never tried 10 or 11, and advised "pad every batch to a size in {4…33}", which
# Python shows is false at 10 and 11. Now:
#  - auto bisects where position dependence changes, and finds 10 and 11;
#  - every size the advice names was measured (none is inferred from its neighbours) to give a row
#    the same bits at every place, and Python agrees;
#  - no advice line says "the same bits" for a size the report calls position-dependent, also when
#    the sizes are given (`--sizes 1,4,8,10,11,12,13`, the second case);
#  - sparse sizes on a Linear(1024, 512) (the README's `sizes=[1, 2, 3, 4, 8]`, through the command
#    line and through the Python API's `sizes=`): the advice names no size between two measured
#    ones that was not measured (it once said {4…8}, and a row placed last got other bits at 5, 6,
#    7), and Python agrees at every size it names. Which sizes differ depends on the CPU's BLAS:
#    Python is asked, never assumed.
#
# usage: test_invariance_positions.py REPRO_AUDIT_BINARY SOURCE_DIR WORK_FOLDER
import json
import os
import re
import subprocess
import sys

from model_test import arguments, check, failures, fresh_folder

binary, source, work = arguments()
import torch  # noqa: E402

fresh_folder(work)


class BlocksOfFour(torch.nn.Module):
    def forward(self, x):
        y = x * 2.0 + 1.0
        n = x.shape[0]
        full = (n // 4) * 4
        if n < 12 and full < n:  # the rows left over: the same sum, rounded another way
            tail = (x[full:] * 3.0) * (2.0 / 3.0) + 1.0
            y = torch.cat([y[:full], tail], 0)
        return y


model = torch.jit.script(BlocksOfFour())
path = work / "blocks.pt"
model.save(str(path))
rows = torch.randn(64, 16)
torch.save(rows, str(work / "rows.pt"))


def position_free(m):
    """Python's answer: row 0 of the input gets the same bits at every place of a batch of m."""
    first = None
    for p in range(m):
        batch = rows[1:m + 1].clone()
        batch[p] = rows[0]
        got = model(batch)[p]
        if first is None:
            first = got
        elif not torch.equal(first, got):
            return False
    return True


def bits_at_start(m):
    batch = rows[1:m + 1].clone()
    batch[0] = rows[0]
    return model(batch)[0]


def audit(name, *sizes):
    report = work / f"{name}.json"
    cmd = [binary, "invariance", str(path), "--input", str(work / "rows.pt"), "--rows", "2", "--budget", "40",
           "--configs", "default", "--no-fix-search", "--report", str(report), *sizes]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    print(f"$ {' '.join(cmd[1:])}\n{p.stdout}{p.stderr}exit {p.returncode}", flush=True)
    doc = json.loads(report.read_text()) if report.exists() else {}
    return p, (doc.get("invariance", {}).get("configs") or [{}])[0]


def tried(config):
    return sorted({c["size"] for c in config.get("cells", [])})


def expand(text):
    """'{4,8,12…33}' or '4,8,15…17': a run a…b holds every size from a to b."""
    out = []
    for part in text.strip("{}").split(","):
        if "…" in part:
            a, b = (int(v) for v in part.split("…"))
            out += list(range(a, b + 1))
        else:
            out.append(int(part))
    return out


def padded_sizes(config):
    """The sizes the padding advice names, and its line."""
    for line in config.get("advice", []):
        found = re.search(r"pad every batch to a size in (\{[^}]*\})", line)
        if found:
            return expand(found.group(1)), line
    return None, ""


def same_bits_beside_position(config):
    """An advice line that calls sizes 'the same bits' while the report calls one of them position-dependent."""
    dependent = set(config.get("position_dependent", []))
    for line in config.get("advice", []):
        if "same bits" not in line:
            continue
        for group in re.findall(r"\{[^}]*\}", line):
            if dependent & set(expand(group)):
                return line
    return None


# 1. auto: the bisection finds 10 and 11, and the advice holds in Python.
p, config = audit("auto")
check(p.returncode == 1 and config.get("verdict") == "variant", f"auto: variant, exit 1, got {p.returncode}")
dependent = config.get("position_dependent", [])
python_dependent = [m for m in tried(config) if m > 1 and not position_free(m)]
check(dependent == python_dependent, f"auto: position-dependent sizes {dependent}, Python says {python_dependent}")
check(10 in dependent and 11 in dependent, f"auto: bisection found 10 and 11 (auto's plan skips them), got {dependent}")
advised, line = padded_sizes(config)
check(advised is not None, "auto: the advice names sizes to pad to")
advised = advised or []
check(set(advised) <= set(tried(config)), f"auto: every size advised was tried: {advised} ({line})")
check("inferred" not in " ".join(config.get("advice", [])), f"auto: no size is inferred: {line}")
check(all(position_free(m) for m in advised), f"auto: every advised size is position-free in Python: {advised}")
check(len({bits_at_start(m).numpy().tobytes() for m in advised}) == 1, "auto: the advised sizes share one class in Python")
check(not set(advised) & set(dependent), f"auto: no position-dependent size advised: {advised}")
check(same_bits_beside_position(config) is None, f"auto: 'same bits' beside a position finding: "
      f"{same_bits_beside_position(config)}")

# 2. The sizes: no bisection, and still no "the same bits" for 10 or 11.
p, config = audit("given", "--sizes", "1,4,8,10,11,12,13")
check(config.get("position_dependent") == [10, 11], f"given: position-dependent at 10,11, got "
      f"{config.get('position_dependent')}")
check(same_bits_beside_position(config) is None, f"given: 'same bits' beside a position finding: "
      f"{same_bits_beside_position(config)}")
check(not any("same bits" in ln and "{4…13}" in ln for ln in p.stdout.splitlines()),
      "given: the text never says {4…13} gives a row the same bits")
advised, line = padded_sizes(config)
check(advised == [4, 8, 12, 13] and all(position_free(m) for m in advised),
      f"given: advises 4,8,12,13, all position-free in Python, got {advised}")

# 3. Sparse sizes on a Linear(1024, 512), given on the command line and through the API's sizes=.
torch.manual_seed(0)
linear = torch.nn.Linear(1024, 512).eval()
lin_rows = torch.randn(16, 1024)
torch.jit.script(linear).save(str(work / "linear.pt"))
torch.save(lin_rows, str(work / "linear_rows.pt"))
SPARSE = [1, 2, 3, 4, 8]


def linear_row(m, p):
    """Python: row 0 of the input at place p of a batch of m (the other rows the input's next ones)."""
    batch = lin_rows[1:m + 1].clone() if m > 1 else lin_rows[:1].clone()
    batch[p] = lin_rows[0]
    with torch.inference_mode():
        return linear(batch)[p]


def claimed_sizes(config):
    """Every size an advice line says gives a row the same bits, with the line."""
    out = []
    for line in config.get("advice", []):
        for pattern in (r"pad every batch to a size in \{([^}]*)\}", r"every batch of \{([^}]*)\}",
                        r"every batch size tried \(([^)]*)\)"):
            for found in re.findall(pattern, line):
                out.append((expand(found), line))
    return out


def check_sparse(name, doc):
    config = (doc.get("invariance", {}).get("configs") or [{}])[0]
    check(tried(config) == SPARSE, f"{name}: the sizes asked were tried: {tried(config)}")
    claims = claimed_sizes(config)
    check(claims, f"{name}: some advice line names sizes that give a row the same bits: {config.get('advice')}")
    for sizes, line in claims:
        check(set(sizes) <= set(SPARSE), f"{name}: every size named was measured: {sizes} in '{line}'")
        # Anchor 0's places at those sizes, as the report's cells say (start, middle, end).
        places = [(c["size"], r["position"]) for c in config.get("cells", []) if c["size"] in sizes
                  and c["placement"] in ("start", "middle", "end") for r in c["rows"] if r["anchor"] == 0]
        bits = [linear_row(m, p) for m, p in places]
        check(places and all(torch.equal(bits[0], b) for b in bits),
              f"{name}: in Python, row 0 gets one set of bits at every size and place named ({places}): '{line}'")
    print(f"{name}: {[s for s, _ in claims]} hold in Python; classes {[k['sizes'] for k in config.get('classes', [])]}",
          flush=True)


report = work / "sparse.json"
p = subprocess.run([binary, "invariance", str(work / "linear.pt"), "--input", str(work / "linear_rows.pt"), "--sizes",
                    ",".join(map(str, SPARSE)), "--no-fix-search", "--report", str(report)],
                   capture_output=True, text=True, timeout=600)
check(p.returncode in (0, 1) and report.exists(), f"sparse --sizes: a verdict: exit {p.returncode}: {p.stderr[-400:]}")
if report.exists():
    check_sparse("sparse --sizes", json.loads(report.read_text()))

# The same through the Python API (python/repro_audit, run from the source tree on this build).
sys.path.insert(0, str(source / "python"))
os.environ["REPRO_AUDIT_BINARY"] = binary
import repro_audit  # noqa: E402

result = repro_audit.invariance(linear, lin_rows, sizes=SPARSE, trace=False, fix_search=False)
check_sparse("the API's sizes=", result.report)

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
