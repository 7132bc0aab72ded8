#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Keeps the documented CI recipes honest: every YAML recipe (docs/ci/*.yml and the yaml blocks
of README.md, docs/GUIDE.md and docs/CI.md) must parse, and every `repro-audit` command in it must
name a real subcommand and only options that subcommand's --help lists. The structure a CI system
needs is checked too: GitHub jobs have steps, GitLab jobs have a script, every JUnit file a command
writes is published (GitLab `artifacts:reports:junit`, or a GitHub step that reads it), and every SARIF
file (`lint --sarif`) is uploaded (GitHub `github/codeql-action/upload-sarif` in a job with
`security-events: write`, GitLab `artifacts:reports:sarif`). Sharded
recipes agree on N: a GitHub matrix's shards with --shard K/N, GitLab's `parallel:` and a
Kubernetes Indexed Job's completions with --shards, a Slurm array's size with the shards merged;
the Slurm merge job depends on the array with afterany. (tests/slurm/cluster.sh runs the Slurm
recipe itself.)

usage: check_ci_recipes.py REPRO_AUDIT_BINARY SOURCE_DIR
"""
import pathlib
import re
import shlex
import subprocess
import sys

import yaml

failures = []


def fail(where, message):
    failures.append(f"{where}: {message}")


def help_text(binary, sub, cache={}):
    if sub not in cache:
        p = subprocess.run([binary, sub, "--help"], capture_output=True, text=True, timeout=60)
        # CLI11 prints the top-level help for `repro-audit nosuch --help`: a subcommand's own help
        # has its usage line.
        ok = p.returncode == 0 and f"Usage: {pathlib.Path(binary).name} {sub} " in p.stdout
        cache[sub] = p.stdout if ok else None
    return cache[sub]


def commands(shell):
    """The repro-audit invocations in a shell snippet, as token lists."""
    shell = shell.replace("\\\n", " ")
    for line in shell.splitlines():
        for part in re.split(r"&&|\|\||;|\|", line):
            try:
                tokens = shlex.split(part, comments=True)
            except ValueError:
                continue
            if "repro-audit" in tokens:
                yield tokens[tokens.index("repro-audit"):]


def check_command(binary, where, tokens, variables):
    expanded = []
    for t in tokens:
        m = re.fullmatch(r"\$\{?(\w+)\}?", t)
        expanded += shlex.split(variables[m.group(1)]) if m and m.group(1) in variables else [t]
    if len(expanded) < 2:
        return fail(where, "repro-audit without a subcommand")
    sub = expanded[1]
    text = help_text(binary, sub)
    if text is None:
        return fail(where, f"unknown subcommand '{sub}'")
    for t in expanded[2:]:
        if t.startswith("--"):
            option = t.split("=", 1)[0]
            if not re.search(r"(?<![\w-])" + re.escape(option) + r"(?![\w-])", text):
                fail(where, f"'repro-audit {sub}' has no option {option}")
    for i, t in enumerate(expanded):
        if t in ("--junit", "--sarif") and i + 1 < len(expanded):
            yield t[2:], expanded[i + 1]


def github(binary, where, doc):
    jobs = doc.get("jobs")
    if not isinstance(jobs, dict) or not jobs:
        return fail(where, "no jobs")
    for name, job in jobs.items():
        steps = job.get("steps")
        if not steps:
            fail(f"{where} job {name}", "no steps")
            continue
        shards = ((job.get("strategy") or {}).get("matrix") or {}).get("shard")
        for step in steps:
            for n in re.findall(r"--shard\s+\$\{\{\s*matrix\.shard\s*\}\}/(\d+)", step.get("run", "")):
                if not isinstance(shards, list) or sorted(shards) != list(range(1, int(n) + 1)):
                    fail(f"{where} job {name}", f"--shard .../{n} but the matrix's shards are {shards}")
        published = " ".join(yaml.safe_dump(s.get("with", {})) for s in steps)
        uploaded = " ".join(yaml.safe_dump(s.get("with", {})) for s in steps
                            if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@"))
        for step in steps:
            for kind, file in check_command_all(binary, f"{where} job {name}", step.get("run", ""), {}):
                if kind == "junit" and file not in published:
                    fail(f"{where} job {name}", f"JUnit file {file} is written but never published")
                if kind == "sarif" and file not in uploaded:
                    fail(f"{where} job {name}", f"SARIF file {file} is written but no upload-sarif step uploads it")
        if uploaded and (job.get("permissions") or doc.get("permissions") or {}).get("security-events") != "write":
            fail(f"{where} job {name}", "upload-sarif needs permissions: security-events: write")


def gitlab(binary, where, doc):
    variables = {k: str(v) for k, v in (doc.get("variables") or {}).items()}
    jobs = {k: v for k, v in doc.items() if isinstance(v, dict) and ("script" in v or "extends" in v)}
    if not jobs:
        return fail(where, "no jobs")
    for name, job in jobs.items():
        script = job.get("script")
        if script is None:
            continue  # inherits its script through extends
        reports = (job.get("artifacts") or {}).get("reports") or {}
        for line in script:
            if "parallel" in job and "repro-audit" in line and "CI_NODE_INDEX" not in line and "merge" not in line:
                fail(f"{where} job {name}", "a parallel job's shard is read from CI_NODE_INDEX: name it in the report path")
            for kind, file in check_command_all(binary, f"{where} job {name}", line, variables):
                listed = reports.get(kind)
                if file not in ([listed] if isinstance(listed, str) else (listed or [])):
                    fail(f"{where} job {name}", f"{'JUnit' if kind == 'junit' else 'SARIF'} file {file} is written but "
                                                f"not in artifacts:reports:{kind}")


def check_command_all(binary, where, shell, variables):
    found = []
    for tokens in commands(shell):
        found += list(check_command(binary, where, tokens, variables))
    return found


def kubernetes(binary, where, doc):
    spec = doc.get("spec") or {}
    containers = (((spec.get("template") or {}).get("spec")) or {}).get("containers") or []
    if not containers:
        return fail(where, "a Job without containers")
    for c in containers:
        shell = " ".join(str(x) for x in (c.get("command") or []) + (c.get("args") or []))
        check_command_all(binary, f"{where} container {c.get('name')}", shell, {})
        for n in re.findall(r"--shards[ =](\d+)", shell):
            if spec.get("completionMode") != "Indexed" or spec.get("completions") != int(n):
                fail(where, f"--shards {n} needs completionMode Indexed and completions {n}")


def slurm(binary, source):
    folder = source / "docs" / "ci" / "slurm"
    scripts = sorted(folder.glob("*.sbatch")) + sorted(folder.glob("*.sh"))
    if not scripts:
        return fail("docs/ci/slurm", "expected the Slurm array recipe")
    arrays = []
    for path in scripts:
        where = str(path.relative_to(source))
        text = path.read_text()
        shell = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))
        check_command_all(binary, where, shell, {})
        arrays += re.findall(r"^#SBATCH --array=0-(\d+)$", text, re.M)
        if "sbatch" in shell and "merge" in text and "--dependency=\"afterany:" not in text and "--dependency=afterany:" not in text:
            fail(where, "the merge job must depend on the array with afterany (it runs when a shard fails, and names it)")
    if len(arrays) != 1:
        fail("docs/ci/slurm", f"expected one #SBATCH --array=0-M line, found {len(arrays)}")


def check_doc(binary, where, doc):
    if not isinstance(doc, (dict, list)):
        return fail(where, "not a YAML mapping")
    if isinstance(doc, dict) and doc.get("kind") == "Job":
        return kubernetes(binary, where, doc)
    if isinstance(doc, list):  # a fragment: a list of GitHub steps
        for step in doc:
            check_command_all(binary, where, step.get("run", "") if isinstance(step, dict) else "", {})
    elif "jobs" in doc:
        github(binary, where, doc)
    else:
        gitlab(binary, where, doc)


def main():
    binary, source = sys.argv[1], pathlib.Path(sys.argv[2])
    recipes = sorted((source / "docs" / "ci").glob("*.yml"))
    if len(recipes) < 2:
        fail("docs/ci", "expected the GitHub Actions and GitLab CI recipes")
    count = 0
    for path in recipes:
        where = str(path.relative_to(source))
        try:
            docs = list(yaml.safe_load_all(path.read_text()))
        except yaml.YAMLError as e:
            fail(where, f"not valid YAML: {e}")
            continue
        for doc in docs:
            check_doc(binary, where, doc)
            count += 1
    slurm(binary, source)
    for md in ["README.md", "docs/GUIDE.md", "docs/CI.md"]:
        text = (source / md).read_text()
        for n, block in enumerate(re.findall(r"```yaml\n(.*?)```", text, re.S)):
            try:
                doc = yaml.safe_load(block)
            except yaml.YAMLError as e:
                fail(f"{md} yaml block {n}", f"not valid YAML: {e}")
                continue
            check_doc(binary, f"{md} yaml block {n}", doc)
            count += 1
        for n, block in enumerate(re.findall(r"```(?:sh|bash|console)\n(.*?)```", text, re.S)):
            shell = "\n".join(l[2:] if l.startswith("$ ") else l for l in block.splitlines() if not l.startswith("#"))
            check_command_all(binary, f"{md} shell block {n}", shell, {})
    for f in failures:
        print(f, file=sys.stderr)
    print(f"checked {count} YAML documents: {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
