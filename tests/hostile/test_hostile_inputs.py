#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Smaller hostile inputs through the binary (issue 39):
#  - a FIFO given as the model, as --input or as a report is refused at once, with one line and
#    exit 3 (it blocked the worker until --timeout, 600 s); so is one given to either side of diff
#    or as lint --knowledge (issue 51: both blocked in open until a writer came);
#  - what a TorchScript model raises is quoted whole, its line breaks escaped, cut at about 900 bytes;
#  - the '=' form of an option works as the spaced one (`run --configs=default m.pt` said "model is
#    required");
#  - merge refuses invariance shards whose batch sizes are not from 1 to their budget (-5, 0, 2^63-1);
#  - --trace-capacity at the largest value it accepts runs (2^32 made every trial fail: bad_alloc);
#  - exec reads at most 512 hook reports of at most 4 MiB each, and says so;
#  - a front killed with SIGKILL leaves its cgroup folder; the next run removes it (skipped where
#    trials get no cgroup).
#
# Usage: test_hostile_inputs.py REPRO_AUDIT WORKDIR   (exits 77, skipped, without torch).
import json
import os
import signal
import subprocess
import sys
import time

from hostile_common import start

torch, TOOL, WORK = start()
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def path(name):
    return os.path.join(WORK, name)


def tool(*args, timeout=300):
    try:
        return subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=timeout, cwd=WORK)
    except subprocess.TimeoutExpired:  # killed (a reader blocked on a FIFO): a failure of its own, not a hang
        return subprocess.CompletedProcess([TOOL, *args], -1, "", f"timed out after {timeout} s")


def one_line(r, code, needle, what):
    lines = r.stderr.strip().splitlines()
    check(r.returncode == code, f"{what}: exit {r.returncode}, not {code}: {r.stderr[-300:]}")
    check(len(lines) == 1, f"{what}: {len(lines)} lines on stderr, not one: {r.stderr[-300:]}")
    check(needle in r.stderr, f"{what}: stderr does not say '{needle}': {r.stderr[-300:]}")


torch.jit.script(torch.nn.Linear(3, 2)).save(path("m.pt"))
torch.save(torch.randn(8, 3), path("rows.pt"))

# 1. FIFOs. Nothing writes to them: a reader that opens one blocks, and the timeout fails the test.
fifo = path("fifo")
os.mkfifo(fifo)
for args, what in (((fifo, "--shape", "2x3"), "run with a FIFO as the model"),
                   ((path("m.pt"), "--input", fifo), "run --input FIFO")):
    one_line(tool("run", *args, "--timeout", "600", timeout=60), 3, "is a FIFO, not a regular file", what)
one_line(tool("invariance", path("m.pt"), "--input", fifo, timeout=60), 3, "is a FIFO, not a regular file",
         "invariance --input FIFO")
one_line(tool("invariance", fifo, "--input", path("rows.pt"), timeout=60), 3, "is a FIFO, not a regular file",
         "invariance with a FIFO as the model")
one_line(tool("report", fifo, timeout=60), 3, "is a FIFO, not a regular file", "report of a FIFO")
one_line(tool("lint", fifo, timeout=60), 3, "is a FIFO, not a regular file", "lint of a FIFO")
for args, what in ((("diff", fifo, path("rows.pt")), "diff with a FIFO as its first file"),
                   (("diff", path("rows.pt"), fifo), "diff with a FIFO as its second file"),
                   (("lint", path("m.pt"), "--knowledge", fifo), "lint --knowledge FIFO")):
    one_line(tool(*args, timeout=60), 3, "is a FIFO, not a regular file", what)

# 1b. A model's own exception is quoted whole on the tool's one line, its line breaks escaped (issue
# 51): a message of several lines once had its last line alone stand after the tool's words, as if
# the tool said it ("the model rejects the inputs (float32[4x16]): verdict: reproducible (exit 0)").
class SaysNo(torch.nn.Module):
    def __init__(self, message: str):
        super().__init__()
        self.message = message

    def forward(self, x):
        if x.shape[0] > 0:
            raise RuntimeError(self.message)
        return x


