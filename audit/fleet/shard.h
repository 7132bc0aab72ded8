// SPDX-License-Identifier: Apache-2.0
// fleet/: one audit spread over many jobs: which shard this process is (--shard K/N, or a
// scheduler's variables), which cells of the plan it runs, and the plan's identity.
//
// A plan is the ordered list of cells an audit would run without sharding: every target x
// configuration, target by target, each cell with all its repeats. Shard K of N runs the K-th of N
// contiguous blocks of that list (sizes differing by at most one), so the same plan and N always
// give the same assignment, a target's configurations mostly stay together (which keeps the
// configuration-dependence analysis in one shard), and cells beyond K's block never start. A plan
// with fewer cells than shards leaves the last shards empty: they still write a valid result.
//
// The plan's identity is a digest over what changes results (session_plan, plus each runner's own
// part) and the targets' identities, never output paths, --jobs or the shard: shards of another
// plan, tool version or knowledge base are foreign to `merge`. A scheduler that says "sharded" with
// variables that do not map onto K and N is a usage error, never a silent full run.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ra::fleet {

// Which shard this process is, and what said so.
struct ShardRequest {
  int index = 1;       // K, from 1
  int count = 1;       // N
  std::string source;  // "--shard", "Slurm array", "Kubernetes Indexed Job", "Bazel", "GitLab", "Buildkite"
  std::vector<std::pair<std::string, std::string>> variables;  // the environment variables read, in order
  std::string status_file;  // Bazel: TEST_SHARD_STATUS_FILE, touched to say sharding is supported
};

inline constexpr int kMaxShards = 100000;

// "K/N" with 1 <= K <= N <= kMaxShards; throws UsageError naming what is wrong.
ShardRequest parse_shard(const std::string& text);

// The shard the scheduler's environment names, or nullopt when none says the job is sharded:
// Slurm arrays (SLURM_ARRAY_TASK_ID, _COUNT, _MIN, _STEP, _MAX), Kubernetes Indexed Jobs
// (JOB_COMPLETION_INDEX, with N from `shards`: --shards N), Bazel (TEST_SHARD_INDEX,
// TEST_TOTAL_SHARDS), GitLab (CI_NODE_INDEX, CI_NODE_TOTAL) and Buildkite (BUILDKITE_PARALLEL_JOB,
// BUILDKITE_PARALLEL_JOB_COUNT), tried in that order. Throws UsageError when a scheduler's
// variables are inconsistent or cannot be mapped to K/N (never a silent run of everything), and
// when `shards` is given but no index variable is set.
using Getenv = std::function<const char*(const char*)>;
std::optional<ShardRequest> shard_from_environment(const Getenv& getenv, std::optional<int> shards);

// Bazel's handshake: touches the status file a shard request names (no-op without one).
void acknowledge(const ShardRequest& request);

// The cells [first, last) of a plan of `cells` cells that shard `index` of `count` runs.
std::pair<size_t, size_t> shard_range(size_t cells, int index, int count);

// The shard whose block holds `cell`.
int shard_of(size_t cell, size_t cells, int count);

// The plan's identity: a digest over its canonical JSON (the options that change results and the
// cells with their targets' identities; never output paths, --jobs or the shard itself).
std::string plan_digest(const nlohmann::ordered_json& plan);

}  // namespace ra::fleet
