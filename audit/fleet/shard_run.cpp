// SPDX-License-Identifier: Apache-2.0
#include "audit/fleet/shard_run.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/common/log.h"
#include "audit/common/owned_folder.h"
#include "audit/common/paths.h"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>

#include <unistd.h>

namespace ra::fleet {
namespace fs = std::filesystem;

std::string kept_dump_name(size_t cell) { return fmt::format("cell-{}.pt", cell); }
std::string kept_trace_name(size_t cell) { return fmt::format("cell-{}.trace", cell); }
std::string tensors_folder(const std::string& report) { return report + ".tensors"; }

nlohmann::ordered_json session_plan(const SessionOptions& o, const std::string& command) {
  nlohmann::ordered_json plan;
  plan["command"] = command;
  plan["tool"] = tool_version();
  plan["device"] = o.device.to_string();
  for (const auto& c : o.configs) plan["configs"].push_back({{"name", c.name}, {"values", c.values}});
  if (o.auto_repeats)
    plan["repeats"] = {
        {"auto", true}, {"min", o.auto_repeats->min}, {"max", o.auto_repeats->max}, {"rate", o.auto_repeats->rate}};
  else
    plan["repeats"] = o.repeats;
  plan["seed"] = o.seed;
  if (o.tolerance) plan["tolerance"] = {o.tolerance->atol, o.tolerance->rtol};
  plan["tolerant"] = o.tolerant;
  plan["timeout_s"] = o.timeout_s;
  for (const auto& lib : o.load_libraries) plan["libraries"].push_back(file_digest(lib, "library"));
  return plan;
}

ShardPlan::ShardPlan(const ShardOptions& options, const nlohmann::ordered_json& plan, size_t targets,
                     std::vector<std::string> configs)
    : options_(options), digest_(plan_digest(plan)), configs_(std::move(configs)), cells_(targets * configs_.size()) {
  std::tie(first_, last_) = shard_range(cells_, options_.request.index, options_.request.count);
  if (first_ == last_)
    log::warn(
        "shard {}/{} has no cell to run: the plan has {} cells (targets x configurations); it writes an empty result",
        options_.request.index, options_.request.count, cells_);
}

bool ShardPlan::runs(size_t target, size_t config) const {
  const size_t c = cell(target, config);
  return c >= first_ && c < last_;
}

bool ShardPlan::runs_any(size_t target) const { return !configs_of(target).empty(); }

bool ShardPlan::shared(size_t target) const {
  const size_t mine = configs_of(target).size();
  return mine > 0 && mine < configs_.size();
}

std::vector<size_t> ShardPlan::configs_of(size_t target) const {
  std::vector<size_t> out;
  for (size_t c = 0; c < configs_.size(); ++c)
    if (runs(target, c)) out.push_back(c);
  return out;
}

void ShardPlan::keep(size_t target, size_t config, const std::string& dump, const std::string& trace) {
  std::error_code ec;
  if (!dump.empty() && fs::exists(dump, ec)) kept_[kept_dump_name(cell(target, config))] = dump;
  if (!trace.empty() && fs::exists(trace, ec)) kept_[kept_trace_name(cell(target, config))] = trace;
}

report::ShardInfo ShardPlan::finish(std::vector<report::CensusRecord> census) {
  report::ShardInfo info;
  info.plan = digest_;
  info.index = options_.request.index;
  info.count = options_.request.count;
  info.plan_cells = cells_;
  info.configs = configs_;
  info.first_cell = first_;
  info.last_cell = last_;
  info.source = options_.request.source;
  info.variables = options_.request.variables;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) info.host = host;
  info.census = std::move(census);
  // An older shard's folder goes even when nothing is kept: merge must not read it. Only a folder
  // of ours is replaced (audit/common/owned_folder.h).
  const fs::path folder = tensors_folder(options_.report);
  write_owned_folder(folder.string(), kept_, "the shard's reference tensors");
  if (kept_.empty()) return info;
  info.tensors = folder.filename().string();
  return info;
}

}  // namespace ra::fleet
