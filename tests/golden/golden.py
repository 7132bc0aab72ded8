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
host and process ids, and the environment fingerprint's machine fields (CPU model, kernel, logical
CPUs, ATen capability and the ATEN_CPU_CAPABILITY that chose it, torch's inter-op threads, one per
physical core, the torch and CUDA library builds, the GPU line), in every format they appear in
(JSON keys, HTML rows and summary, the self-test's fingerprint line), and the float64 referee's
error figures (how far a result lies from float64 depends on the machine's kernels; the class of a
difference does not, and is compared). Digests are numbered
by first appearance: the set holds which tensors agree, not the bits a CPU's BLAS computes. Everything
else (verdicts, tables, wording, order) is compared byte for byte, so the check runs, and passes,
on any machine of the kind (STYLE.md, habit 21).

       golden.py BINARY PYTHON --machine-free SAVED_REPORT
                 re-renders a saved report as made here and with every machine field replaced by
                 other values, and fails unless the normalised outputs are identical (the
                 normaliser's own test: a field it misses shows up as a difference)
"""
import functools
import json
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
        # threads=2, not the threads-N preset: N is the machine's CPU count, and the report names it; an
        # input whose sum parts on one and two threads on every kernel path (bigsum_input)
        ("run_trace", ["run", f"{d}/bigsum.pt", "--input", f"{d}/bigsum_input.pt", "--configs", "threads=2,threads-1",
                       "--repeats", "2", "--trace", "--timed-runs", "5"], FORMATS),
        ("probes", ["probes", "--only", "*unique-control", "--repeats", "2"], FORMATS),
        ("exec", ["exec", "--repeats", "2", "--configs", "default", "--artifact", "{out}/ckpt.pt",
                  "--metric", "loss=loss ([0-9.]+)", "--", "./python", "train.py"], FORMATS),
        ("lint", ["lint", f"{d}/net.pt"], (("--report", "a.json"), ("--sarif", "a.sarif"))),
        ("diff", ["diff", f"{d}/ckpt_a.pt", f"{d}/ckpt_b.pt"], (("--report", "a.json"),)),
        ("merge", ["merge", f"{d}/shard1.json", f"{d}/shard2.json"], FORMATS),
        ("selftest", ["selftest", "--device", "cpu"], FORMATS),
        # a row minus its batch's mean: variant at every size, whatever the machine; the fix search runs
        ("invariance", ["invariance", f"{d}/batchmean.pt", "--input", f"{d}/rows.pt", "--rows", "2",
                        "--sizes", "1,2,3,4"], FORMATS),
        ("compare", ["compare", f"{d}/base.json", f"{d}/golden_run/a.json"], FORMATS[1:] + (("--report", "a.json"),)),
        ("report", ["report", f"{d}/golden_run_trace/a.json"], FORMATS),
    ]



NORMALISE = [
    # durations and timings in every format: "12.3 s", "4 ms", "1.25x", "time=\"0.41\"", JSON seconds
    (re.compile(r'"(wall_s|seconds|elapsed_s|duration_s|median_s|time_s|started|finished|start|end|timestamp|'
                r'date|created|[a-z_]*_ms|[a-z_]*_seconds|[a-z_]*time[a-z_]*)": *("[^"]*"|[-0-9.e+]+)'), r'"\1": <t>'),
    (re.compile(r'time="[0-9.]+"'), 'time="<t>"'),
    (re.compile(r'data-ms="[0-9.]+"'), 'data-ms="<t>"'),
    (re.compile(r'"(ratio_to_first|[a-z_]*ratio|cost[a-z_]*|overhead[a-z_]*)": *([-0-9.e+]+|null|true|false)'),
     r'"\1": <r>'),
    # a cost is a ratio with its rounds' spread, or not measurable on a busy machine (issue 43): either
    # is a clock figure, and so is which fix the formats may call the cheapest
    (re.compile(r'[0-9]+(\.[0-9]+)?(×|x) \([0-9.]+[-–][0-9.]+\)|not measurable on this machine now'), '<r>'),
    (re.compile(r' at <r> the run time of ([^\n.<|]*)| \(cost <r>\)'), ' <cost>'),
    (re.compile(r'\b(cheapest|fix): (?=[^\n]*<cost>)|\b(cheapest fix|a minimal fix) (?=[^\n]*<cost>)|'
                r'(Cheapest minimal fix|A minimal fix): '), '<which fix>: '),
    (re.compile(r'timestamp="[^"]*"'), 'timestamp="<t>"'),
    (re.compile(r'\b[0-9]+(\.[0-9]+)? ?(ms|µs|us|s|min)\b'), '<t>'),
    (re.compile(r'[0-9]+(\.[0-9]+)?(×|x)(?=[^0-9a-zA-Z])'), '<r>'),
    (re.compile(r'(?<![0-9a-zA-Z])(×|x)[0-9]+(\.[0-9]+)?'), '<r>'),
    (re.compile(r'\b20[0-9]{2}-[0-9]{2}-[0-9]{2}[T ][0-9:.]+Z?'), '<date>'),
    (re.compile(r'"(pid|host|hostname|boot_id)": *("[^"]*"|[0-9]+)'), r'"\1": <id>'),
    # selftest's positive control races by design: how many of its repeats differ varies, and when
    # its first repeats happen not to race, a second, longer round runs and says so
    (re.compile(r'diverged under default \([0-9]+/[0-9]+ '), 'diverged under default (<n>/<m> '),
    (re.compile(r' \(under default in a second round of [0-9]+ repeats: the first [0-9]+ did not race\)'), ''),
    # selftest's Linear rows show the machine's BLAS too: at which sizes a row differs, if at all
    (re.compile(r'a Linear row differed in-process from batch 1 at [0-9]+ of [0-9]+ sizes \(first at M = [0-9]+\); '
                r'batch\.linear found it variant \([0-9]+ classes\); |a Linear row kept its bits at every size tried '
                r'in-process \(batch\.linear: [0-9]+ class(?:es)?\), so this library gives no real positive here; '
                r'passed on the controls: '), 'a Linear row: <machine>; '),
    # the float64 referee's figures show the machine's kernels: how far each result lies from float64
    # (the furthest tensor too), and float64's own error beside it; the class stays compared
    (re.compile(r'("max_ulp": )[-0-9.e+]+(,\s*"max_abs": )[-0-9.e+]+(,\s*"max_rel": )[-0-9.e+]+'), r'\1<e>\2<e>\3<e>'),
    (re.compile(r'"referee_own_ulp": *([-0-9.e+]+|null)'), r'"referee_own_ulp": <e>'),
    (re.compile(r'error vs float64: (?:[^\n<"]|<(?!/))*'), 'error vs float64: <machine>'),
    (re.compile(r'within [0-9.e+]+ and [0-9.e+]+ ULP of float64'), 'within <e> and <e> ULP of float64'),
    (re.compile(r' lie [-0-9.e+]+ and [-0-9.e+]+ from float64 \([0-9.e+]+ and [0-9.e+]+ ULP\), and rounding the '
                r'inputs alone moves float64 by up to [-0-9.e+]+:'), ' lie <e>, and rounding the inputs moves float64 <e>:'),
    (re.compile(r'moves float64 by [-0-9.e+]+, far less than the [-0-9.e+]+ seen'), 'moves float64 by <e>, far less'),
    (re.compile(r"float64(?:'|&#39;|&apos;)s own error here (?:< 0\.01|is at most ~[0-9.e+]+) ULP"),
     "float64's own error here <e> ULP"),
    (re.compile(r' is [0-9.e+]+ ULP from float64 where ([^:<]*?) is (?:exact|[0-9.e+]+ \(<r> further\))'),
     r' is <e> ULP from float64 where \1 is <e>'),
    # invariance's classes against float64 (the closest class), and a fix's effect on the error
    (re.compile(r'every class lies within [0-9.e+]+ ULP of float64'), 'every class lies within <e> ULP of float64'),
    (re.compile(r'\(max [0-9.e+]+ ULP, where (\{[^}]*\}) is [0-9.e+]+ ULP'), r'(max <e> ULP, where \1 is <e> ULP'),
    (re.compile(r'max [0-9.e+]+ ULP(; | from float64 where | where )([^ ]+) had [0-9.e+]+'), r'max <e> ULP\1\2 had <e>'),
    # invariance's negative control shows the machine's BLAS: whether torch.mm batches a row alike varies
    (re.compile(r'torch\.mm gives row 0 (?:the same bits alone and in a batch of 64|other bits in a batch of 64 than '
                r'alone) on ([a-z0-9:]+)(?: \(max abs [^)]*\))?'), r'torch.mm on \1: <machine>'),
]


# The fingerprint's machine fields: the keys of the environment's "cpu", "cuda", "torch" and "threads"
# groups whose values say which machine and which library build ran, not what the tool decided (the
# inter-op pool is one thread per physical core; the intra-op count is OMP_NUM_THREADS, set below), and
# ATEN_CPU_CAPABILITY, under which CI's second kernel path runs the set (./dev test-kernel-path).
MACHINE_KEYS = ("model", "kernel", "logical_cpus", "aten_capability", "git_version", "version", "compiled_cuda",
                "compiled_cudnn", "cublas", "cudnn", "nccl", "driver", "reason", "devices", "wheels", "runtime",
                "inter_op", "ATEN_CPU_CAPABILITY")
_KEY = "|".join(MACHINE_KEYS)
_GROUPS = "cpu|cuda|torch|threads|env_vars"
_JSON_GROUP = re.compile(r'((\n *)"(?:' + _GROUPS + r')": \{)(.*?)(\2\})', re.S)  # to its own closing brace
_JSON_VALUE = re.compile(r'("(?:' + _KEY + r')": )("(?:[^"\\]|\\.)*"|\[[^\]]*\]|\{[^}]*\}|[-0-9.e+]+|true|false|null)')
_JSON_STACK = re.compile(r'("stack": \[)(.*?)(\n *\])', re.S)
_STACK_VALUE = re.compile(r'("(?:baseline|current)": )("(?:[^"\\]|\\.)*"|null)')
_HTML_GROUP = re.compile(r'(<div class="env-group" data-key="(?:' + _GROUPS + r')">)(.*?)(</table></div>)', re.S)
_HTML_NESTED = re.compile(r'(<th scope="row">(?:' + _KEY + r')</th><td>)<table.*?</table>(</td>)', re.S)  # cuda.wheels
_HTML_VALUE = re.compile(r'(<th scope="row">(?:' + _KEY + r')</th><td>)(.*?)(</td>)', re.S)
_HTML_SUMMARY = re.compile(r'(<dt>(?:torch|CUDA|GPUs|CPU)</dt><dd>)(.*?)(</dd>)', re.S)
_HTML_INTER_OP = re.compile(r'(<dt>threads</dt><dd>intra-op [0-9]+, inter-op )[0-9]+')
# selftest's fingerprint check: "torch 2.11.0 (70d99e998b49), AMD EPYC (2 CPUs, AVX512), 15 switches"
_SELFTEST_FINGERPRINT = re.compile(r'torch [^ ]+ \([0-9a-f]+\), [^\n|]*? \([0-9]+ CPUs?, [^)]*\)')
_DIGEST = re.compile(r'(?<![0-9a-zA-Z])[0-9a-f]{32}(?![0-9a-zA-Z])')


def normalise_machine(text):
    """The fingerprint's machine fields, in every format, as <machine>; digests as <d1>, <d2>, ... by
    first appearance, so that equal digests stay equal and different ones different."""
    text = _JSON_GROUP.sub(lambda m: m.group(1) + _JSON_VALUE.sub(r'\1"<machine>"', m.group(3)) + m.group(4), text)
    # compare's stacks: the library versions of the baseline and the current run
    text = _JSON_STACK.sub(lambda m: m.group(1) + _STACK_VALUE.sub(r'\1"<machine>"', m.group(2)) + m.group(3), text)
    text = _HTML_GROUP.sub(lambda m: m.group(1) + _HTML_VALUE.sub(r'\1<machine>\3', _HTML_NESTED.sub(r'\1<machine>\2', m.group(2)))
                           + m.group(3), text)
    text = _HTML_SUMMARY.sub(r'\1<machine>\3', text)
    text = _HTML_INTER_OP.sub(r'\1<machine>', text)
    text = _SELFTEST_FINGERPRINT.sub("torch <machine>, <machine>", text)
    numbers = {}
    return _DIGEST.sub(lambda m: numbers.setdefault(m.group(0), f"<d{len(numbers) + 1}>"), text)


@functools.lru_cache(maxsize=None)
def torch_folder(python):
    """The torch package's folder for `python`, found without importing torch."""
    return subprocess.run([python, "-c", "import importlib.util as u; print(u.find_spec('torch').submodule_search_locations[0])"],
                          capture_output=True, text=True).stdout.strip()


def normalise(text, d, python=None):
    python = python or sys.argv[2]
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    venv = os.path.dirname(os.path.dirname(python))  # the python's prefix: where torch lives
    # torch's own folder first: its path holds the Python minor (lib/python3.11/site-packages)
    torch_dir = torch_folder(python)
    if torch_dir:
        text = text.replace(torch_dir, "<torch>")
    # the build folder (build/, build-torch2.15.0/, or BUILD_DIR's), before the repository it is in
    text = text.replace(os.path.dirname(os.path.abspath(sys.argv[1])) + "/", "<build>/")
    text = text.replace(d, "<dir>").replace(repo, "<repo>").replace(venv, "<venv>").replace(d.replace("_", "\\_"), "<dir>").replace(python, "<python>")
    for pattern, repl in NORMALISE:
        text = pattern.sub(repl, text)
    return normalise_machine(text)


def bigsum_input(path):
    """run_trace's input: 256x256 zeros but for 1 at the start and 2^24, -2^24 side by side 1024 places into
    the second half. ATen sums the 65536 elements in vector lanes (accumulators of every 8th, 16th ... element;
    elements 1024 places apart share one on every kernel path) and adds the lanes up at the end. On one thread the 1 and the 2^24 share a lane, where the 1 is
    lost to rounding, and -2^24 then cancels the rest: 0. On two threads each sums its half: the second half
    cancels to 0, the first keeps its 1: 1. Made so on every kernel path (AVX-512, AVX2 and the portable one:
    a random input's sum of 2^22 elements happened to part on two of them and not on the third), it is
    written here rather than committed (256 KiB)."""
    import torch
    x = torch.zeros(256 * 256)
    half = x.numel() // 2
    x[0], x[half + 1024], x[half + 1025] = 1.0, 2.0 ** 24, -(2.0 ** 24)
    torch.save(x.view(256, 256), path)


def produce(binary, python, out):
    d = tempfile.mkdtemp(prefix="golden.")
    try:
        fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
        for name in os.listdir(fixtures):
            shutil.copy(os.path.join(fixtures, name), d)
        bigsum_input(os.path.join(d, "bigsum_input.pt"))
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


def other_machine(report):
    """`report` (a parsed report) as another machine would have written it: every machine field of
    its fingerprint, and the self-test's fingerprint line, given other values."""
    env = report.get("environment", {})
    others = {
        "cpu": {"model": "Other Vendor CPU @ 9.99GHz", "kernel": "Linux 9.9.9-other-build", "logical_cpus": 96,
                "aten_capability": "AVX2"},
        "threads": {"inter_op": 48},
        "env_vars": {"ATEN_CPU_CAPABILITY": "avx2"},
        "torch": {"version": "2.99.1", "git_version": "0123456789abcdef0123456789abcdef01234567"},
        "cuda": {"compiled_cuda": "99.9", "compiled_cudnn": "99.1.2", "cublas": "99.3.4", "cudnn": "99.1.2",
                 "driver": "555.55", "reason": "no CUDA device: another machine's reason"},
    }
    for group, fields in others.items():
        for key, value in fields.items():
            if key in env.get(group, {}):
                env[group][key] = value
    if "wheels" in env.get("cuda", {}):
        env["cuda"]["wheels"] = {"nvidia-cublas": "99.3.4.5", "nvidia-other": "1.2.3"}
    for entry in (report.get("baseline") or {}).get("stack", []):
        # other versions, but the same relation: a release that did not change stays unchanged
        same = entry.get("baseline") == entry.get("current")
        entry.update(baseline="99.0.1", current="99.0.1" if same else "99.0.2")
    for check in (report.get("selftest") or {}).get("checks", []):
        if check.get("name") == "fingerprint":
            check["evidence"] = "torch 2.99.1 (0123456789ab), Other Vendor CPU @ 9.99GHz (96 CPUs, AVX2), 15 switches"
    return report


def machine_free(binary, python):
    """The normaliser's own test: a run, a compare and a self-test report, each re-rendered in every
    format as written here and as another machine would have written it, must normalise alike."""
    d = tempfile.mkdtemp(prefix="golden-machine.")
    try:
        fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
        for name in ("net.pt", "input.pt"):
            shutil.copy(os.path.join(fixtures, name), d)
        env = dict(os.environ, OMP_NUM_THREADS="2")
        env.pop("REPRO_AUDIT_HOME", None)
        made = {"run": [binary, "-q", "run", f"{d}/net.pt", "--input", f"{d}/input.pt", "--mode", "train", "--steps",
                        "2", "--configs", "default", "--repeats", "2", "--report", f"{d}/run.json",
                        "--save-baseline", f"{d}/base.json"],
                # compare's report: the baseline section with both stacks
                "compare": [binary, "-q", "compare", f"{d}/base.json", f"{d}/run.json", "--report", f"{d}/compare.json"],
                "selftest": [binary, "-q", "selftest", "--device", "cpu", "--report", f"{d}/selftest.json"]}
        failed = 0
        for name, argv in made.items():
            subprocess.run(argv, env=env, capture_output=True, cwd=d)
            with open(f"{d}/{name}.json", encoding="utf-8") as f:
                report = json.load(f)
            outputs = {}
            for variant, doc in (("here", report), ("other", other_machine(json.loads(json.dumps(report))))):
                where = os.path.join(d, variant, name)
                os.makedirs(where)
                with open(os.path.join(where, "in.json"), "w", encoding="utf-8") as f:
                    json.dump(doc, f, indent=2)
                flags = [x for flag, file in FORMATS for x in (flag, os.path.join(where, file))]
                r = subprocess.run([binary, "report", os.path.join(where, "in.json")] + flags, env=env,
                                   capture_output=True, text=True, cwd=d)
                texts = {"stdout": r.stdout + f"[exit {r.returncode}]"}
                for _, file in FORMATS:
                    with open(os.path.join(where, file), encoding="utf-8") as f:
                        texts[file] = f.read()
                outputs[variant] = {k: normalise(v.replace(where, "<where>"), d, python) for k, v in texts.items()}
            for file, text in outputs["here"].items():
                if text != outputs["other"][file]:
                    failed = 1
                    lines = [a for a, b in zip(text.splitlines(), outputs["other"][file].splitlines()) if a != b]
                    print(f"golden: {name} {file}: a machine field is not normalised: {lines[:3]}")
        if not failed:
            print("golden: outputs of another machine's fingerprint normalise alike in every format")
        return failed
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    binary, python = sys.argv[1:3]
    if sys.argv[3] == "--machine-free":
        return machine_free(binary, python)
    if sys.argv[3] != "--check":
        produce(binary, python, sys.argv[3])
        return 0
    expected = sys.argv[4]
    got = tempfile.mkdtemp(prefix="golden-got.")
    try:
        produce(binary, python, got)
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
