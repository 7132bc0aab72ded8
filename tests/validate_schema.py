#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Validates the JSON reports that cli_tests wrote into DIR against a shipped JSON schema.

usage: validate_schema.py SCHEMA DIR NAME...

Every NAME must exist in DIR (a missing file means the test that writes it did not run or failed).
Fails, never skips, when the jsonschema module is missing: ./dev installs python3-jsonschema.
"""
import json
import os
import sys

try:
    import jsonschema
except ImportError:
    sys.exit("validate_schema.py: the Python module jsonschema is missing "
             "(Debian package python3-jsonschema; ./dev test installs it)")


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    schema_path, folder, names = argv[1], argv[2], argv[3:]
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    # jsonschema 4.10 resolves "#/$defs/..." against a relative "$id" ("repro-audit/report-v1")
    # by joining it with itself once a scope is pushed twice; an absolute base avoids that.
    if "://" not in schema.get("$id", "://"):
        schema["$id"] = "https://repro-audit.invalid/" + schema["$id"]
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    failed = 0
    for name in names:
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            print(f"missing {path}: the test that writes it did not run or failed")
            failed += 1
            continue
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        errors = sorted(cls(schema).iter_errors(doc), key=lambda e: list(e.absolute_path))
        for e in errors[:20]:
            where = "/".join(str(p) for p in e.absolute_path) or "(top level)"
            print(f"{name}: {where}: {e.message}")
        if errors:
            failed += 1
        else:
            print(f"{name}: valid")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
