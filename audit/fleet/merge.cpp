// SPDX-License-Identifier: Apache-2.0
#include "audit/fleet/merge.h"

#include "audit/baseline/baseline.h"
#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/fleet/shard.h"
#include "audit/fleet/shard_run.h"
#include "audit/knowledge/probe_findings.h"
#include "audit/trace/trace_align.h"
#include "audit/trial/analysis.h"
#include "audit/trial/trial_spec.h"
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

std::string plan_key(const ShardFile& s) { return s.report.shard->plan + "/" + std::to_string(s.report.shard->count); }

// Every file is a shard of the plan most of them name (the first given on a tie): returns a
// shard of that plan; throws naming the others.
const ShardFile& check_plan(const std::vector<ShardFile>& shards) {
  if (shards.empty()) throw UsageError("merge needs the shard reports to join");
  std::map<std::string, int> plans;
  for (const auto& s : shards) {
    if (!s.report.shard)
      throw InputError(fmt::format("{} is not a shard: it was written without --shard (or by merge)", s.path));
    ++plans[plan_key(s)];
  }
  const ShardFile* first = nullptr;
  for (const auto& s : shards)
    if (first == nullptr || plans[plan_key(s)] > plans[plan_key(*first)]) first = &s;
  std::string foreign;
  for (const auto& s : shards)
    if (plan_key(s) != plan_key(*first))
      foreign += fmt::format("{}{} (plan {}, {} shards{})", foreign.empty() ? "" : "; ", s.path, short_plan(s.report.shard->plan),
                             s.report.shard->count,
                             s.report.tool_version == first->report.tool_version ? "" : ", repro-audit " + s.report.tool_version);
  if (!foreign.empty())
    throw InputError(fmt::format("not shards of plan {} ({} shards): {}", short_plan(first->report.shard->plan),
                                 first->report.shard->count, foreign));
  for (const auto& s : shards) {
    const auto& sh = *s.report.shard;
    const auto [first_cell, last_cell] = shard_range(sh.plan_cells, sh.index, sh.count);
    if (sh.plan_cells != first->report.shard->plan_cells || sh.configs != first->report.shard->configs ||
        sh.first_cell != first_cell || sh.last_cell != last_cell)
      throw InputError(fmt::format("{}: shard {}/{} does not hold the cells its plan assigns it", s.path, sh.index, sh.count));
  }
  return *first;
}

// Shards grouped by machine kind: fingerprints that agree on every key that can change results
// (audit/baseline/baseline.h), in the order first given.
std::vector<std::vector<const ShardFile*>> machine_kinds(const std::vector<ShardFile>& shards) {
  std::vector<std::vector<const ShardFile*>> kinds;
  for (const auto& s : shards) {
    size_t k = 0;
    while (k < kinds.size() && !diff_environments(kinds[k].front()->report.environment, s.report.environment).changes.empty()) ++k;
    if (k == kinds.size()) kinds.emplace_back();
    kinds[k].push_back(&s);
  }
  return kinds;
}

// The K each shard of `set` holds, by K (nullptr where none); throws for a K given twice.
std::vector<const ShardFile*> by_index(const std::vector<const ShardFile*>& set, int count) {
  std::vector<const ShardFile*> out(static_cast<size_t>(count), nullptr);
  for (const ShardFile* s : set) {
    const ShardFile*& slot = out[static_cast<size_t>(s->report.shard->index - 1)];
    if (slot != nullptr)
      throw InputError(fmt::format("shard {}/{} is given twice: {} and {}", s->report.shard->index, count, slot->path, s->path));
    slot = s;
  }
  return out;
}

std::vector<int> missing_of(const std::vector<const ShardFile*>& indexed) {
  std::vector<int> missing;
  for (size_t k = 0; k < indexed.size(); ++k)
    if (indexed[k] == nullptr) missing.push_back(static_cast<int>(k + 1));
  return missing;
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
  bool one_machine = true;  // every piece ran on one machine kind
};

