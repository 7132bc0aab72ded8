#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Hostile archives and oversized values through the binary (issue 28, defects 3, 9 and 10):
#   * an AOTInductor package with a ".." entry name writes nothing outside the audit's scratch and
#     exits 3 with one line; a package whose load fails leaves no folder in /tmp nor in TMPDIR;
#     --no-native refuses a package with exit 3 and one line;
#   * model archives whose entry names or sizes break the rules of the ARCHIVES section of the man
#     page (a zip bomb above all) exit 3 with one line, within bounded memory;
#   * a safetensors file of 200k tensors, and one whose header length does not fit, exit 3 with one
#     line that says what is wrong;
#   * a 50 MB string in a JSON input is not echoed whole: the error line stays short.
# The packages are crafted from the small fixture tests/data/aoti_package.pt2 (no compiler needed);
# its top folder is renamed to one unique to this run, so that a folder LibTorch's package loader
# would leave in /tmp is found (and removed) without touching anything else there.
#
# Usage: test_hostile_archives.py REPRO_AUDIT WORKDIR  (exits 77, skipped, without the venv's torch).
import glob
import json
import os
import shutil
import struct
import sys
import zipfile

from hostile_common import check, failures, run_measured, start

torch, TOOL, WORK = start(fresh=True)
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
TMP = os.path.join(WORK, "tmpdir")  # the tool's TMPDIR: empty again after every run
os.makedirs(TMP)
TOP = f"ra_hostile_{os.getpid()}"  # the crafted packages' top folder
BUDGET = 192 << 20
if os.environ.get("REPRO_AUDIT_TEST_ASAN") == "1":
    BUDGET += 256 << 20


def run(*argv):
    """(exit code, stdout, stderr, peak resident bytes), with TMPDIR set to the test's folder."""
    return run_measured([TOOL, *map(str, argv)], WORK, env={**os.environ, "TMPDIR": TMP}, timeout=600)


def leftovers():
    """Folders LibTorch's package loader left in /tmp for our packages (removed once seen), and what TMPDIR holds."""
    found = sorted(glob.glob(f"/tmp/*/{TOP}"))
    for path in found:
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    return found, sorted(os.listdir(TMP))


def refused(what, argv, texts, code=3):
    rc, out, err, rss = run(*argv)
    lines = err.strip().splitlines()
    check(rc == code, f"{what}: exit {code} expected, got {rc}: {err.strip()[:400]}")
    check(len(lines) == 1 and all(t in err for t in texts),
          f"{what}: one line with {texts} expected, got {[line[:300] for line in lines[:3]]}")
    in_tmp, in_tmpdir = leftovers()
    check(not in_tmp and not in_tmpdir, f"{what}: left behind: {in_tmp} in /tmp, {in_tmpdir} in TMPDIR")
    print(f"{what:44} exit {rc}  peak {rss >> 20} MiB  {lines[-1][:110] if lines else ''}", file=sys.stderr)
    return rss


# ---- AOTInductor packages -------------------------------------------------------------------------


def package(name, extra=()):
    """The fixture under TOP/, with metadata for this CPU and a library that is not one, plus `extra`."""
    path = os.path.join(WORK, name)
    with zipfile.ZipFile(os.path.join(DATA, "aoti_package.pt2")) as src, zipfile.ZipFile(path, "w") as dst:
        for item in src.infolist():
            entry = TOP + item.filename[item.filename.index("/"):]
            data = src.read(item.filename)
            if entry.endswith("wrapper_metadata.json"):
                data = json.dumps({"AOTI_DEVICE_KEY": "cpu"}).encode()
            elif entry.endswith(".so"):
                data = b"not a library" * 64
            dst.writestr(entry, data)
        for entry, data in extra:
            dst.writestr(entry, data)
    return path


# Zip-slip: from the loader's /tmp/XXXXXX/TOP/data/aotinductor/model/, six '..' reach '/'.
target_dir = os.path.join(WORK, "outside")
pwned = os.path.join(target_dir, "PWNED")
slip = package("slip.pt2", [(f"{TOP}/data/aotinductor/model/" + "../" * 6 + pwned.lstrip("/"), b"written outside")])
refused("zip-slip package", ["run", slip, "--shape", "2x4"], ["has a '..' component", slip])
check(not os.path.exists(pwned), f"zip-slip: {pwned} was written")
shutil.rmtree(target_dir, ignore_errors=True)

