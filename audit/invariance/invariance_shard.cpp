// SPDX-License-Identifier: Apache-2.0
#include "audit/invariance/invariance_shard.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/fleet/merge_checks.h"
#include "audit/invariance/invariance_analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>

namespace ra::invariance {
namespace {

using report::InvarianceCell;
using report::InvarianceConfig;

std::vector<int64_t> start_sizes(const InvarianceOptions& o) {
  return o.sizes.empty() ? auto_sizes(o.budget) : o.sizes;
}

size_t placement_index(const std::string& p) {
  size_t i = 0;
  for (const char* q : report::kPlacements) {
    if (p == q) return i;
    ++i;
  }
  return i;
}

const InvarianceConfig* find_config(const report::Report& r, const std::string& name) {
  const auto* inv = std::get_if<report::Invariance>(&r.body);
  if (!inv) return nullptr;
  for (const auto& c : inv->configs)
    if (c.config == name) return &c;
  return nullptr;
}

// The cells already joined, by (size, placement): an index into InvarianceConfig::cells, so that
// joining costs n log n in the cells, not a search of every cell held for each new one.
using CellIndex = std::map<std::pair<int64_t, size_t>, size_t>;

// Adds a shard's cells; a (size, placement) already held is kept once, and a size whose start
// bits differ between shards is noted (the model's bits then depend on the process).
void add_cells(InvarianceConfig& joined, const InvarianceConfig& piece, CellIndex& held, std::set<int64_t>& differing) {
  for (const auto& cell : piece.cells) {
    const auto [it, fresh] =
        held.emplace(std::make_pair(cell.size, placement_index(cell.placement)), joined.cells.size());
    if (fresh) {
      joined.cells.push_back(cell);
      continue;
    }
    if (cell.placement != std::string("start")) continue;
    const InvarianceCell& have = joined.cells[it->second];
    for (size_t r = 0; r < cell.rows.size() && r < have.rows.size(); ++r)
      if (cell.rows[r].digest != have.rows[r].digest) differing.insert(cell.size);
  }
}

// A shard's batch sizes are those an invariance run can try: its budget from 1 to the largest
// --budget, and every cell's size from 1 to that budget (merge is given files, which anyone can edit).
void check_sizes(const fleet::ShardFile& s) {
  const report::Invariance& inv = std::get<report::Invariance>(s.report.body);
  if (inv.budget < 1 || inv.budget > kMaxBudget)
    throw InputError(fmt::format("{}: budget {} is not a batch size from 1 to {}", s.path, inv.budget, kMaxBudget));
  for (const auto& c : inv.configs)
    for (const auto& cell : c.cells)
      if (cell.size < 1 || cell.size > inv.budget)
        throw InputError(
            fmt::format("{}: configuration {} holds a cell of batch size {}, not a size from 1 to its "
                        "budget of {}",
                        s.path, c.config, cell.size, inv.budget));
}

// One configuration joined from the shards that ran it; nullopt when none did.
std::optional<InvarianceConfig> join_config(const std::string& name, const std::vector<const fleet::ShardFile*>& set,
                                            std::vector<std::string>& notes) {
  std::optional<InvarianceConfig> joined;
  std::set<int64_t> differing;
  CellIndex held;
  for (const fleet::ShardFile* s : set) {
    const InvarianceConfig* piece = find_config(s->report, name);
    if (!piece) continue;
    if (!joined) joined = InvarianceConfig{}, joined->config = name, joined->switches = piece->switches;
    if (piece->verdict == "crashed" || (piece->verdict == "nondeterministic" && joined->verdict != "crashed"))
      joined->verdict = piece->verdict, joined->message = piece->message, joined->advice = piece->advice;
    else if (!piece->message.empty() && joined->message.empty())
      joined->message = piece->message;  // a shard stopped where the model failed
    add_cells(*joined, *piece, held, differing);
    joined->timing.forward_ms += piece->timing.forward_ms, joined->timing.calls += piece->timing.calls;
    joined->timing.sweep_ms += piece->timing.sweep_ms, joined->timing.worker_ms += piece->timing.worker_ms;
  }
  if (!joined) return joined;
  std::stable_sort(joined->cells.begin(), joined->cells.end(), [](const InvarianceCell& a, const InvarianceCell& b) {
    return a.size != b.size ? a.size < b.size : placement_index(a.placement) < placement_index(b.placement);
  });
  if (!differing.empty())
    notes.push_back(
        fmt::format("{}: shards measured sizes {} with other bits: the model's bits depend on the process, "
                    "so classes joined across shards may not be those of one process",
                    name, fmt::join(differing, ",")));
  analyse(*joined);  // keeps a crashed or nondeterministic verdict
  return joined;
}

}  // namespace

size_t plan_chunks(const InvarianceOptions& o) {
  return o.shard ? static_cast<size_t>(std::max(1, o.shard->request.count)) : 1;
}

std::vector<std::vector<int64_t>> size_chunks(const std::vector<int64_t>& sizes, size_t count) {
  std::vector<std::vector<int64_t>> chunks(count);
  if (sizes.empty()) return chunks;
  const size_t pairs = sizes.size() - 1;
  for (size_t j = 0; j < count; ++j) {
    const size_t a = j * pairs / count, b = (j + 1) * pairs / count;
    chunks[j].assign(sizes.begin() + static_cast<std::ptrdiff_t>(a),
                     sizes.begin() + static_cast<std::ptrdiff_t>(b) + 1);
  }
  return chunks;
}

std::vector<SweepPart> sweep_parts(const InvarianceOptions& o, const Cells& cells) {
  const size_t configs = o.session.configs.size();
  if (!cells.shard) return std::vector<SweepPart>(configs, SweepPart{true, o.sizes, false});
  const auto chunks = size_chunks(start_sizes(o), cells.configs.size());
  std::vector<SweepPart> parts(configs, SweepPart{false, {}, o.sizes.empty()});
  // Not batch 1 unless a chunk holds it: the worker always measures it (the reference), and a 1 in
  // `sizes` would make a later chunk bisect from 1 to its first size.
  std::vector<std::set<int64_t>> sizes(configs);
  for (size_t t = 0; t < cells.configs.size(); ++t)
    for (const size_t c : cells.configs[t]) {
      parts[c].runs = true;
      sizes[c].insert(chunks[t].begin(), chunks[t].end());
    }
  for (size_t c = 0; c < configs; ++c)
    parts[c].sizes =
        sizes[c].empty() ? std::vector<int64_t>{1} : std::vector<int64_t>(sizes[c].begin(), sizes[c].end());
  return parts;
}

nlohmann::ordered_json invariance_plan(const InvarianceOptions& o) {
  nlohmann::ordered_json plan = fleet::session_plan(o.session, "invariance");
  plan["model"] = file_digest(o.model, "model");
  plan["input"] = file_digest(o.input, "input");
  plan["rows"] = o.rows;
  plan["filler"] = o.filler == Filler::Random ? "random" : "input";
  plan["axis"] = axis_name(o.axis);
  plan["sizes"] = o.sizes_text;
  plan["budget"] = o.budget;
  plan["batch_dims"] = o.batch_dims;
  return plan;
}

bool invariance_shards(const std::vector<fleet::ShardFile>& shards) {
  return std::any_of(shards.begin(), shards.end(),
                     [](const auto& s) { return std::holds_alternative<report::Invariance>(s.report.body); });
}

report::Report merge_invariance(const std::vector<fleet::ShardFile>& shards) {
  const fleet::ShardSets sets = fleet::check_shards(shards);
  const std::vector<const fleet::ShardFile*>& set = sets.sets.front();
  for (const fleet::ShardFile* s : set) {
    if (!std::holds_alternative<report::Invariance>(s->report.body))
      throw InputError(fmt::format("{}: shard {}/{} holds no invariance result, unlike the others", s->path,
                                   s->report.shard->index, s->report.shard->count));
    check_sizes(*s);
  }
  const report::Report& first = set.front()->report;
  report::Report out;
  out.tool_version = first.tool_version;
  out.command = fleet::unsharded_command(first.command);
  out.environment = first.environment;
  report::Invariance inv = std::get<report::Invariance>(first.body);
  inv.configs.clear();
  std::set<std::string> noted(inv.notes.begin(), inv.notes.end());
  for (const fleet::ShardFile* s : set) {
    const report::Invariance& piece = std::get<report::Invariance>(s->report.body);
    // The first shard whose control saw nothing speaks for the merged report, evidence and all.
    if (inv.control.detected && !piece.control.detected)
      inv.control = {false, fmt::format("shard {}/{}: {}", s->report.shard->index, s->report.shard->count,
                                        piece.control.evidence)};
    out.wall_ms = std::max(out.wall_ms, s->report.wall_ms);
    for (const auto& note : piece.notes)  // e.g. the fix search left to an unsharded run
      if (noted.insert(note).second) inv.notes.push_back(note);
  }
  for (const auto& name : first.shard->configs)
    if (auto joined = join_config(name, set, inv.notes)) inv.configs.push_back(std::move(*joined));
  compare_configs(inv.configs);
  out.body = std::move(inv);
  report::finalize(out);
  return out;
}

}  // namespace ra::invariance