Joined join(const std::vector<Piece>& parts, size_t target_index, const std::map<const ShardFile*, int>& machine_of) {
  Joined j;
  j.target = *parts.front().target;
  j.target.configs.clear();
  j.target.dependence.reset();
  const size_t configs = parts.front().shard->report.shard->configs.size();
  for (const Piece& p : parts) {
    j.one_machine = j.one_machine && machine_of.at(p.shard) == machine_of.at(parts.front().shard);
    for (size_t k = 0; k < p.target->configs.size(); ++k) {
      j.target.configs.push_back(p.target->configs[k]);
      const size_t cell = target_index * configs + p.first_config + k;
      j.dumps.push_back(kept(*p.shard, kept_dump_name(cell)));
      j.traces.push_back(kept(*p.shard, kept_trace_name(cell)));
      j.repeats.push_back(reference_repeat(p.target->configs[k]));
    }
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

// The report of one complete set of shards (each K once, ordered by K).
report::Report merge_set(const std::vector<const ShardFile*>& ordered, const MergeOptions& options,
                         const std::map<const ShardFile*, int>& machine_of, std::vector<std::string>& notes) {
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
    if (all[t].size() > 1) joined.emplace(t, join(all[t], t, machine_of));
  std::optional<ScratchDir> scratch;
  if (!joined.empty()) scratch.emplace();
  std::optional<BatchedDiff> stats;
  if (scratch) stats.emplace(*scratch, options.timeout_s, first.tolerance);
  for (auto& [t, j] : joined)
    if (j.one_machine) configuration_dependence(j.target.configs, j.dumps, stats->collect());
  if (stats) stats->resolve();

  for (size_t t = 0; t < all.size(); ++t) {
    const auto it = joined.find(t);
    if (it == joined.end()) {
      rep.targets.push_back(*all[t].front().target);
      continue;
    }
    Joined& j = it->second;
    if (j.one_machine) {
      j.target.dependence = configuration_dependence(j.target.configs, j.dumps, stats->answer());
      const bool traced = std::any_of(j.target.configs.begin(), j.target.configs.end(),
                                      [](const report::ConfigResult& c) { return c.trace.has_value(); });
      if (traced && j.target.dependence) trace::explain_dependence(*j.target.dependence, j.target.configs, j.traces, j.repeats);
    } else {
      notes.push_back(fmt::format("{}: its configurations ran on different machine kinds, so whether its results depend "
                                  "on the configuration is not judged", j.target.name));
    }
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
  // The shards' own allowlist decisions are not carried over: merge applies its own.
  for (auto& t : rep.targets)
    for (auto& c : t.configs) c.allowed_by.reset();
  for (const ShardFile* s : ordered) rep.wall_ms += s->report.wall_ms;  // the shards' time, as one process would spend it
  report::finalize(rep);
  return rep;
}

// The cells of `set` that did not finish on every repeat, with where they ran.
void add_failures(report::Fleet& fleet, const std::vector<const ShardFile*>& set, const std::map<const ShardFile*, int>& machine_of) {
  for (const ShardFile* s : set)
    for (const auto& t : s->report.targets)
      for (const auto& c : t.configs)
        for (const auto& trial : c.trials)
          if (trial.status == report::TrialStatus::Crashed || trial.status == report::TrialStatus::Timeout ||
              trial.status == report::TrialStatus::Error || trial.status == report::TrialStatus::ConfigError) {
            fleet.failures.push_back({t.name, c.name, report::to_string(trial.status), s->report.shard->host,
                                      s->report.shard->index, machine_of.at(s)});
            break;
          }
}

// The reference repeat's outcome of each cell, target by target.
std::vector<std::pair<std::string, std::string>> cell_names(const report::Report& r) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& t : r.targets)
    for (const auto& c : t.configs) out.emplace_back(t.name, c.name);
  return out;
}

std::string reference_outcome(const report::ConfigResult& c) {
  return c.completed > 0 && !c.reference.empty() ? outcome_digest(c.reference) : "";
}

}  // namespace

