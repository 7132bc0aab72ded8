#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Hostile torch.save files through the binary (issue 18): each crafted file goes to `diff` (and a
# few to `run --input`), and the answer must be the one Python's own torch.load gives: where
# torch.load loads the file, repro-audit reads it (a file diffed with itself is identical, exit 0);
# where torch.load refuses it, repro-audit exits 3 with exactly one line on stderr and nothing on
# stdout. A few files torch.load would load are refused on purpose, to keep memory and time bounded
# (REFUSED_ON_PURPOSE below, each with its reason). Every run's peak memory, read with wait4 (which
# counts the worker the front execs and the trials it waits for), stays within twice the file's
# size plus a fixed budget measured on a tiny genuine file.
#
# Usage: test_hostile_files.py REPRO_AUDIT WORKDIR   (run by ctest with the project venv's python;
# exits 77, skipped, when that python has no torch).
import io
import os
import struct
import sys
import zipfile

from hostile_common import check, failures, run_measured, start, with_deflated_entry

torch, TOOL, WORK = start(fresh=False)
BUDGET = 192 << 20  # bytes above the bound measured on a tiny genuine file (pieces of views, slack)
if os.environ.get("REPRO_AUDIT_TEST_ASAN") == "1":  # ./dev asan: a tool built with AddressSanitizer
    BUDGET += 256 << 20  # its quarantine keeps up to 256 MiB of freed memory resident

# ---- a tiny pickle assembler ---------------------------------------------------------------------


