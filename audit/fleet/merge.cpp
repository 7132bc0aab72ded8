// SPDX-License-Identifier: Apache-2.0
#include "audit/fleet/merge.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/fleet/shard.h"
#include "audit/fleet/shard_run.h"
#include "audit/knowledge/probe_findings.h"
#include "audit/trace/trace_align.h"
#include "audit/trial/analysis.h"
#include "audit/trial/worker.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

namespace ra::fleet {
namespace {
namespace fs = std::filesystem;

std::string short_plan(const std::string& digest) { return digest.substr(0, 12); }

// "2/4, 3/4"
std::string shard_list(const std::vector<int>& indices, int count) {
  std::string out;
  for (int k : indices) out += fmt::format("{}{}/{}", out.empty() ? "" : ", ", k, count);
  return out;
}

// The checks of the header: every file is a shard of the plan most of them name, each K of N once.
// Returns the shards ordered by K.
std::vector<const ShardFile*> check_shards(const std::vector<ShardFile>& shards) {
  if (shards.empty()) throw UsageError("merge needs the shard reports to join");
  std::map<std::string, int> plans;
  for (const auto& s : shards) {
    if (!s.report.shard)
      throw InputError(fmt::format("{} is not a shard: it was written without --shard (or by merge)", s.path));
    ++plans[s.report.shard->plan + "/" + std::to_string(s.report.shard->count)];
  }
  // The plan is the one most shards name (the first given on a tie); the others are foreign.
  std::string plan;
  int most = 0;
  for (const auto& s : shards) {
    const std::string key = s.report.shard->plan + "/" + std::to_string(s.report.shard->count);
    if (plans[key] > most) most = plans[key], plan = key;
  }
  std::vector<std::string> foreign;
  for (const auto& s : shards)
    if (s.report.shard->plan + "/" + std::to_string(s.report.shard->count) != plan)
      foreign.push_back(fmt::format("{} (plan {}, {} shards{})", s.path, short_plan(s.report.shard->plan), s.report.shard->count,
                                    s.report.tool_version == shards.front().report.tool_version
                                        ? "" : ", repro-audit " + s.report.tool_version));
  const ShardFile* first = nullptr;
  for (const auto& s : shards)
    if (s.report.shard->plan + "/" + std::to_string(s.report.shard->count) == plan) {
      first = &s;
      break;
    }
  const int count = first->report.shard->count;
  if (!foreign.empty()) {
    std::string list;
    for (const auto& f : foreign) list += (list.empty() ? "" : "; ") + f;
    throw InputError(fmt::format("not shards of plan {} ({} shards): {}", short_plan(first->report.shard->plan), count, list));
  }
  std::vector<const ShardFile*> by_index(static_cast<size_t>(count) + 1, nullptr);
  for (const auto& s : shards) {
    const auto& sh = *s.report.shard;
    const ShardFile*& slot = by_index[static_cast<size_t>(sh.index)];
    if (slot != nullptr)
      throw InputError(fmt::format("shard {}/{} is given twice: {} and {}", sh.index, count, slot->path, s.path));
    slot = &s;
    const auto [first_cell, last_cell] = shard_range(sh.plan_cells, sh.index, count);
    if (sh.plan_cells != first->report.shard->plan_cells || sh.configs != first->report.shard->configs ||
        sh.first_cell != first_cell || sh.last_cell != last_cell)
      throw InputError(fmt::format("{}: shard {}/{} does not hold the cells its plan assigns it", s.path, sh.index, count));
  }
  std::vector<int> missing;
  for (int k = 1; k <= count; ++k)
    if (by_index[static_cast<size_t>(k)] == nullptr) missing.push_back(k);
  if (!missing.empty())
    throw InputError(fmt::format("{} of plan {} {} missing ({} of {} given)", missing.size() == 1 ? "shard" : "shards",
                                 short_plan(first->report.shard->plan), shard_list(missing, count),
                                 missing.size() == 1 ? "is" : "are", count - static_cast<int>(missing.size()), count));
  by_index.erase(by_index.begin());
  return by_index;
}

// One target's cells as the shards hold them.
struct Piece {
  const ShardFile* shard = nullptr;
  const report::Target* target = nullptr;
  size_t first_config = 0;  // the plan's index of the piece's first configuration
};

// The pieces of every target in plan order, checked against the shards' cells.
std::vector<std::vector<Piece>> pieces(const std::vector<const ShardFile*>& shards) {
  const auto& head = *shards.front()->report.shard;
  const size_t configs = head.configs.size();
  const size_t targets = configs == 0 ? 0 : head.plan_cells / configs;
  std::vector<std::vector<Piece>> out(targets);
  for (const ShardFile* s : shards) {
    const auto& sh = *s->report.shard;
    size_t next = 0;  // the shard's next target
    for (size_t cell = sh.first_cell; cell < sh.last_cell;) {
      const size_t t = cell / configs;
      const size_t end = std::min(sh.last_cell, (t + 1) * configs);
      if (next >= s->report.targets.size())
        throw InputError(fmt::format("{}: shard {}/{} has fewer targets than its cells", s->path, sh.index, sh.count));
      const report::Target& target = s->report.targets[next++];
      bool names_match = target.configs.size() == end - cell;
      for (size_t c = cell; names_match && c < end; ++c)
        names_match = target.configs[c - cell].name == head.configs[c % configs];
      if (!names_match)
        throw InputError(fmt::format("{}: target '{}' does not hold the configurations of its cells {}-{}", s->path,
                                     target.name, cell, end - 1));
      if (!out[t].empty() && (out[t].front().target->name != target.name ||
                              out[t].front().target->model_digest != target.model_digest))
        throw InputError(fmt::format("{}: target {} is '{}' here but '{}' in {}", s->path, t + 1, target.name,
                                     out[t].front().target->name, out[t].front().shard->path));
      out[t].push_back({s, &target, cell % configs});
      cell = end;
    }
    if (next != s->report.targets.size())
      throw InputError(fmt::format("{}: shard {}/{} has more targets than its cells", s->path, sh.index, sh.count));
  }
  return out;
}

// A file a shard kept for `cell` ("" when it did not keep one).
std::string kept(const ShardFile& s, const std::string& name) {
  if (s.report.shard->tensors.empty()) return "";
  const fs::path path = fs::path(s.path).parent_path() / s.report.shard->tensors / name;
  std::error_code ec;
  return fs::is_regular_file(path, ec) ? path.string() : "";
}

// The repeat index of a configuration's reference repeat (its first that completed ok).
int reference_repeat(const report::ConfigResult& c) {
  for (const auto& t : c.trials)
    if (t.status == report::TrialStatus::Ok) return t.repeat;
  return 0;
}

std::string device_type_of(const std::string& device) { return device.rfind("cuda", 0) == 0 ? "cuda" : "cpu"; }

// A target whose cells ran in several shards: its configurations joined, and what spans them analysed again.
struct Joined {
  report::Target target;
  std::vector<std::string> dumps, traces;
  std::vector<int> repeats;
  std::optional<CensusRun> census;
  bool judge = false;
};

Joined join(const std::vector<Piece>& parts, size_t target_index) {
  Joined j;
  j.target = *parts.front().target;
  j.target.configs.clear();
  j.target.dependence.reset();
  const size_t configs = parts.front().shard->report.shard->configs.size();
  for (const Piece& p : parts)
    for (size_t k = 0; k < p.target->configs.size(); ++k) {
      j.target.configs.push_back(p.target->configs[k]);
      const size_t cell = target_index * configs + p.first_config + k;
      j.dumps.push_back(kept(*p.shard, kept_dump_name(cell)));
      j.traces.push_back(kept(*p.shard, kept_trace_name(cell)));
      j.repeats.push_back(reference_repeat(p.target->configs[k]));
    }
  if (j.target.probe) {
    const std::string off_device = probe_off_device_message(device_type_of(j.target.device));
    j.judge = !std::all_of(j.target.configs.begin(), j.target.configs.end(), [&](const report::ConfigResult& c) {
      return c.verdict == report::Verdict::Skipped && c.message == off_device;
    });
    // The census ran with the probe's first configuration.
    for (const auto& c : parts.front().shard->report.shard->census)
      if (c.target == j.target.name) j.census = CensusRun{c.completed, c.alerts};
  }
  return j;
}

}  // namespace

std::vector<std::string> unsharded_command(const std::vector<std::string>& command) {
  std::vector<std::string> out;
  for (size_t i = 0; i < command.size(); ++i) {
    const std::string& a = command[i];
    if (a == "--shard" || a == "--shards") {
      ++i;
      continue;
    }
    if (a.rfind("--shard=", 0) == 0 || a.rfind("--shards=", 0) == 0) continue;
    out.push_back(a);
  }
  return out;
}

report::Report merge_shards(const std::vector<ShardFile>& shards, const MergeOptions& options) {
  const std::vector<const ShardFile*> ordered = check_shards(shards);
  const std::vector<std::vector<Piece>> all = pieces(ordered);
  const report::Report& first = ordered.front()->report;

  report::Report rep;
  rep.tool_version = first.tool_version;
  rep.command = unsharded_command(first.command);
  rep.environment = first.environment;
  rep.tolerance = first.tolerance;
  rep.tolerant = first.tolerant;
  rep.auto_repeats = first.auto_repeats;

  // Targets split across shards, analysed twice as the runners do: once to collect the
  // statistics needed, then with one worker's answers.
  std::map<size_t, Joined> joined;
  for (size_t t = 0; t < all.size(); ++t)
    if (all[t].size() > 1) joined.emplace(t, join(all[t], t));
  std::optional<ScratchDir> scratch;
  if (!joined.empty()) scratch.emplace();
  std::optional<BatchedDiff> stats;
  if (scratch) stats.emplace(*scratch, options.timeout_s, first.tolerance);
  for (auto& [t, j] : joined) configuration_dependence(j.target.configs, j.dumps, stats->collect());
  if (stats) stats->resolve();

  for (size_t t = 0; t < all.size(); ++t) {
    const auto it = joined.find(t);
    if (it == joined.end()) {
      rep.targets.push_back(*all[t].front().target);
      continue;
    }
    Joined& j = it->second;
    j.target.dependence = configuration_dependence(j.target.configs, j.dumps, stats->answer());
    const bool traced = std::any_of(j.target.configs.begin(), j.target.configs.end(),
                                    [](const report::ConfigResult& c) { return c.trace.has_value(); });
    if (traced && j.target.dependence) trace::explain_dependence(*j.target.dependence, j.target.configs, j.traces, j.repeats);
    if (j.judge) {
      if (options.knowledge == nullptr) throw InputError("merge needs the knowledge base to judge a probe split across shards");
      auto& facts = *j.target.probe;
      facts.census.clear();
      facts.alerts.clear();
      facts.disagreements.clear();
      const KnowledgeEntry* entry = facts.knowledge_id.empty() ? nullptr : options.knowledge->find(facts.knowledge_id);
      judge_probe(j.target, entry, device_type_of(j.target.device), j.census);
    }
    rep.targets.push_back(std::move(j.target));
  }
  if (first.census) rep.census = cross_tabulate(rep.targets, first.census->config);
  // The shards' own allowlist and baseline decisions are not carried over: merge applies its own.
  for (auto& t : rep.targets)
    for (auto& c : t.configs) c.allowed_by.reset();
  for (const ShardFile* s : ordered) rep.wall_ms = std::max(rep.wall_ms, s->report.wall_ms);
  report::finalize(rep);
  return rep;
}

}  // namespace ra::fleet
