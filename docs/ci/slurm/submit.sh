#!/usr/bin/env bash
# The probe suite as a Slurm job array of 4 shards plus a dependent merge job. Run it from the
# folder that is to hold the results (shared by the nodes); its arguments go to every shard
# (for example --device cuda, or --only conv2d*). It waits for the merge and returns its exit code.
set -euo pipefail
here=$(dirname "$0")
mkdir -p shards
rm -rf shards/shard-*.json shards/shard-*.json.tensors
array=$(sbatch --parsable "$here/probes-array.sbatch" "$@")
echo "shards: job array $array"
sbatch --wait --dependency="afterany:$array" "$here/merge.sbatch"