torch.jit.script(SaysNo("model says no\nverdict: reproducible (exit 0)")).save(path("says_no.pt"))
torch.jit.script(SaysNo("z" * 5000)).save(path("says_much.pt"))
torch.save(torch.randn(8, 16), path("rows16.pt"))
quoted = "builtins.RuntimeError: model says no\\nverdict: reproducible (exit 0)"
one_line(tool("run", path("says_no.pt"), "--shape", "4x16"), 3,
         "the model rejects the inputs (float32[4x16]): " + quoted, "run of a model raising two lines")
one_line(tool("invariance", path("says_no.pt"), "--input", path("rows16.pt"), "--sizes", "1,2"), 3, quoted,
         "invariance of a model raising two lines")
r = tool("run", path("says_much.pt"), "--shape", "4x16")
one_line(r, 3, "builtins.RuntimeError: zzz", "run of a model raising 5000 bytes")
check("... (5023 bytes)" in r.stderr and len(r.stderr) < 1000,
      f"run of a model raising 5000 bytes: cut at about 900 bytes, with its length: {len(r.stderr)} bytes: "
      f"{r.stderr[-200:]!r}")

# 2. The '=' form.
r = tool("run", "--configs=default", path("m.pt"), "--shape=2x3", "--repeats=2", "--report=" + path("eq.json"))
check(r.returncode == 0, f"run --configs=default m.pt: exit {r.returncode}: {r.stderr[-300:]}")
if r.returncode == 0:
    rep = json.load(open(path("eq.json")))
    configs = [c["config"] for t in rep["targets"] for c in t["configs"]]
    check(configs == ["default"], f"run --configs=default: configurations {configs}")
r = tool("run", "--configs", "default", path("m.pt"), "--shape", "2x3", "--repeats", "2")
check(r.returncode == 0, f"run --configs default m.pt --shape 2x3: exit {r.returncode}: {r.stderr[-300:]}")
r = tool("invariance", "--input=" + path("rows.pt"), path("m.pt"), "--rows=2", "--sizes=1,2", "--configs=default")
check(r.returncode in (0, 1), f"invariance --input=rows.pt m.pt: exit {r.returncode}: {r.stderr[-300:]}")

# 3. merge and invariance shards' batch sizes.
shards = []
for k in (1, 2):
    out = path(f"shard{k}.json")
    r = tool("invariance", path("m.pt"), "--input", path("rows.pt"), "--rows", "2", "--sizes", "1,2,3,4",
             "--configs", "default", "--shard", f"{k}/2", "--report", out)
    check(r.returncode in (0, 1) and os.path.exists(out), f"invariance --shard {k}/2: exit {r.returncode}: {r.stderr[-300:]}")
    shards.append(out)
if all(os.path.exists(s) for s in shards):
    r = tool("merge", *shards, "--report", path("merged.json"))
    check(r.returncode in (0, 1), f"merge of two genuine invariance shards: exit {r.returncode}: {r.stderr[-300:]}")
    for bad in (-5, 0, 2**63 - 1):
        doc = json.load(open(shards[1]))
        cells = [c for conf in doc["invariance"]["configs"] for c in conf["cells"]]
        check(bool(cells), "the second shard holds no cell to edit")
        for c in cells:
            c["size"] = bad
        edited = path(f"shard2-{bad}.json")
        json.dump(doc, open(edited, "w"))
        one_line(tool("merge", shards[0], edited), 3, f"batch size {bad}", f"merge with a batch size of {bad}")

# 3b. --trace-capacity at the largest value it accepts runs (2^32 made every trial fail with
# std::bad_alloc): the maximum is read from the tool's own refusal of a larger value.
r = tool("run", path("m.pt"), "--shape", "2x3", "--trace", "--trace-capacity", "99999999999999")
words = r.stderr.split("expected an integer from 1024 to ")
check(r.returncode == 2 and len(words) == 2, f"--trace-capacity 99999999999999: exit {r.returncode}: {r.stderr[-300:]}")
if len(words) == 2:
    largest = words[1].split(",")[0]
    r = tool("run", path("m.pt"), "--shape", "2x3", "--trace", "--trace-capacity", largest, "--configs", "default",
             "--repeats", "2", "--no-fix-search")
    check(r.returncode == 0, f"--trace-capacity {largest} (the largest accepted): exit {r.returncode}: {r.stderr[-300:]}")

