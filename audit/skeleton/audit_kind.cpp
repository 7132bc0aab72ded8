// SPDX-License-Identifier: Apache-2.0
#include "audit/skeleton/audit_kind.h"

#include "audit/common/paths.h"

#include <algorithm>
#include <chrono>

namespace ra {
namespace {

// This process's cells: the shard's, or every configuration of every target.
Cells cells_of(size_t targets, size_t configs, fleet::ShardPlan* shard) {
  Cells cells;
  cells.shard = shard;
  for (size_t t = 0; t < targets; ++t) {
    if (shard) {
      cells.configs.push_back(shard->configs_of(t));
      continue;
    }
    std::vector<size_t> all(configs);
    for (size_t c = 0; c < configs; ++c) all[c] = c;
    cells.configs.push_back(std::move(all));
  }
  return cells;
}

// The report tail: only the targets with a cell here, what every report carries, the shard record
// and the verdicts.
void close_report(report::Report& rep, AuditKind& kind, const Cells& cells, const SessionOptions& o,
                  std::optional<fleet::ShardPlan>& shard) {
  report::keep_targets(rep.body, [&](size_t t) { return t < cells.configs.size() && !cells.configs[t].empty(); });
  kind.summarise(rep);
  rep.tolerance = o.tolerance;
  rep.tolerant = o.tolerant;
  rep.auto_repeats = o.auto_repeats;
  if (shard) rep.shard = shard->finish(kind.shard_census());
  report::finalize(rep);
}

}  // namespace

bool Cells::empty() const {
  return std::all_of(configs.begin(), configs.end(), [](const auto& c) { return c.empty(); });
}

report::Report run_kind(AuditKind& kind, const SessionOptions& o,
                        const std::optional<fleet::ShardOptions>& shard_options) {
  const auto started = std::chrono::steady_clock::now();
  AuditPlan plan = kind.plan();
  if (o.check_targets) o.check_targets(plan.body, config_names(o.configs));
  const size_t rows = plan.row_count();
  std::optional<fleet::ShardPlan> shard;
  if (shard_options) shard.emplace(*shard_options, plan.identity, rows, config_names(o.configs));
  const Cells cells = cells_of(rows, o.configs.size(), shard ? &*shard : nullptr);

  report::Report rep;
  rep.tool_version = tool_version();
  rep.command = o.command;
  rep.environment = std::move(plan.environment);
  rep.body = std::move(plan.body);
  // An empty shard (the plan has fewer cells than shards) runs nothing: a valid result with no target.
  if (!shard || !cells.empty()) {
    kind.run(cells);
    kind.analyse(cells, rep);
  }
  close_report(rep, kind, cells, o, shard);
  rep.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return rep;
}

}  // namespace ra