# A package whose library fails to load: one line, nothing left in /tmp or TMPDIR.
junk = package("junk.pt2")
refused("package whose load fails", ["run", junk, "--shape", "2x4"], ["is an AOTInductor package that cannot be loaded"])
refused("package under --no-native", ["run", junk, "--shape", "2x4", "--no-native"], ["--no-native", "native code", junk])
# Other entry names that could write outside: absolute, backslash, NUL (Python's zipfile cuts a name
# at a NUL: the byte is patched in after), an empty component.
for what, entry in (("absolute entry", "/" + TOP + "/data/aotinductor/model/abs.txt"),
                    ("backslash entry", TOP + "/data/aotinductor/model/..\\..\\evil.txt"),
                    ("NUL entry", TOP + "/data/aotinductor/model/evil.so#.txt"),
                    ("empty component", TOP + "/data/aotinductor//model/x.txt")):
    path = package(what.replace(" ", "_") + ".pt2", [(entry, b"x")])
    if "#" in entry:
        with open(path, "rb") as f:
            blob = f.read()
        with open(path, "wb") as f:
            f.write(blob.replace(b"evil.so#", b"evil.so\0"))
    refused(what, ["run", path, "--shape", "2x4"], ["archive entry", "refuses the archive"])

# ---- model archives: sizes -----------------------------------------------------------------------


def rewritten(name, source, extra=(), compress=zipfile.ZIP_STORED):
    path = os.path.join(WORK, name)
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(path, "w") as dst:
        for item in src.infolist():
            dst.writestr(item, src.read(item.filename))
        for entry, data in extra:
            dst.writestr(zipfile.ZipInfo(entry), data, compress_type=compress)
    return path


exported = os.path.join(DATA, "exported.pt2")
rc, _, err, base_rss = run("run", exported, "--shape", "2x4", "--repeats", "2")
check(rc == 0, f"the genuine export archive: exit {rc}, {err.strip()[:300]}")
# A zip bomb: 256 MiB of zeros deflated to a quarter of a megabyte, as a weights record.
bomb = rewritten("bomb.pt2", exported, [("exported/data/weights/bomb", bytes(256 << 20))], zipfile.ZIP_DEFLATED)
rss = refused("export zip bomb", ["run", bomb, "--shape", "2x4", "--repeats", "2"], ["would expand", "100 times", bomb])
check(rss <= base_rss + BUDGET, f"export zip bomb: peak memory {rss >> 20} MiB above {(base_rss + BUDGET) >> 20} MiB")
# A stored entry that declares another size than it stores, and two entries with one name.
liar = rewritten("liar.pt2", exported, [("exported/data/weights/extra", b"1234")])
with open(liar, "r+b") as f:  # its central directory record's uncompressed size: 4 -> 4096
    at = f.read().rfind(b"PK\x01\x02")  # the last entry's, the one added
    f.seek(at + 24)
    f.write(struct.pack("<I", 4096))
refused("stored entry with a false size", ["run", liar, "--shape", "2x4"], ["declares 4096 bytes", liar])
twice = rewritten("twice.pt2", exported, [("exported/data/weights/weight_0", b"0" * 48)])
refused("two entries with one name", ["run", twice, "--shape", "2x4"], ["two archive entries are named", twice])

# ---- safetensors ---------------------------------------------------------------------------------


def safetensors(name, header, data=b"", length=None):
    path = os.path.join(WORK, name)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text) if length is None else length) + text + data)
    return path


many = safetensors("many.safetensors", {f"t{i}": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]} for i in range(200000)})
refused("safetensors with 200k tensors", ["diff", many, many], ["200000 tensors, more than the 65536", many])
short = safetensors("short.safetensors", {"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4, 1 << 20)
refused("safetensors with a header length past the end", ["diff", short, short],
        ["looks like a safetensors file", "header length (1048576 bytes) exceeds the", short])

# ---- a long value in a JSON input ----------------------------------------------------------------
long_json = os.path.join(WORK, "long_schema.json")
with open(long_json, "w") as f:
    f.write('{"schema": "' + "x" * (50 << 20) + '"}')
rc, out, err, _ = run("report", long_json)
check(rc == 3 and len(err) < 2000 and "bytes" in err,
      f"a 50 MB string in a report: exit {rc}, {len(err)} bytes on stderr: {err[:300]!r}")
print(f"{'50 MB string in a JSON input':44} exit {rc}  {len(err)} bytes on stderr", file=sys.stderr)

if failures:
    print(f"{len(failures)} failure(s)", file=sys.stderr)
    sys.exit(1)
print("hostile archives: every answer as expected, nothing left behind", file=sys.stderr)