def uni(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def integer(v):
    if 0 <= v < 256:
        return b"K" + bytes([v])
    n = (v.bit_length() + 8) // 8
    return b"\x8a" + bytes([n]) + v.to_bytes(n, "little", signed=True)


def glob(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def tup(items):
    return b"(" + b"".join(items) + b"t"


def storage(key, numel, kind="FloatStorage"):
    return tup([uni("storage"), glob("torch", kind), uni(key), uni("cpu"), integer(numel)]) + b"Q"


def tensor(key, numel, offset, size, stride, kind="FloatStorage"):
    args = [storage(key, numel, kind), integer(offset), tup([integer(s) for s in size]),
            tup([integer(s) for s in stride]), b"\x89", glob("collections", "OrderedDict") + b")R"]
    return glob("torch._utils", "_rebuild_tensor_v2") + tup(args) + b"R"


def dict_of(pairs):
    return b"}(" + b"".join(uni(k) + v for k, v in pairs) + b"u"


def archive(pickle_body, records, compress=None):
    """A zip laid out as torch.save writes it, around the pickle `pickle_body` (no PROTO, no STOP)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", b"\x80\x02" + pickle_body + b".")
        z.writestr("archive/byteorder", b"little")
        for key, data in records.items():
            z.writestr(zipfile.ZipInfo(f"archive/data/{key}"), data, compress_type=compress or zipfile.ZIP_STORED)
        z.writestr("archive/version", b"3\n")
    return out.getvalue()


FLOATS4 = struct.pack("<4f", 1, 2, 3, 4)

# ---- the cases: name -> (bytes, reason when refused on purpose though torch.load loads it) -------

cases = {}


def case(name, data, on_purpose=None):
    cases[name] = (data, on_purpose)


def genuine(obj):
    out = io.BytesIO()
    torch.save(obj, out)
    return out.getvalue()


case("genuine_tensor", genuine(torch.arange(4.0)))
case("genuine_state_dict", genuine(torch.nn.Linear(3, 2).state_dict()))
case("genuine_expand_20000x20000", genuine(torch.ones(1).expand(20000, 20000)))  # 1.6 GB as a view
case("view_in_bounds", archive(tensor("0", 4, 1, [3], [1]), {"0": FLOATS4}))
# Defect 1: crashes.
deep = b"]" * 50000 + b"a" * 49999
case("nested_50000_lists", archive(deep, {}), "nesting deeper than 1000 levels")
case("numel_1e12", archive(tensor("0", 4, 0, [10**6, 10**6], [1, 1]), {"0": FLOATS4}))
case("huge_strides", archive(tensor("0", 4, 0, [2, 2], [2**40, 1]), {"0": FLOATS4}))
case("size_product_overflows", archive(tensor("0", 4, 0, [2**40, 2**40, 2**40], [0, 0, 0]), {"0": FLOATS4}))
# Defect 2: out-of-bounds reads.
case("offset_past_end", archive(tensor("0", 4, 10, [4], [1]), {"0": FLOATS4}))
case("offset_2_62", archive(tensor("0", 4, 2**62, [1], [1]), {"0": FLOATS4}))
case("negative_offset", archive(tensor("0", 4, -1, [2], [1]), {"0": FLOATS4}))
case("negative_stride", archive(tensor("0", 4, 3, [4], [-1]), {"0": FLOATS4}))
case("short_storage_record", archive(tensor("0", 8, 0, [8], [1]), {"0": FLOATS4}))
case("storage_claims_1e12", archive(tensor("0", 10**12, 0, [4], [1]), {"0": FLOATS4}))
case("missing_storage_record", archive(tensor("7", 4, 0, [4], [1]), {"0": FLOATS4}))
# Defect 3: memory from tiny files.
case("string_claims_4GiB", archive(b"X\xff\xff\xff\xffabc", {}))
case("stride0_20000x20000", archive(tensor("0", 1, 0, [20000, 20000], [0, 0]), {"0": struct.pack("<f", 1)}))
case("stride0_beyond_budget", archive(tensor("0", 1, 0, [2**20, 2**20], [0, 0]), {"0": struct.pack("<f", 1)}),
     "a view of 2^40 elements over one stored element")
case("deflated_record_100MB", archive(tensor("0", 25 << 20, 0, [25 << 20], [1]), {"0": bytes(100 << 20)},
                                      compress=zipfile.ZIP_DEFLATED),
     "a 100 MB record compressed into a small file")
case("deflated_version_1GiB", with_deflated_entry(genuine(torch.arange(4.0)), "/version", 1 << 30),
     "a version record of 1 GiB compressed into a small file, which LibTorch's reader inflates as it opens the archive")
case("tuple_doubling_64", archive(b"".join([tensor("0", 4, 0, [4], [1])] + [b"q\x000h\x00h\x00\x86"] * 64), {"0": FLOATS4}),
     "2^64 paths to one tensor through shared tuples")
# Other malformed pickles.
case("self_containing_list", archive(b"]q\x00h\x00a", {}), "a list that holds itself")
case("memo_before_set", archive(b"h\x05", {}))
case("unknown_global_called", archive(glob("os", "system") + uni("true") + b"\x85R", {}))
case("unknown_storage_type", archive(tensor("0", 4, 0, [4], [1], kind="FooStorage"), {"0": FLOATS4}))
case("truncated_pickle", archive(b"]" + b"(K\x01", {}))
case("not_a_zip", b"\x80\x02]q\x00.")
case("empty_file", b"")
case("dict_list_key", archive(b"}]K\x01s", {}))

# ---- running them --------------------------------------------------------------------------------


def tensors_only(v, seen=None):
    """How many tensors `diff` would read in what torch.load returned (tensors in str-keyed dicts,
    lists and tuples), None for anything else. Shared containers are counted once."""
    seen = {} if seen is None else seen
    if id(v) in seen:
        return seen[id(v)]
    seen[id(v)] = None  # a container that holds itself
    if isinstance(v, torch.Tensor):
        return 1
    if v is None:
        return 0
    if isinstance(v, dict):
        if not all(isinstance(k, str) for k in v):
            return None
        v = list(v.values())
    if isinstance(v, (list, tuple)):
        counts = [tensors_only(x, seen) for x in v]
        seen[id(v)] = None if None in counts else sum(counts)
        return seen[id(v)]
    return None


def python_answer(path):
    """'load' where torch.load reads the file and it holds tensors only, which `diff` reads too."""
    try:
        value = torch.load(path)  # weights_only=True, the default since torch 2.6
    except Exception:  # noqa: BLE001 - any refusal
        return "refuse"
    try:
        return "load" if tensors_only(value) else "refuse"
    except RecursionError:
        return "refuse (nested too deep for Python to walk)"


def run(argv):
    """Runs the tool: (exit code, stdout, stderr, peak resident bytes of it and its children)."""
    return run_measured(argv, WORK)


base_path = os.path.join(WORK, "tiny.pt")
with open(base_path, "wb") as f:
    f.write(genuine(torch.arange(4.0)))
rc, _, err, base_rss = run([TOOL, "diff", base_path, base_path])
check(rc == 0, f"a tiny genuine file diffs with itself: exit {rc}, {err}")
print(f"peak memory of diff on a tiny file: {base_rss >> 20} MiB", file=sys.stderr)

model = os.path.join(WORK, "double.pt")
torch.jit.script(torch.nn.Sequential(torch.nn.Identity())).save(model)

for name, (data, on_purpose) in cases.items():
    path = os.path.join(WORK, name + ".pt")
    with open(path, "wb") as f:
        f.write(data)
    python = python_answer(path)
    expected = "refuse" if on_purpose else python
    rc, out, err, rss = run([TOOL, "diff", path, path])
    bound = base_rss + 2 * 2 * len(data) + BUDGET  # two files of len(data) bytes
    lines = err.strip().splitlines()
    got = "load" if rc == 0 else "refuse" if rc == 3 else f"exit {rc}"
    print(f"{name:28} torch.load: {python:6} repro-audit: {got:6} peak {rss >> 20} MiB"
          + (f"  (refused on purpose: {on_purpose})" if on_purpose else ""), file=sys.stderr)
    check(got == expected, f"{name}: expected {expected}, got {got}: {err.strip()}")
    check(rss <= bound, f"{name}: peak memory {rss >> 20} MiB above the bound {bound >> 20} MiB")
    if got == "refuse":
        check(len(lines) == 1 and lines[0].startswith("repro-audit: ") and path in lines[0],
              f"{name}: one line naming the file expected on stderr, got {lines}")
        check(out == "", f"{name}: nothing expected on stdout, got {out[:200]!r}")
    if got == "load":
        check("identical" in out, f"{name}: a file diffed with itself is identical, got {out[:200]!r}")

# The trial path: `run --input` must refuse what diff refuses, before any verdict (the old reader
# gave a false "diverged" for a storage offset past the end).
good_input = os.path.join(WORK, "good_input.pt")
torch.save(torch.arange(4.0), good_input)
rc, _, err, run_rss = run([TOOL, "run", model, "--input", good_input, "--repeats", "2"])
check(rc == 0, f"run --input with a genuine file: exit {rc}, {err}")
for name in ["offset_past_end", "string_claims_4GiB", "nested_50000_lists", "negative_stride"]:
    path = os.path.join(WORK, name + ".pt")
    report = os.path.join(WORK, name + ".json")
    rc, out, err, rss = run([TOOL, "run", model, "--input", path, "--repeats", "2", "--report", report])
    lines = err.strip().splitlines()
    check(rc == 3, f"run --input {name}: exit 3 expected, got {rc}: {err.strip()}")
    check(len(lines) == 1 and path in lines[0], f"run --input {name}: one line naming the file, got {lines}")
    check(not os.path.exists(report), f"run --input {name}: no report expected")
    check(rss <= run_rss + 2 * len(cases[name][0]) + BUDGET, f"run --input {name}: peak memory {rss >> 20} MiB")

# JSON documents (report, compare, --baseline, --allowlist): a flat array of 20 million zeros (a
# DOM of 20 times the file's size before the cap) and arrays nested a million deep.
rc, _, err, tiny_rss = run([TOOL, "report", os.path.join(WORK, "missing.json")])
json_cases = {"flat_20M_values.json": '{"schema": "repro-audit/report", "x": [' + ",".join(["0"] * 20000000) + "]}",
              "nested_1M_deep.json": "[" * 1000000 + "]" * 1000000}
for name, body in json_cases.items():
    path = os.path.join(WORK, name)
    with open(path, "w") as f:
        f.write(body)
    for argv in ([TOOL, "report", path], [TOOL, "compare", path, path],
                 [TOOL, "run", model, "--shape", "4", "--repeats", "2", "--baseline", path],
                 [TOOL, "run", model, "--shape", "4", "--repeats", "2", "--allowlist", path]):
        rc, out, err, rss = run(argv)
        lines = err.strip().splitlines()
        what = f"{argv[1]} {name}"
        print(f"{what:40} exit {rc}  peak {rss >> 20} MiB  {lines[-1][:90] if lines else ''}", file=sys.stderr)
        check(rc == 3, f"{what}: exit 3 expected, got {rc}: {err.strip()[:300]}")
        check(len(lines) == 1, f"{what}: one line expected, got {lines[:3]}")
        bound = max(tiny_rss, run_rss if argv[1] == "run" else 0) + 2 * len(body) + BUDGET
        check(rss <= bound, f"{what}: peak memory {rss >> 20} MiB above {bound >> 20} MiB")

if failures:
    print(f"{len(failures)} failure(s)", file=sys.stderr)
    sys.exit(1)
print(f"{len(cases)} hostile files: every answer as expected, memory within the bound", file=sys.stderr)
