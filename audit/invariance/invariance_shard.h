// SPDX-License-Identifier: Apache-2.0
// `invariance --shard K/N` and `merge` of its shards.
//
// The problem. A sweep is one worker per configuration, and its sizes must run in one process
// each (invariance is a property inside one process), yet a large sweep (many configurations, or
// sizes up to a large budget on a slow model) should spread over a fleet like every other audit.
// The approach. The plan handed to the skeleton (audit/skeleton/audit_kind.h) has N size chunks as
// its targets and the configurations as its cells' columns, so shard_range cuts it like any plan:
// chunk-major, each shard gets neighbouring chunks of one or more configurations. A chunk is a run
// of neighbouring sizes (of --sizes, or of auto's start sizes) that shares its last size with the
// next chunk's first, so every pair of neighbours lies in one chunk and auto's bisection between
// them runs whole in one shard. A shard runs, per configuration it owns, one worker over the union
// of its chunks (plus batch 1, the reference, always). `merge` joins each configuration's cells
// from the shards (a size measured twice kept once), and analyses them again: the classes are those
// of one unsharded run, as long as the model gives the same bits in every process (a batch-1
// reference that differs between shards is said in a note: then classes across shards mean little).
// The cost. One more worker start per shard and configuration; batch 1 and the shared sizes run in
// each shard that holds them.
#pragma once

#include "audit/fleet/merge.h"
#include "audit/invariance/invariance_audit.h"
#include "audit/skeleton/audit_kind.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

namespace ra::invariance {

// What one configuration's worker sweeps in this process.
struct SweepPart {
  bool runs = true;
  std::vector<int64_t> sizes;  // empty: --sizes auto whole
  bool bisect = false;         // bisect between neighbours of `sizes` (auto, sharded)
};

// The plan's targets: N size chunks when sharded, else 1.
size_t plan_chunks(const InvarianceOptions& o);
// The sizes of each of `count` chunks (see above).
std::vector<std::vector<int64_t>> size_chunks(const std::vector<int64_t>& sizes, size_t count);
// Per configuration of the plan: what this process sweeps, given the skeleton's cells.
std::vector<SweepPart> sweep_parts(const InvarianceOptions& o, const Cells& cells);
// What names the plan for --shard: the session's plan, the model, the rows file and the sweep.
nlohmann::ordered_json invariance_plan(const InvarianceOptions& o);

// True when `shards` are invariance shards (a shard of N holding an invariance section).
bool invariance_shards(const std::vector<fleet::ShardFile>& shards);
// The shards joined and analysed again (see above). Throws InputError where fleet::check_shards does.
report::Report merge_invariance(const std::vector<fleet::ShardFile>& shards);

}  // namespace ra::invariance
