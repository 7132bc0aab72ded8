#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The golden set: a fixed list of audits whose every output format must stay byte-identical while
the code under them is restructured (issue 29).

usage: golden.py BINARY PYTHON OUT_DIR            write the outputs into OUT_DIR
       golden.py BINARY PYTHON --check EXPECTED   compare with the committed set (tests/golden/expected)

The fixtures are committed (tests/golden/fixtures, made once by make_fixtures.py), because a
TorchScript archive saved twice differs in its bytes, and with it every model digest.

Each audit writes JSON, HTML, JUnit, Markdown and its text summary. What depends on the moment or
the machine is normalised before comparison: durations and timings, dates, the scratch folder,
host and process ids. Everything else (verdicts, digests, tables, wording, order) is compared
byte for byte.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

FORMATS = ("--report", "a.json"), ("--html", "a.html"), ("--junit", "a.xml"), ("--markdown", "a.md")


def audits(d):
    """(name, argv, formats it writes). argv uses the fixtures made in d."""
    return [
        ("run", ["run", f"{d}/net.pt", "--input", f"{d}/input.pt", "--mode", "train", "--steps", "2"], FORMATS),
        ("run_trace", ["run", f"{d}/bigsum.pt", "--shape", "2048x2048", "--configs", "threads-N,threads-1",
                       "--repeats", "2", "--trace", "--timed-runs", "5"], FORMATS),
        ("probes", ["probes", "--only", "*unique-control", "--repeats", "2"], FORMATS),
        ("exec", ["exec", "--repeats", "2", "--configs", "default", "--artifact", "{out}/ckpt.pt",
                  "--metric", "loss=loss ([0-9.]+)", "--", "./python", "train.py"], FORMATS),
        ("lint", ["lint", f"{d}/net.pt"], (("--report", "a.json"),)),
        ("diff", ["diff", f"{d}/ckpt_a.pt", f"{d}/ckpt_b.pt"], (("--report", "a.json"),)),
        ("merge", ["merge", f"{d}/shard1.json", f"{d}/shard2.json"], FORMATS),
        ("selftest", ["selftest", "--device", "cpu"], FORMATS),
        ("compare", ["compare", f"{d}/base.json", f"{d}/golden_run/a.json"], FORMATS[1:] + (("--report", "a.json"),)),
        ("report", ["report", f"{d}/golden_run_trace/a.json"], FORMATS),
    ]



NORMALISE = [
    # durations and timings in every format: "12.3 s", "4 ms", "1.25x", "time=\"0.41\"", JSON seconds
    (re.compile(r'"(wall_s|seconds|elapsed_s|duration_s|median_s|time_s|started|finished|start|end|timestamp|'
                r'date|created|[a-z_]*_ms|[a-z_]*_seconds|[a-z_]*time[a-z_]*)": *("[^"]*"|[-0-9.e+]+)'), r'"\1": <t>'),
    (re.compile(r'time="[0-9.]+"'), 'time="<t>"'),
    (re.compile(r'data-ms="[0-9.]+"'), 'data-ms="<t>"'),
    (re.compile(r'"(ratio_to_first|[a-z_]*ratio|cost[a-z_]*|overhead[a-z_]*)": *([-0-9.e+]+|null)'), r'"\1": <r>'),
    (re.compile(r'timestamp="[^"]*"'), 'timestamp="<t>"'),
    (re.compile(r'\b[0-9]+(\.[0-9]+)? ?(ms|µs|us|s|min)\b'), '<t>'),
    (re.compile(r'[0-9]+(\.[0-9]+)?(×|x)(?=[^0-9a-zA-Z])'), '<r>'),
    (re.compile(r'(?<![0-9a-zA-Z])(×|x)[0-9]+(\.[0-9]+)?'), '<r>'),
    (re.compile(r'\b20[0-9]{2}-[0-9]{2}-[0-9]{2}[T ][0-9:.]+Z?'), '<date>'),
    (re.compile(r'"(pid|host|hostname|boot_id)": *("[^"]*"|[0-9]+)'), r'"\1": <id>'),
    # selftest's positive control races by design: how many of its repeats differ varies
    (re.compile(r'diverged under default \([0-9]+/'), 'diverged under default (<n>/'),
]


