#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The worker stands on its own: repro-audit-worker carries the torch side and the ground floor it
shares with the front (the trial protocol, Device, the command line: audit/cmdline/), and no audit
driver. `nm -C` on the built worker must name none of the front's drivers (run, probes, exec,
selftest, invariance), its skeleton and finish, merge, the front's commands (cli/), or the front's
client of the worker's services (audit/trial/worker_client.h: the worker shares only their protocol,
audit/trial/worker_protocol.h).

usage: check_worker_tower.py WORKER_BINARY
"""
import re
import subprocess
import sys

# Demangled names of functions that only the front may hold: each audit kind's driver, the skeleton
# that runs every kind and the finish that renders it, merge, the front's subcommands, and the
# client that asks the worker for its services.
FORBIDDEN = re.compile(
    r"^ra::("
    r"run_audit|run_probe_suite|run_selftest|run_kind|finish_report|"
    r"exec::run_exec|invariance::run_invariance|fleet::merge_shards|"
    r"cli::(?!worker::)\w+|"
    r"worker_stats|worker_diff|worker_artifacts|run_worker_service|run_forwarded|worker_error_line|"
    r"check_worker_loaded|BatchedDiff::\w+"
    r")(\[abi:\w+\])?\(")


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1])
        return 2
    out = subprocess.run(["nm", "-C", "--defined-only", sys.argv[1]], capture_output=True, text=True, check=True).stdout
    found = set()
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and FORBIDDEN.match(parts[2]):
            found.add(parts[2].split("(")[0].split("[abi:")[0])
    for name in sorted(found):
        print(f"{sys.argv[1]} holds {name}: the worker links an audit driver, a front command or the front's client")
    print(f"{len(out.splitlines())} symbols checked, {len(found)} front-only functions found")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
