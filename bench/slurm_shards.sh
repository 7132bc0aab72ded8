#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The probe suite unsharded and as 4 Slurm shards on a throwaway single-node cluster on this machine
# (tests/slurm/cluster.sh --bench): each wall time, the shards' own times and the scheduler's
# overhead per shard. Needs root and the Slurm and MUNGE packages (./dev setup installs them).
# usage: bench/slurm_shards.sh [REPRO_AUDIT_BINARY]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
exec "$here/tests/slurm/cluster.sh" --bench "${1:-$here/build/repro-audit}" "$here"
