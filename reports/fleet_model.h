// SPDX-License-Identifier: Apache-2.0
// Scale-out: a shard's place in its plan (`--shard K/N`), and where a merged report's cells ran
// (`merge`). The JSON writer and reader of these structs sit beside them in reports/fleet_json.cpp.
#pragma once

#include "reports/core_model.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace ra::report {

// `--shard K/N` (audit/fleet/shard.h): this report holds one shard of a plan, for `merge`. A
// target lists only the configurations (cells) this shard ran.
struct CensusRecord {  // a probe's census run, when this shard ran it
  std::string target;
  bool completed = false;
  std::vector<std::string> alerts;
};
struct ShardInfo {
  std::string plan;                  // the plan's digest (fleet::plan_digest)
  int index = 1;                     // K, from 1
  int count = 1;                     // N
  size_t plan_cells = 0;             // cells in the whole plan: every target x every configuration
  std::vector<std::string> configs;  // the plan's configurations, in order (cell = target * configs + config)
  size_t first_cell = 0;             // this shard's cells: [first_cell, last_cell) in plan order
  size_t last_cell = 0;
  std::string source;                                          // "--shard", "the Slurm array", ...
  std::vector<std::pair<std::string, std::string>> variables;  // environment variables read, in order
  std::string host;                                            // the host name of the machine that ran it
  // Where the reference repeats' tensors (and, traced, op traces) of the cells of targets that
  // this shard shares with another are kept, relative to the report's folder: `merge` needs them
  // for the configuration-dependence statistics across shards. "" when there is no such target.
  std::string tensors;
  std::vector<CensusRecord> census;
};

// `repro-audit merge` (audit/fleet/merge.h): where the joined report's cells ran. Kept apart from
// the results, which equal those of one process running the whole plan.
struct FleetShard {
  int index = 1;  // K
  std::string host;
  std::string source;     // what named the shard
  size_t first_cell = 0;  // its cells [first_cell, last_cell)
  size_t last_cell = 0;
  int machine = 1;     // 1-based index into Fleet::machines
  double wall_ms = 0;  // timing
};
// Machines whose fingerprints agree on every key that can change results are one kind.
struct FleetMachine {
  nlohmann::ordered_json environment;
  std::vector<int> shards;                 // K of the shards it ran
  std::vector<EnvironmentChange> changes;  // keys that differ from machine 1's, with what they can affect
};
// A cell that did not finish on every repeat: where it ran.
struct FleetFailure {
  std::string target, config;
  std::string status;  // crashed | timeout | raised | error
  std::string host;
  int shard = 1;
  int machine = 1;
};
// A cell run on every machine kind (the plan run once per kind): did they give the same bits?
struct FleetCell {
  std::string target, config;
  std::vector<std::string> outcomes;  // the reference repeat's outcome digest per machine kind ("" when none finished)
  bool same = false;                  // every kind finished and gave the same digests
};
struct Fleet {
  int count = 1;                   // N
  std::string plan;                // the plan's digest
  bool replicated = false;         // each machine kind ran the whole plan (cells compares them)
  std::vector<FleetShard> shards;  // by K, then machine
  std::vector<FleetMachine> machines;
  std::vector<FleetFailure> failures;  // in plan order
  std::vector<FleetCell> cells;        // replicated only, in plan order
  std::vector<std::string> notes;      // one sentence each
};

}  // namespace ra::report
