// SPDX-License-Identifier: Apache-2.0
// The runner's side of a shard (`run` and `probes` with --shard): which of the plan's cells this
// process runs, and the shard's record in its report, with the reference tensors `merge` needs
// kept beside the report.
#pragma once

#include "audit/fleet/shard.h"
#include "audit/trial/trials.h"
#include "reports/fleet_model.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace ra::fleet {

struct ShardOptions {
  ShardRequest request;
  std::string report;  // --report: the shard's result; its reference tensors go to REPORT.tensors/
};

class ShardPlan {
 public:
  // `plan`: the canonical description whose digest names the plan (fleet::plan_digest); the plan
  // has `targets` x `configs` cells, target by target.
  ShardPlan(const ShardOptions& options, const nlohmann::ordered_json& plan, size_t targets,
            std::vector<std::string> configs);

  size_t cell(size_t target, size_t config) const { return target * configs_.size() + config; }
  bool runs(size_t target, size_t config) const;
  bool runs_any(size_t target) const;
  // This shard runs some of the target's cells, another shard the rest: `merge` joins them.
  bool shared(size_t target) const;
  // The configurations of `target` this shard runs, as indices into the plan's.
  std::vector<size_t> configs_of(size_t target) const;

  // Keeps a copy of a shared target's reference files for `merge`: the reference repeat's tensor
  // dump and, traced, its op trace ("" for what does not exist).
  void keep(size_t target, size_t config, const std::string& dump, const std::string& trace);
  // The report's shard record. Writes the kept files to REPORT.tensors/ first (replacing an older
  // folder of that name; a folder is written under a temporary name and renamed, so it is whole
  // or absent). Throws InputError when it cannot.
  report::ShardInfo finish(std::vector<report::CensusRecord> census);

  const ShardRequest& request() const { return options_.request; }

 private:
  ShardOptions options_;
  std::string digest_;
  std::vector<std::string> configs_;
  size_t cells_ = 0;
  size_t first_ = 0, last_ = 0;
  std::map<std::string, std::string> kept_;  // file name in the folder -> source path
};

// The part of a plan every audit shares: the command, the tool's version, the device, the
// configurations with their switches, the repeats rule, the seed, the tolerance and the libraries.
nlohmann::ordered_json session_plan(const SessionOptions& o, const std::string& command);

// The file names `keep` gives a cell's reference dump and trace in the tensors folder.
std::string kept_dump_name(size_t cell);
std::string kept_trace_name(size_t cell);
// The folder beside `report` where they go.
std::string tensors_folder(const std::string& report);

}  // namespace ra::fleet
