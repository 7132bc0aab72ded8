# SPDX-License-Identifier: Apache-2.0
"""exec's start-up hook (share/exec/sitecustomize.py) against repro-audit's switch table
(audit/trial/config.cpp). The hook cannot include C++, so its halves of the table's rows are Python
tables keyed by the switch's key; the unit test of run_switches (tests/unit/test_audit_exec.cpp)
passes the table's rows here as JSON, and this checks that the hook holds exactly the in-process and
compile switches of the table, that it sets and reads back every value of each in-process one (in
this Python's torch), and that it records every switch's variable. One line per problem on stdout;
exit 1 if there is any.

usage: check_hook_switches.py HOOK ROWS.json
ROWS.json: {"context": {key: [values]}, "compile": [key, ...], "env": [variable, ...]}
"""
import json
import os
import runpy
import sys
import tempfile


def main():
    hook_path, rows_path = sys.argv[1], sys.argv[2]
    with open(rows_path) as f:
        rows = json.load(f)
    for var in ("REPRO_AUDIT_HOOK_DIR", "NVIDIA_TF32_OVERRIDE"):
        os.environ.pop(var, None)  # the hook only chains; TF32 reads as torch has it
    Hook = runpy.run_path(hook_path)["_Hook"]
    problems = []

    def same_keys(what, hook_keys, table_keys):
        extra, missing = sorted(set(hook_keys) - set(table_keys)), sorted(set(table_keys) - set(hook_keys))
        if extra:
            problems.append("%s: the hook has %s, which the table does not" % (what, ", ".join(extra)))
        if missing:
            problems.append("%s: the table has %s, which the hook does not" % (what, ", ".join(missing)))

    same_keys("in-process switches (_Hook.CONTEXT)", Hook.CONTEXT, rows["context"])
    same_keys("compile switches (_Hook.COMPILE)", Hook.COMPILE, rows["compile"])
    unknown = sorted(set(Hook.INDUCTOR.values()) - set(rows["compile"]))
    if unknown:
        problems.append("Inductor's settings (_Hook.INDUCTOR) name %s, not compile switches of the table"
                        % ", ".join(unknown))
    unrecorded = [v for v in rows["env"] if v not in Hook.ENV]
    if unrecorded:
        problems.append("variables the hook does not record (_Hook.ENV): " + ", ".join(unrecorded))

    import torch

    with tempfile.TemporaryDirectory() as out:
        hook = Hook(out)
        hook.torch = torch
        for key, values in sorted(rows["context"].items()):
            if key not in Hook.CONTEXT:
                continue
            start = hook.read_switch(key)
            for value in values + [start]:
                hook.requested = {key: value}
                hook.apply_switches()
                got = hook.read_switch(key)
                if got != value or hook.applied.get(key) != value:
                    problems.append("%s=%s: the hook read back %s" % (key, value, got))
    for p in problems:
        print(p)
    print("%d in-process and %d compile switches checked" % (len(rows["context"]), len(rows["compile"])))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
