#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `exec` never touches what isn't ours (issue 28, defects 1 and 7): a run that points its patterns,
# its $REPRO_AUDIT_OUT or a folder of a pattern at other files, or leaves a FIFO or a symlink where
# an artifact was expected, must not make the audit delete, move or read anything outside its
# scratch, nor hang. Every "outside" folder is the test's own; TMPDIR is the test's own too, and
# must hold nothing once each audit ends.
#
# usage: test_exec_artifacts.py REPRO_AUDIT_BINARY WORK_FOLDER
import json
import os
import pathlib
import shutil
import subprocess
import sys

binary, work = os.path.abspath(sys.argv[1]), pathlib.Path(sys.argv[2]).resolve()
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
tmp = work / "tmp"
tmp.mkdir()
env = {**os.environ, "TMPDIR": str(tmp)}
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def exec_(cwd, *args, report=None, limit=300):
    cmd = [binary, "exec", *map(str, args)]
    if report is not None:
        i = cmd.index("--")
        cmd[i:i] = ["--report", str(report)]
    # The limit only keeps a hang from stalling ctest: every case here ends in seconds.
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, cwd=cwd, env=env)
    except subprocess.TimeoutExpired:
        check(False, f"{args}: still running after {limit} s (blocked reading?)")
        r = subprocess.CompletedProcess(cmd, -1, "", "")
    left = [p.name for p in tmp.iterdir() if p.name != "f"]
    check(not left, f"{args}: scratch left in TMPDIR: {left}")
    return r


def one_line_error(r, code, words, what):
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check(r.returncode == code, f"{what}: exit {r.returncode}, wanted {code}: {r.stderr[-400:]}")
    check(any(l.startswith("repro-audit: ") and words in l for l in lines[-1:]), f"{what}: stderr {lines}")


def sentinel_folder(name):
    d = work / name
    d.mkdir()
    (d / "keep.txt").write_bytes(b"keep me\n")
    (d / "other.txt").write_bytes(b"mine too\n")
    return d


def intact(d, what):
    check((d / "keep.txt").exists() and (d / "keep.txt").read_bytes() == b"keep me\n", f"{what}: {d}/keep.txt was touched")
    check((d / "other.txt").exists() and (d / "other.txt").read_bytes() == b"mine too\n", f"{what}: {d}/other.txt was touched")


def artifacts(rep):
    return {a["name"]: a for a in json.loads(rep.read_text())["targets"][0]["exec"]["artifacts"]}


# 1. '{out}/..' climbs out of the run's folder into TMPDIR: a usage error, and $TMPDIR/f stays.
(tmp / "f").write_bytes(b"keep\n")
r = exec_(work, "--repeats", "2", "--artifact", "{out}/../../../*", "--", "sh", "-c", 'echo x > "$REPRO_AUDIT_OUT/a"')
one_line_error(r, 2, "'..' leaves $REPRO_AUDIT_OUT", "{out}/..")
check((tmp / "f").exists() and (tmp / "f").read_bytes() == b"keep\n", "{out}/..: $TMPDIR/f was removed")
(tmp / "f").unlink(missing_ok=True)

# '..' and absolute paths outside the working directory are usage errors too, unless named with
# --artifact-root; then only what the pattern matches, written by the run, is taken.
outside = sentinel_folder("outside")
proj = work / "proj"
proj.mkdir()
writes = f'echo same > {outside}/new.txt'
one_line_error(exec_(proj, "--repeats", "2", "--artifact", "../outside/*.txt", "--", "sh", "-c", writes), 2,
               "reaches outside the working directory", "relative ..")
one_line_error(exec_(proj, "--repeats", "2", "--artifact", f"{outside}/new.txt", "--", "sh", "-c", writes), 2,
               "--artifact-root", "absolute outside")
intact(outside, "refused patterns")
rep = work / "root.json"
r = exec_(proj, "--repeats", "2", "--artifact-root", outside, "--artifact", "../outside/new.txt", "--", "sh", "-c", writes, report=rep)
check(r.returncode == 0, f"--artifact-root: exit {r.returncode}: {r.stderr[-400:]}")
check(not (outside / "new.txt").exists(), "--artifact-root: the run's file was not taken")
intact(outside, "--artifact-root")
if rep.exists():
    check(list(artifacts(rep)) == [f"{outside}/new.txt"], f"--artifact-root: artifacts {list(artifacts(rep))}")
# An absolute pattern inside the working directory needs no root.
r = exec_(proj, "--repeats", "2", "--artifact", f"{proj}/in.txt", "--", "sh", "-c", 'echo same > in.txt')
check(r.returncode == 0 and not (proj / "in.txt").exists(), f"absolute inside: exit {r.returncode}: {r.stderr[-400:]}")

