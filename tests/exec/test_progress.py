#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Long work says how far it is, on a terminal only (issue 43 item 3: `invariance` ran 37-149 s with
# no output and `exec` showed nothing during a 25 s torch.compile). Under a pseudo-terminal given
# to repro-audit as stdout and stderr:
#  - `exec` on a script that sleeps 6 s per run shows the updating line "run 1/2 (default): N s,
#    still running" (rewritten with '\r' and ESC[K) at least once;
#  - `invariance` on a scripted model slow enough to take a few seconds shows the sizes done of
#    those planned ("sizes 3/9") at least once;
#  - on a terminal 32 columns wide, that line is cut to 31 columns with an ellipsis (issue 51 item 11:
#    a line that wraps leaves a row behind at each rewrite);
#  - its fix search, on a model batch-variant by construction, says what runs ("fix search:
#    candidate deterministic=on"), never under the main sweep's label, and leaves one line on the screen,
#    not one per sweep (issue 54: four identical "[5/5] invariance under default+..." lines).
# And none of it where it must not be: with pipes (no terminal), with stdout in a file and stderr on
# the terminal, and with -q on a terminal. Nothing here is timed beyond "the line appears at least
# once" while a run lasts several ticks of about a second.
#
# usage: test_progress.py REPRO_AUDIT_BINARY WORK_FOLDER
import fcntl
import os
import pathlib
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time

binary, work = os.path.abspath(sys.argv[1]), pathlib.Path(sys.argv[2]).resolve()
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
# What the audited commands leave in their temporary folder stays in the work folder, which the next
# run removes: the test leaves /tmp as it found it.
(work / "tmp").mkdir()
ENV = dict(os.environ, TMPDIR=str(work / "tmp"))
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def on_terminal(cmd, stdout_file=None, limit=900, columns=None):
    """Runs `cmd` with a pseudo-terminal as its stderr, and as its stdout unless `stdout_file` is
    given, `columns` wide when given (else the size a new pseudo-terminal has: none); returns (exit
    code, everything the terminal received)."""
    master, slave = os.openpty()
    if columns:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    out_file = open(stdout_file, "wb") if stdout_file else None
    p = subprocess.Popen(cmd, cwd=work, stdin=subprocess.DEVNULL, stdout=out_file or slave, stderr=slave,
                         start_new_session=True, env=ENV)
    os.close(slave)
    if out_file:
        out_file.close()
    seen = bytearray()
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if not ready:
            if p.poll() is not None:
                break
            continue
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: every writer of the terminal has closed it
            break
        if not data:
            break
        seen += data
    try:
        p.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # its own session, started above
        check(False, f"{cmd[1:]} ended within {limit} s")
        p.wait()
    os.close(master)
    text = seen.decode(errors="replace")
    print(f"$ {' '.join(cmd[1:])}  [terminal]\n{text!r}\nexit {p.returncode}", flush=True)
    return p.returncode, text


def with_pipes(cmd):
    p = subprocess.run(cmd, cwd=work, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900,
                       env=ENV)
    print(f"$ {' '.join(cmd[1:])}  [pipes]\n{p.stdout}{p.stderr}exit {p.returncode}", flush=True)
    return p.returncode, p.stdout + p.stderr


def no_progress(text, what):
    check("\x1b[K" not in text and "still running" not in text and not re.search(r"sizes \d+/\d+", text),
          f"{what}: no progress line ({text[-400:]!r})")


# exec: two runs of a script that sleeps 6 s; about a tick a second while each runs.
script = work / "sleeps.py"
script.write_text("import time\ntime.sleep(6)\nprint('loss 1.0', flush=True)\n")
exec_cmd = ["exec", "--repeats", "2", "--no-fix-search", "--metric", r"loss=loss (\S+)", "--", sys.executable,
            str(script)]
code, text = on_terminal([binary, *exec_cmd])
check(code == 0, f"exec on a terminal: exit 0 (the runs agree), got {code}")
check(re.search(r"\rrun [12]/2 \(default\): \d+ s, still running[^\r\n]*\x1b\[K", text) is not None,
      "exec on a terminal: the updating line 'run N/2 (default): S s, still running' appears")
lines = text.replace("\r\n", "\n").split("\n")
check(any(re.search(r"\[2/2\] default repeat [01]:", l) for l in lines),
      "exec on a terminal: the progress line ends with the last run done, then a newline")