# 4. exec's hook reports: their number and size are capped, and the report says so.
r = tool("exec", "--repeats", "2", "--report", path("hooks.json"), "--", "sh", "-c",
         'for i in $(seq 1 600); do echo "{}" > "$REPRO_AUDIT_HOOK_DIR/hook-$i.json"; done; '
         'head -c 5000000 /dev/zero > "$REPRO_AUDIT_HOOK_DIR/hook-0.json"; echo a > "$REPRO_AUDIT_OUT/a"')
check(r.returncode in (0, 1), f"exec with 601 hook reports: exit {r.returncode}: {r.stderr[-300:]}")
check("601 hook reports, more than the 512 read" in r.stderr, f"exec with 601 hook reports: no warning: {r.stderr[-300:]}")
check("more than the 4 MiB a hook report may hold" in r.stderr, f"exec with a 5 MB hook report: no warning: {r.stderr[-300:]}")


# 5. A front killed outright leaves its trial's cgroup; the next front removes it.
def cgroup_folder():
    own = next((line[3:].strip() for line in open("/proc/self/cgroup") if line.startswith("0::")), None)
    for line in open("/proc/self/mountinfo"):
        head, _, tail = line.partition(" - ")
        if own is not None and tail.startswith("cgroup2 "):
            root, point = head.split()[3], head.split()[4]
            if root == "/":
                return point + own.rstrip("/") if own != "/" else point
    return None


folder = cgroup_folder()
probe = os.path.join(folder, f"repro-audit-test.{os.getpid()}") if folder else None
try:
    writable = probe is not None and (os.mkdir(probe) or True)
    os.rmdir(probe)
except OSError:
    writable = False
if not writable:
    print("cgroup check skipped: no writable cgroup v2 folder here", file=sys.stderr)
else:
    class Slow(torch.nn.Module):
        def forward(self, x):
            for _ in range(400):
                x = torch.tanh(x @ x)
            return x

    torch.jit.script(Slow()).save(path("slow.pt"))
    # Its scratch goes below the test's own folder: a front killed outright cannot remove it, and
    # the machine's /tmp is not ours to leave it in.
    scratch = os.path.join(WORK, "killed-front-tmp")
    os.makedirs(scratch, exist_ok=True)
    p = subprocess.Popen([TOOL, "run", path("slow.pt"), "--shape", "256x256", "--repeats", "50"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=WORK,
                         env=dict(os.environ, TMPDIR=scratch))
    ours = lambda: [n for n in os.listdir(folder) if n.startswith(f"repro-audit.{p.pid}.")]
    end = time.monotonic() + 120
    while not ours() and time.monotonic() < end and p.poll() is None:
        time.sleep(0.05)
    left = ours()
    p.send_signal(signal.SIGKILL)
    p.wait()
    time.sleep(2)  # the trials die with their parent (PR_SET_PDEATHSIG)
    left = [n for n in left if os.path.isdir(os.path.join(folder, n))]
    if not left:
        print("cgroup check skipped: the killed front left no cgroup folder", file=sys.stderr)
    else:
        r = tool("run", path("m.pt"), "--shape", "2x3", "--configs", "default", "--repeats", "2")
        check(r.returncode == 0, f"the run after a killed front: exit {r.returncode}: {r.stderr[-300:]}")
        still = [n for n in left if os.path.isdir(os.path.join(folder, n))]
        check(not still, f"the cgroup folders {still} of a killed front are still there after the next run")
        for n in still:  # leave the machine as it was
            try:
                os.rmdir(os.path.join(folder, n))
            except OSError:
                pass

if failures:
    sys.exit(1)
print("ok: FIFOs refused, '=' options read, merge's sizes checked, hook reports capped, stale cgroups removed")
