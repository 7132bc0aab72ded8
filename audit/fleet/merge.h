// SPDX-License-Identifier: Apache-2.0
// `repro-audit merge`: the shards of one plan (fleet/shard.h) joined into the report one process
// running the whole plan would have written.
//
// The shards are checked first, all of them before anything is joined: each is a shard (written
// with --shard), all name the same plan and N, each K is given once, no K is missing, and each
// shard's targets and configurations are exactly its cells. Any failure is an InputError naming
// the files and shards.
//
// Then the targets are rebuilt in plan order from their cells. A target whose cells all ran in one
// shard is that shard's, as it wrote it. A target whose cells ran in several shards is analysed
// again where the analysis spans configurations: configuration dependence (groups from the
// reference digests, statistics from the reference tensors each shard kept beside its report),
// its op-level cause when traced, and a probe's findings against the knowledge base (with its
// census run). The census table, verdicts and exit code follow from the joined targets.
//
// Machine kinds. Shards whose fingerprints agree on every key that can change results
// (diff_environments, audit/baseline/baseline.h) are one kind. Several kinds that each ran every K
// are each merged; the first is the report, and `fleet.cells` compares every cell's reference
// outcome across kinds. Kinds that together ran the plan once are joined, and a target split across
// kinds is not judged configuration-dependent (a note says so). Everything outside `fleet` and
// `timing` equals what one process running the whole plan writes (tests/cli/test_cli_shard.cpp).
#pragma once

#include "audit/knowledge/knowledge.h"
#include "reports/model.h"

#include <optional>
#include <string>
#include <vector>

namespace ra::fleet {

struct ShardFile {
  std::string path;  // as given: its folder holds the kept tensors
  report::Report report;
};

struct MergeOptions {
  const KnowledgeBase* knowledge = nullptr;  // for probe findings of targets split across shards
  double timeout_s = 600;                    // for the worker computing statistics
};

// Throws InputError (exit 3) for shards that cannot be joined.
report::Report merge_shards(const std::vector<ShardFile>& shards, const MergeOptions& options);

// A shard's command without --shard/--shards: the command that runs the whole plan.
std::vector<std::string> unsharded_command(const std::vector<std::string>& command);

}  // namespace ra::fleet