# A terminal narrower than the line: each line that stays open is cut to one column less than the
# width, its end an ellipsis. A line that wrapped would leave its first row behind at every rewrite
# ('\r' and ESC[K erase one row). The last line, ended with a newline, is not rewritten and not cut.
code, text = on_terminal([binary, *exec_cmd], columns=32)
check(code == 0, f"exec on a 32-column terminal: exit 0, got {code}")
open_lines = [m.group(1) for m in re.finditer(r"\r([^\r\n\x1b]*)\x1b\[K(?!\r?\n)", text)]
check(any(l.startswith("run ") and l.endswith("\u2026") for l in open_lines),
      f"exec on a 32-column terminal: the 'still running' line is cut, with an ellipsis ({open_lines[-3:]!r})")
check(all(len(l) <= 31 for l in open_lines),
      f"exec on a 32-column terminal: no open line is wider than 31 columns ({max(open_lines, key=len, default='')!r})")
code, text = with_pipes([binary, *exec_cmd])
check(code == 0, f"exec with pipes: exit 0, got {code}")
no_progress(text, "exec with pipes")
code, text = on_terminal([binary, *exec_cmd], stdout_file=work / "exec.stdout")
check(code == 0, f"exec with stdout in a file: exit 0, got {code}")
no_progress(text + (work / "exec.stdout").read_text(errors="replace"), "exec with stdout in a file")
code, text = on_terminal([binary, "-q", *exec_cmd])
check(code == 0, f"exec -q on a terminal: exit 0, got {code}")
no_progress(text, "exec -q on a terminal")

# invariance: a scripted model whose every call does the same fixed work (matrix products that do
# not depend on the batch), so that nine sizes take some seconds on any CPU.
try:
    import torch
except ImportError as e:
    print(f"FAIL: {e}: run this test with the venv's Python")
    sys.exit(1)


class Slow(torch.nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.w = torch.nn.Parameter(torch.randn(16, 16, generator=g))
        self.busy = torch.nn.Parameter(torch.randn(384, 384, generator=g) / 20)

    def forward(self, x):
        acc = self.busy
        for _ in range(60):
            acc = torch.tanh(acc @ self.busy)
        return x @ self.w + acc.sum() * 0


model, rows = work / "slow.pt", work / "rows.pt"
torch.jit.script(Slow().eval()).save(str(model))
torch.save(torch.randn(16, 16, generator=torch.Generator().manual_seed(1)), str(rows))
sizes = "1,2,3,4,5,6,7,8,9"
inv_cmd = ["invariance", str(model), "--input", str(rows), "--rows", "1", "--sizes", sizes, "--no-fix-search"]
code, text = on_terminal([binary, *inv_cmd])
check(code in (0, 1), f"invariance on a terminal: a verdict (0 or 1), got {code}")
check(re.search(r"\rinvariance under default: sizes \d/9[^\r\n]*\x1b\[K", text) is not None,
      "invariance on a terminal: the updating line 'invariance under default: sizes D/9' appears")
code, text = with_pipes([binary, *inv_cmd])
check(code in (0, 1), f"invariance with pipes: a verdict, got {code}")
no_progress(text, "invariance with pipes")
code, text = on_terminal([binary, "-q", *inv_cmd])
check(code in (0, 1), f"invariance -q on a terminal: a verdict, got {code}")
no_progress(text, "invariance -q on a terminal")


# invariance's fix search: a row left over past a block of four gets other bits (rounded another
# way), on any CPU and under every switch, so every candidate runs and none fixes it.
class Leftover(torch.nn.Module):
    def forward(self, x):
        n = x.shape[0]
        full = (n // 4) * 4
        y = x * 2.0 + 1.0
        if full < n:
            y = torch.cat([y[:full], (x[full:] * 3.0) * (2.0 / 3.0) + 1.0], 0)
        return y


leftover = work / "leftover.pt"
torch.jit.script(Leftover().eval()).save(str(leftover))
fix_cmd = ["invariance", str(leftover), "--input", str(rows), "--rows", "1", "--sizes", "1,4,5"]
code, text = on_terminal([binary, *fix_cmd])
check(code == 1, f"invariance with its fix search on a terminal: variant (exit 1), got {code}")
check(re.search(r"\[\d+/\d+\] fix search: candidate deterministic=on: ", text) is not None,
      "the fix search's progress line says which candidate runs ('fix search: candidate deterministic=on')")
check("invariance under default+" not in text, "the fix search's sweeps do not reuse the main sweep's label")
# What stays on the screen: each line as its last rewrite left it.
screen = [line.split("\r")[-1] for line in text.replace("\r\n", "\n").split("\n")]
kept = [line for line in screen if "fix search:" in line and line.startswith("[")]
check(len(kept) == 1, f"the fix search leaves one progress line on the screen, not one per sweep: {kept}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("progress: the line appears on a terminal for exec, invariance and its fix search, and nowhere else")
