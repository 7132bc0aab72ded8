#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Deep and wide JSON through every reader of the binary (issue 39):
#  - nesting deeper than the documented limit (256 levels: 100,000 arrays, 50,000 objects, and 257
#    levels) is refused while parsing, with one line naming the file and exit 3, by report, compare
#    (as A and as B), merge, run --baseline, invariance --baseline, --allowlist, probes --knowledge,
#    a safetensors header (diff), an exported program's graph (lint) and exec's hook reports (a
#    warning, the audit goes on); 100,000 nested arrays crashed them all (SIGSEGV);
#  - 256 levels are read (the report reader then names what is wrong with it, exit 3, no crash);
#  - an object of 200,000 keys is read (it took 72 s: quadratic), and SIGINT during the parse of
#    one of 2,000,000 values ends the tool with exit 130 (it acted only after the parse).
# The limits are not timed: a reader that is quadratic again runs past the subprocess's timeout.
#
# Usage: test_hostile_json.py REPRO_AUDIT WORKDIR   (exits 77, skipped, without torch).
import os
import signal
import struct
import subprocess
import sys
import time
import zipfile

from hostile_common import start

torch, TOOL, WORK = start()
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def path(name):
    return os.path.join(WORK, name)


def write(name, text):
    with open(path(name), "w" if isinstance(text, str) else "wb") as f:
        f.write(text)
    return path(name)


def tool(*args, timeout=300):
    return subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=timeout, cwd=WORK)


def refused(r, what, needle="deeper than 256 levels"):
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 3, f"{what}: exit {r.returncode}, not 3: {r.stderr[-300:]}")
    check(len(lines) == 1, f"{what}: {len(lines)} lines on stderr, not one: {r.stderr[-300:]}")
    check(needle in r.stderr, f"{what}: stderr does not say '{needle}': {r.stderr[-300:]}")


# A genuine model, input and report to put next to the hostile files.
model = torch.jit.script(torch.nn.Linear(3, 2))
model.save(path("m.pt"))
torch.save(torch.randn(8, 3), path("rows.pt"))
r = tool("run", path("m.pt"), "--shape", "2x3", "--configs", "default", "--repeats", "2", "--report", path("good.json"))
check(r.returncode == 0, f"the genuine run: exit {r.returncode}: {r.stderr[-300:]}")

arrays = "[" * 100000 + "]" * 100000
objects = '{"a": ' * 50000 + "1" + "}" * 50000
# Members after the deep one: the object's growth copied the deep value (a recursion per level).
TAIL = ', "a": 1, "b": 2, "c": 3, "d": 4, "e": 5}'
DEEP = {
    "arrays": write("deep-arrays.json", '{"zz": ' + arrays + TAIL),
    "objects": write("deep-objects.json", '{"zz": ' + objects + TAIL),
    "257": write("deep-257.json", '{"zz": ' + "[" * 256 + "]" * 256 + TAIL),
}
for kind, deep in DEEP.items():
    refused(tool("report", deep), f"report ({kind})")
    refused(tool("compare", deep, path("good.json")), f"compare A ({kind})")
    refused(tool("compare", path("good.json"), deep), f"compare B ({kind})")
    refused(tool("merge", deep, path("good.json")), f"merge ({kind})")
    refused(tool("run", path("m.pt"), "--shape", "2x3", "--baseline", deep), f"run --baseline ({kind})")
    refused(tool("invariance", path("m.pt"), "--input", path("rows.pt"), "--baseline", deep),
            f"invariance --baseline ({kind})")
    refused(tool("run", path("m.pt"), "--shape", "2x3", "--allowlist", deep), f"run --allowlist ({kind})")
    refused(tool("compare", path("good.json"), path("good.json"), "--allowlist", deep), f"compare --allowlist ({kind})")
    refused(tool("probes", "--knowledge", deep, "--list"), f"probes --knowledge ({kind})")

# 256 levels are within the limit: the reader gets the document and names what is wrong with it.
r = tool("report", write("deep-256.json", '{"zz": ' + "[" * 255 + "]" * 255 + TAIL))
check(r.returncode == 3 and "deeper than" not in r.stderr and len(r.stderr.strip().splitlines()) == 1,
      f"report (256 levels): exit {r.returncode}: {r.stderr[-300:]}")

# A safetensors header (diff) and an exported program's graph (lint).
header = ('{"zz": ' + arrays + TAIL).encode()
st = write("deep.safetensors", struct.pack("<Q", len(header)) + header)
refused(tool("diff", st, st), "diff of a safetensors file")
exported = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "exported.pt2")
with zipfile.ZipFile(exported) as zin, zipfile.ZipFile(path("deep.pt2"), "w", zipfile.ZIP_STORED) as zout:
    for info in zin.infolist():
        zout.writestr(info, header if info.filename.endswith("models/model.json") else zin.read(info.filename))
refused(tool("lint", path("deep.pt2")), "lint of an exported program")

# A hook report is the user's program's: a deep one is skipped with a warning, and the audit goes on.
hook = write("hook.json", '{"format": "repro-audit/exec-hook-1", "zz": ' + arrays + TAIL)
r = tool("exec", "--repeats", "2", "--report", path("exec.json"), "--", "sh", "-c",
         f'cp {hook} "$REPRO_AUDIT_HOOK_DIR/hook-9.json"; echo a > "$REPRO_AUDIT_OUT/a"')
check(r.returncode in (0, 1), f"exec with a deep hook report: exit {r.returncode}: {r.stderr[-300:]}")
check("deeper than 256 levels" in r.stderr, f"exec with a deep hook report: no warning names the nesting: {r.stderr[-300:]}")

# Wide: an object of 200,000 keys is read (the report reader then refuses the unknown key).
wide = "{" + ",".join(f'"k{i}": {i}' for i in range(200000)) + "}"
good = open(path("good.json")).read()
r = tool("report", write("wide.json", '{"zz": ' + wide + ", " + good.lstrip()[1:]), timeout=120)
check(r.returncode in (0, 3) and len(r.stderr.strip().splitlines()) <= 1,
      f"report of 200,000 keys: exit {r.returncode}: {r.stderr[-300:]}")

# A stop request during the parse of 2,000,000 values: exit 130, one line.
big = write("big.json", "{" + ",".join(f'"k{i}": {i}' for i in range(2000000)) + "}")
p = subprocess.Popen([TOOL, "report", big], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
time.sleep(0.5)
p.send_signal(signal.SIGINT)
try:
    out, err = p.communicate(timeout=60)
    check(p.returncode == 130, f"SIGINT while parsing: exit {p.returncode}: {err[-300:]}")
except subprocess.TimeoutExpired:
    p.kill()
    p.communicate()
    check(False, "SIGINT while parsing: the tool was still parsing 60 s later")

if failures:
    sys.exit(1)
print("ok: deep JSON refused by every reader, wide JSON read, a parse interrupted")