def normalise(text, d):
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    venv = os.path.dirname(os.path.dirname(sys.argv[2]))  # the python's prefix: where torch lives
    text = text.replace(d, "<dir>").replace(repo, "<repo>").replace(venv, "<venv>").replace(d.replace("_", "\\_"), "<dir>").replace(sys.argv[2], "<python>")
    for pattern, repl in NORMALISE:
        text = pattern.sub(repl, text)
    return text


def produce(binary, python, out):
    d = tempfile.mkdtemp(prefix="golden.")
    try:
        fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
        for name in os.listdir(fixtures):
            shutil.copy(os.path.join(fixtures, name), d)
        # The program runs as ./python, so its command line (and the digest made of it) is the same
        # wherever the venv lives.
        with open(os.path.join(d, "python"), "w") as f:
            f.write(f'#!/bin/sh\nexec "{python}" "$@"\n')
        os.chmod(os.path.join(d, "python"), 0o755)
        env = dict(os.environ, OMP_NUM_THREADS="2")
        env.pop("REPRO_AUDIT_HOME", None)
        for name, argv, formats in audits(d):
            if name == "merge":
                for k in (1, 2):
                    subprocess.run([binary, "run", f"{d}/net.pt", "--input", f"{d}/input.pt", "--repeats", "2",
                                    "--shard", f"{k}/2", "--report", f"{d}/shard{k}.json"], env=env, check=True,
                                   capture_output=True)
            if name == "compare":
                subprocess.run([binary, "run", f"{d}/net.pt", "--input", f"{d}/input.pt", "--mode", "train",
                                "--steps", "2", "--configs", "default", "--save-baseline", f"{d}/base.json"],
                               env=env, check=True, capture_output=True)
            where = os.path.join(d, f"golden_{name}")
            os.makedirs(where)
            flags = [x for flag, file in formats for x in (flag, os.path.join(where, file))]
            cut = argv.index("--") if "--" in argv else len(argv)
            args = [binary, "-q"] + argv[:cut] + flags + argv[cut:]
            r = subprocess.run(args, env=env, capture_output=True, text=True, cwd=d)
            os.makedirs(os.path.join(out, name), exist_ok=True)
            with open(os.path.join(out, name, "stdout.txt"), "w") as f:
                f.write(normalise(r.stdout, d) + f"\n[exit {r.returncode}]\n")
            for _, file in formats:
                src = os.path.join(where, file)
                if os.path.exists(src):
                    with open(src, encoding="utf-8") as f:
                        text = normalise(f.read(), d)
                    with open(os.path.join(out, name, file), "w") as f:
                        f.write(text)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def machine():
    """What the outputs depend on beyond the code: the CPU model, its count and the torch build."""
    model = "unknown CPU"
    with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model}; {os.cpu_count()} CPUs\n"


def main():
    binary, python = sys.argv[1:3]
    if sys.argv[3] != "--check":
        produce(binary, python, sys.argv[3])
        with open(os.path.join(sys.argv[3], "MACHINE"), "w") as f:
            f.write(machine())
        return 0
    expected = sys.argv[4]
    with open(os.path.join(expected, "MACHINE"), encoding="utf-8") as f:
        made_on = f.read()
    if made_on != machine():
        print(f"golden: the set was made on {made_on.strip()}, this is {machine().strip()}: "
              "probe results and fingerprints differ by machine, so the comparison is skipped")
        return 77
    got = tempfile.mkdtemp(prefix="golden-got.")
    try:
        produce(binary, python, got)
        shutil.copy(os.path.join(expected, "MACHINE"), got)
        r = subprocess.run(["diff", "-r", "-u", expected, got], capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stdout[:20000])
            print("golden: outputs changed (regenerate with tests/golden/golden.py ... OUT_DIR only when the "
                  "change is intended, and say why in the commit)")
            return 1
        print("golden: every output byte-identical")
        return 0
    finally:
        shutil.rmtree(got, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
