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
#   * a 50 MB string in a JSON input is not echoed whole: the error line stays short;
#   * (issue 51) torch.export archives whose graph the interpreter refuses (ops it cannot call,
#     wrong arguments, values read before they are defined, cycles, graph outputs that are not the
#     signature's, metadata that is not text, weights that do not fit): `run` exits 3 with one line,
#     and `lint` with the same line; so do the export archives refused above for their zip.
# The packages are crafted from the small fixture tests/data/aoti_package.pt2 (no compiler needed);
# its top folder is renamed to one unique to this run, so that a folder LibTorch's package loader
# would leave in /tmp is found (and removed) without touching anything else there.
#
# Usage: test_hostile_archives.py REPRO_AUDIT WORKDIR  (exits 77, skipped, without the venv's torch).
import glob
import json
import os
import re
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

# ---- export archives the interpreter refuses: lint gives run's line ------------------------------
# (issue 51, items 7 and 8) One check of a torch.export archive serves `run` and `lint`
# (open_export_archive, worker/targets/export_program.h). Each archive below, crafted from
# exported.pt2, is refused by `run` with one line and exit 3, and `lint` must give that same line
# and exit. Before, lint passed such archives with exit 0 and its usual findings, exited 4
# ("internal error: type must be string") on a stack_trace that is a JSON object, and run ran an
# archive whose graph output no node defines (torch.export.load raises KeyError on it).


def nodes(m):
    return m["graph_module"]["graph"]["nodes"]


def graph(m):
    return m["graph_module"]["graph"]


def signature(m):
    return m["graph_module"]["signature"]


