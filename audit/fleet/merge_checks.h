// SPDX-License-Identifier: Apache-2.0
// The shard checks of `merge` (audit/fleet/merge.h), all made before anything is joined: each file
// is a shard, all name the same plan and N, each K is given once per machine kind (or once in all),
// none is missing, and each shard's targets and configurations are exactly its cells. Shard files
// come from other machines and other hands: a check fails with an InputError naming the files and
// shards, never a crash (tests/fuzz/fuzz_merge.cpp feeds it crafted shards).
#pragma once

#include "audit/fleet/merge.h"

#include <map>
#include <vector>

namespace ra::fleet {

// The shards to join, grouped as merge joins them.
struct ShardSets {
  const ShardFile* head = nullptr;                   // a shard of the plan (the one most files name)
  int count = 0;                                     // N
  std::vector<std::vector<const ShardFile*>> kinds;  // by machine kind, in the order first given
  std::map<const ShardFile*, int> machine_of;        // 1-based machine kind of each shard
  std::vector<std::vector<const ShardFile*>> sets;   // complete sets, each K once, ordered by K
  bool replicated = false;                           // several machine kinds, each of which ran the whole plan
};

// One target's cells as one shard holds them.
struct Piece {
  const ShardFile* shard = nullptr;
  const report::Target* target = nullptr;
  size_t index = 0;         // the target's place among its shard's targets (its kind's element there)
  size_t first_config = 0;  // the plan's index of the piece's first configuration
};

// Runs every check; throws InputError (UsageError for no shard at all).
ShardSets check_shards(const std::vector<ShardFile>& shards);

// The pieces of every target of a complete set in plan order, checked against the shards' cells.
std::vector<std::vector<Piece>> pieces(const std::vector<const ShardFile*>& set);

// "2/4, 3/4"
std::string shard_list(const std::vector<int>& indices, int count);

}  // namespace ra::fleet