std::vector<std::string> unsharded_command(const std::vector<std::string>& command) {
  std::vector<std::string> out;
  for (size_t i = 0; i < command.size(); ++i) {
    const std::string& a = command[i];
    if (a == "--") {  // exec: what follows is the user's command, kept whole
      out.insert(out.end(), command.begin() + static_cast<std::ptrdiff_t>(i), command.end());
      break;
    }
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
  const ShardFile& head = check_plan(shards);
  const int count = head.report.shard->count;
  const auto kinds = machine_kinds(shards);
  std::map<const ShardFile*, int> machine_of;
  std::vector<std::vector<const ShardFile*>> indexed;
  for (size_t k = 0; k < kinds.size(); ++k) {
    for (const ShardFile* s : kinds[k]) machine_of[s] = static_cast<int>(k + 1);
    indexed.push_back(by_index(kinds[k], count));
  }
  // One machine kind: every K once. Several: each ran the whole plan (compared cell by cell), or
  // together they ran it once (a mixed fleet).
  std::vector<std::vector<const ShardFile*>> sets;
  bool replicated = false;
  const bool each_whole = std::all_of(indexed.begin(), indexed.end(), [](const auto& x) { return missing_of(x).empty(); });
  if (kinds.size() > 1 && each_whole) {
    sets = indexed;
    replicated = true;
  } else {
    std::vector<const ShardFile*> all;
    for (const auto& s : shards) all.push_back(&s);
    std::vector<const ShardFile*> once;
    try {
      once = by_index(all, count);
    } catch (const InputError& e) {
      if (kinds.size() == 1) throw;
      std::string have;
      for (size_t k = 0; k < kinds.size(); ++k) {
        std::vector<int> ks;
        for (const ShardFile* s : kinds[k]) ks.push_back(s->report.shard->index);
        std::sort(ks.begin(), ks.end());
        have += fmt::format("{}machine {} ran {}", have.empty() ? "" : "; ", k + 1, shard_list(ks, count));
      }
      throw InputError(fmt::format("the shards come from {} machine kinds that neither each ran the whole plan nor "
                                   "together ran it once: {}", kinds.size(), have));
    }
    if (const auto missing = missing_of(once); !missing.empty())
      throw InputError(fmt::format("{} {} of plan {} {} missing ({} of {} given)", missing.size() == 1 ? "shard" : "shards",
                                   shard_list(missing, count), short_plan(head.report.shard->plan),
                                   missing.size() == 1 ? "is" : "are", count - static_cast<int>(missing.size()), count));
    sets.push_back(once);
  }

  report::Fleet fleet;
  fleet.count = count;
  fleet.plan = head.report.shard->plan;
  fleet.replicated = replicated;
  std::vector<report::Report> merged;
  for (const auto& set : sets) merged.push_back(merge_set(set, options, machine_of, fleet.notes));
  for (const auto& set : sets) add_failures(fleet, set, machine_of);
  for (int k = 1; k <= count; ++k)
    for (const auto& s : shards)
      if (s.report.shard->index == k)
        fleet.shards.push_back({k, s.report.shard->host, s.report.shard->source, s.report.shard->first_cell,
                                s.report.shard->last_cell, machine_of.at(&s), s.report.wall_ms});
  for (size_t k = 0; k < kinds.size(); ++k) {
    report::FleetMachine m;
    m.environment = kinds[k].front()->report.environment;
    for (const ShardFile* s : kinds[k]) m.shards.push_back(s->report.shard->index);
    std::sort(m.shards.begin(), m.shards.end());
    if (k > 0) m.changes = diff_environments(kinds[0].front()->report.environment, m.environment).changes;
    fleet.machines.push_back(std::move(m));
  }
  if (replicated) {
    // The same plan on every machine kind: does each cell give the same bits everywhere?
    const auto names = cell_names(merged.front());
    std::vector<std::vector<std::string>> outcomes(merged.size());
    for (size_t m = 0; m < merged.size(); ++m)
      for (const auto& t : merged[m].targets)
        for (const auto& c : t.configs) outcomes[m].push_back(reference_outcome(c));
    for (size_t i = 0; i < names.size(); ++i) {
      report::FleetCell cell{names[i].first, names[i].second, {}, true};
      for (size_t m = 0; m < merged.size(); ++m) cell.outcomes.push_back(i < outcomes[m].size() ? outcomes[m][i] : "");
      cell.same = std::all_of(cell.outcomes.begin(), cell.outcomes.end(),
                              [&](const std::string& o) { return !o.empty() && o == cell.outcomes.front(); });
      fleet.cells.push_back(std::move(cell));
    }
  }
  report::Report rep = std::move(merged.front());
  rep.fleet = std::move(fleet);
  return rep;
}

}  // namespace ra::fleet