# 2. The run replaces $REPRO_AUDIT_OUT by a symlink to a folder of the user's: nothing in it is taken.
victim = sentinel_folder("victim-out")
r = exec_(work, "--repeats", "2", "--", "sh", "-c", f'rmdir "$REPRO_AUDIT_OUT" && ln -s {victim} "$REPRO_AUDIT_OUT"')
one_line_error(r, 3, "by a symlink", "symlinked {out}")
intact(victim, "symlinked {out}")

# 3. The run makes a folder of the pattern a symlink: not followed, the folder's files stay.
victim = sentinel_folder("victim-ck")
cwd = work / "ck-run"
cwd.mkdir()
r = exec_(cwd, "--repeats", "2", "--artifact", "ck/*.txt", "--", "sh", "-c", f"ln -sfn {victim} ck")
one_line_error(r, 3, "'ck': a symlink, not followed", "symlinked folder")
intact(victim, "symlinked folder")
(cwd / "ck").unlink(missing_ok=True)
# ... and a symlink the user made before the audit is refused before the first run.
os.symlink(victim, cwd / "ck")
one_line_error(exec_(cwd, "--repeats", "2", "--artifact", "ck/*.txt", "--", "true"), 3, "is a symlink", "user's symlinked folder")
intact(victim, "user's symlinked folder")
(cwd / "ck").unlink(missing_ok=True)

# A symlink the pattern names is taken as a symlink: its text, not its target's bytes.
rep = work / "link.json"
r = exec_(cwd, "--repeats", "2", "--artifact", "lnk", "--", "sh", "-c", f"ln -sfn {victim} lnk", report=rep)
check(r.returncode == 0, f"link in cwd: exit {r.returncode}: {r.stderr[-400:]}")
check(not os.path.lexists(cwd / "lnk"), "link in cwd: the run's symlink was left in the working directory")
intact(victim, "link in cwd")
if rep.exists():
    a = artifacts(rep).get("lnk", {})
    check(a.get("kind") == "symlink" and str(victim) in a.get("note", ""), f"link in cwd: {a}")

# Symlinks in {out} are compared by their link text: another target in each run is a divergence.
rep = work / "relink.json"
r = exec_(work, "--repeats", "2", "--no-fix-search", "--", "sh", "-c",
          'echo a > "$REPRO_AUDIT_OUT/a"; ln -s "target-$REPRO_AUDIT_TRIAL" "$REPRO_AUDIT_OUT/l"', report=rep)
check(r.returncode == 1, f"relink: exit {r.returncode}: {r.stderr[-400:]}")
if rep.exists():
    t = json.loads(rep.read_text())["targets"][0]
    check([f["name"] for f in t["configs"][0]["diverged_tensors"]] == ["l"], f"relink: {t['configs'][0]['diverged_tensors']}")
    check(artifacts(rep).get("l", {}).get("kind") == "symlink", f"relink: {artifacts(rep)}")

# 7. A FIFO, and a symlink to one, where artifacts are expected: neither is opened (a read would
# block until a writer came), the audit ends, and the report says why each was not read.
fifo = work / "fifo"
os.mkfifo(fifo)
rep = work / "fifo.json"
r = exec_(work, "--repeats", "2", "--", "sh", "-c",
          f'echo a > "$REPRO_AUDIT_OUT/a"; mkfifo "$REPRO_AUDIT_OUT/p"; ln -s {fifo} "$REPRO_AUDIT_OUT/k"', report=rep)
check(r.returncode == 0, f"fifo: exit {r.returncode}: {r.stderr[-400:]}")
if rep.exists():
    a = artifacts(rep)
    check(a.get("p", {}).get("kind") == "skipped" and "FIFO" in a["p"]["note"], f"fifo: {a.get('p')}")
    check(a.get("k", {}).get("kind") == "symlink" and a.get("a", {}).get("kind") == "bytes", f"fifo: {a}")
check("not taken" in r.stderr and "FIFO" in r.stderr, f"fifo: no warning on stderr: {r.stderr[-400:]}")
check(fifo.exists() and not fifo.is_symlink(), "fifo: the test's FIFO was touched")

# The same with --artifact naming the FIFO: skipped with its reason, then no file matched.
r = exec_(work, "--repeats", "2", "--artifact", "{out}/p", "--", "sh", "-c", 'mkfifo "$REPRO_AUDIT_OUT/p"')
one_line_error(r, 3, "FIFO", "fifo pattern")

# The run's other files are read the same way: a FIFO for a hook report is noted, not opened.
r = exec_(work, "--repeats", "2", "--", "sh", "-c", 'echo a > "$REPRO_AUDIT_OUT/a"; mkfifo "$REPRO_AUDIT_HOOK_DIR/hook-1.json"',
          limit=120)
check(r.returncode == 0 and "not a regular file" in r.stderr, f"hook fifo: exit {r.returncode}: {r.stderr[-400:]}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("exec artifacts: all checks passed")