def crafted(name, model=None, weights=None):
    """exported.pt2 with its models/model.json passed through `model`, its weights' config through `weights`."""
    path = os.path.join(WORK, name + ".pt2")
    with zipfile.ZipFile(exported) as src, zipfile.ZipFile(path, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if model and item.filename.endswith("models/model.json"):
                doc = json.loads(data)
                model(doc)
                data = json.dumps(doc).encode()
            if weights and item.filename.endswith("model_weights_config.json"):
                doc = json.loads(data)
                weights(doc["config"])
                data = json.dumps(doc).encode()
            dst.writestr(item, data)
    return path


def target(index, value):
    def change(m):
        nodes(m)[index]["target"] = value
    return change


def arg(index, value):
    def change(m):
        nodes(m)[index]["inputs"][0]["arg"] = value
    return change


def cycle(m):
    nodes(m)[0]["inputs"][0]["arg"] = {"as_tensor": {"name": "relu"}}  # relu reads linear: each reads the other


def args_twice(m):
    nodes(m)[1]["inputs"].append(dict(nodes(m)[1]["inputs"][0]))


def metadata(index, key, value):
    def change(m):
        nodes(m)[index].setdefault("metadata", {})[key] = value
    return change


def graph_outputs(value):
    def change(m):
        if value is None:
            del graph(m)["outputs"]
        else:
            graph(m)["outputs"] = value
    return change


def tensor_meta(name, key, value):
    def change(cfg):
        cfg[name]["tensor_meta"][key] = value
    return change


GRAPH_CASES = [
    # ops the interpreter cannot call
    ("unknown aten op", dict(model=target(0, "torch.ops.aten.no_such_op.default")), "names an op that this torch does not have"),
    ("unknown prims op", dict(model=target(1, "torch.ops.prims.no_such_prim.default")), "names an op that this torch does not have"),
    ("unknown overload", dict(model=target(1, "torch.ops.aten.relu.no_such_overload")), "names an op that this torch does not have"),
    ("unloaded custom op", dict(model=target(0, "torch.ops.nobody.frob.default")), "which is not registered: load its library"),
    ("cond", dict(model=target(1, "torch.ops.higher_order.cond")), "is the higher-order op cond"),
    ("while_loop", dict(model=target(1, "torch.ops.higher_order.while_loop")), "is the higher-order op while_loop"),
    ("Python callable", dict(model=target(1, "__main__.helper")), "is not an op the interpreter runs"),
    ("builtins.print", dict(model=target(1, "builtins.print")), "is not an op the interpreter runs"),
    ("os.system", dict(model=target(0, "os.system")), "is not an op the interpreter runs"),
    ("attribute read", dict(model=target(1, "builtins.getattr")), "is an attribute read"),
    ("no op name", dict(model=target(1, "torch.ops.aten")), "names no op"),
    ("target not a string", dict(model=target(1, {"module": "os", "name": "system"})), "type must be string"),
    # arguments
    ("unknown argument", dict(model=lambda m: nodes(m)[0]["inputs"][0].update(name="no_such_argument")),
     "which the op's schema does not have"),
    ("argument twice", dict(model=args_twice), "gives argument 'self' twice"),
    ("missing argument", dict(model=lambda m: nodes(m)[1].update(inputs=[])), "misses argument 'self'"),
    ("argument of the wrong kind", dict(model=arg(1, {"as_string": "x"})), "but the archive gives as_string"),
    ("malformed argument", dict(model=arg(1, {})), "is malformed"),
    # values
    ("read before defined", dict(model=arg(0, {"as_tensor": {"name": "relu"}})), "before it is defined"),
    ("cycle", dict(model=cycle), "before it is defined"),
    ("undefined name", dict(model=arg(1, {"as_tensor": {"name": "nothing"}})), "before it is defined"),
    ("defined twice", dict(model=lambda m: nodes(m)[1].update(outputs=[{"as_tensor": {"name": "linear"}}])),
     "defines value 'linear' twice"),
    ("more outputs than the op returns",
     dict(model=lambda m: nodes(m)[1]["outputs"].append({"as_tensor": {"name": "relu_2"}})), "but the op returns 1"),
    ("output of an unknown kind", dict(model=lambda m: nodes(m)[1].update(outputs=[{"as_custom_obj": {"name": "o"}}])),
     "has an output of kind as_custom_obj"),
    # the graph's outputs and the signature (item 8)
    ("graph output no node defines", dict(model=graph_outputs([{"as_tensor": {"name": "no_such_value"}}])),
     "output 1 is value 'no_such_value', which no input or node defines"),
    ("graph output not the signature's", dict(model=graph_outputs([{"as_tensor": {"name": "linear"}}])),
     "but the signature's output 1 is value 'relu'"),
    ("two graph outputs for one", dict(model=graph_outputs([{"as_tensor": {"name": "relu"}}, {"as_tensor": {"name": "linear"}}])),
     "are 2, but the signature has 1 output specs"),
    ("no graph outputs", dict(model=graph_outputs(None)), "are missing"),
    ("signature output undefined",
     dict(model=lambda m: signature(m)["output_specs"][0]["user_output"]["arg"]["as_tensor"].update(name="nothing")),
     "before it is defined"),
    ("effect token output",
     dict(model=lambda m: signature(m)["output_specs"].append({"token": {"arg": {"name": "token"}}})), "effect token"),
    ("custom object input",
     dict(model=lambda m: signature(m)["input_specs"].append({"custom_obj": {"arg": {"name": "obj", "class_fqn": "x"}, "custom_obj_name": "obj"}})),
     "a custom object or an effect token"),
    ("graph inputs not the signature's", dict(model=lambda m: graph(m)["inputs"].pop()), "the graph has 2 inputs but its signature 3"),
    # metadata (the schema's strings)
    ("stack_trace an object", dict(model=metadata(0, "stack_trace", {"file": "model.py", "line": 3})),
     "its metadata 'stack_trace' is object, not a string"),
    ("nn_module_stack a list", dict(model=metadata(1, "nn_module_stack", ["fc"])), "its metadata 'nn_module_stack' is array"),
    # weights and their records
    ("weight of another shape", dict(model=lambda m: graph(m)["tensor_values"]["p_fc_weight"].update(sizes=[{"as_int": 3}, {"as_int": 5}])),
     "has shape [3, 4] in its record, but the graph declares [3, 5]"),
    ("weight not in the data", dict(model=lambda m: signature(m)["input_specs"][0]["parameter"].update(parameter_name="fc.nothing")),
     "is not in the archive's data"),
    ("weight dtype unknown", dict(weights=tensor_meta("fc.weight", "dtype", 99)), "has dtype code 99"),
    ("weight past its record", dict(weights=tensor_meta("fc.weight", "sizes", [{"as_int": 30}, {"as_int": 4}])),
     "reaches past its record"),
    ("weight not strided", dict(weights=tensor_meta("fc.bias", "layout", 1)), "is not a strided tensor"),
    ("weight pickled", dict(weights=lambda cfg: cfg["fc.bias"].update(use_pickle=True)), "is pickled"),
    ("weight record missing", dict(weights=lambda cfg: cfg["fc.bias"].update(path_name="nothing")), "the archive has no record"),
    ("input on an unknown device",
     dict(model=lambda m: graph(m)["tensor_values"]["x"].update(device={"type": "nodevice", "index": None})),
     "is on a device this torch does not know"),
    ("future schema", dict(model=lambda m: m.update(schema_version={"major": 99, "minor": 0})), "of schema version 99.0"),
]

rc, out, err, _ = run("lint", exported)
check(rc in (0, 1), f"lint of the genuine export archive: exit {rc}, {err.strip()[:300]}")
for what, changes, words in GRAPH_CASES:
    path = crafted(re.sub(r"[^A-Za-z0-9]+", "_", what), **changes)
    run_rc, _, run_err, _ = run("run", path, "--shape", "2x4")
    lines = run_err.strip().splitlines()
    check(run_rc == 3 and len(lines) == 1 and words in run_err and path in run_err,
          f"run: {what}: exit 3 and one line with '{words}' expected, got exit {run_rc}: {run_err.strip()[:400]!r}")
    lint_rc, lint_out, lint_err, _ = run("lint", path)
    check(lint_rc == 3 and lint_err == run_err and not lint_out,
          f"lint: {what}: exit 3 and run's line expected, got exit {lint_rc}: {lint_err.strip()[:300]!r} "
          f"(run: {run_err.strip()[:300]!r}){' and a report on stdout' if lint_out else ''}")
    print(f"{what:44} run exit {run_rc}, lint exit {lint_rc}  {lines[-1][:100] if lines else ''}", file=sys.stderr)
# The archives refused for their zip above: lint refuses them with run's line too.
for what, path in (("export zip bomb", bomb), ("stored entry with a false size", liar), ("two entries with one name", twice)):
    run_rc, _, run_err, _ = run("run", path, "--shape", "2x4")
    lint_rc, _, lint_err, _ = run("lint", path)
    check(run_rc == 3 and lint_rc == 3 and lint_err == run_err,
          f"lint: {what}: run's line and exit 3 expected, got exit {lint_rc}: {lint_err.strip()[:300]!r} "
          f"(run: exit {run_rc}, {run_err.strip()[:300]!r})")

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
