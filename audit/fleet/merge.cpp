// SPDX-License-Identifier: Apache-2.0
#include "audit/fleet/merge.h"

#include "audit/fleet/merge_checks.h"

#include "audit/baseline/baseline.h"
#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/common/owned_folder.h"
#include "audit/fleet/shard.h"
#include "audit/fleet/shard_run.h"
#include "audit/knowledge/probe_findings.h"
#include "audit/trace/trace_align.h"
#include "audit/trial/analysis.h"
#include "audit/trial/referee.h"
#include "audit/trial/trial_spec.h"
#include "audit/trial/worker_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

namespace ra::fleet {
namespace {
namespace fs = std::filesystem;

// A file a shard kept for `cell` ("" when it did not keep one, or it or its folder is a symlink,
// which is not followed: audit/common/owned_folder.h).
std::string kept(const ShardFile& s, const std::string& name) {
  if (s.report.shard->tensors.empty()) return "";
  const fs::path path = fs::path(s.path).parent_path() / s.report.shard->tensors / name;
  return kept_file_problem(path.string()).empty() ? path.string() : "";
}

// The repeat index of a configuration's reference repeat (its first that completed ok).
int reference_repeat(const report::ConfigResult& c) {
  for (const auto& t : c.trials)
    if (t.status == report::TrialStatus::Ok) return t.repeat;
  return 0;
}

// A target whose cells ran in several shards: its configurations joined, and what spans them analysed again.
struct Joined {
  report::Target target;
  std::vector<std::string> dumps, traces;
  std::vector<int> repeats;
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
  return j;
}

// The merged targets of body kind B in plan order: each first piece's element (its kind's facts)
// with the shared part joined (`common`, one per target of the plan).
template <class B>
auto elements(const std::vector<std::vector<Piece>>& all, std::vector<report::Target>& common) {
  std::vector<typename decltype(B::targets)::value_type> out;
  for (size_t t = 0; t < all.size(); ++t) {
    const Piece& first = all[t].front();
    out.push_back(std::get<B>(first.shard->report.body).targets[first.index]);
    out.back().common = std::move(common[t]);
  }
  return out;
}

// A probe split across shards is judged again over its joined configurations, against the
// knowledge base, with the census of its first configuration's shard; not one that was skipped
// everywhere as off-device.
void judge_split_probes(std::vector<report::ProbeTarget>& probes, const std::vector<std::vector<Piece>>& all,
                        const MergeOptions& options) {
  for (size_t t = 0; t < all.size(); ++t) {
    if (all[t].size() <= 1) continue;
    report::ProbeTarget& probe = probes[t];
    const report::Target& target = probe.common;
    const std::string off_device = probe_off_device_message(Device::of(target.device));
    if (std::all_of(target.configs.begin(), target.configs.end(), [&](const report::ConfigResult& c) {
          return c.verdict == report::Verdict::Skipped && c.message == off_device;
        }))
      continue;
    std::optional<CensusRun> census;  // the census ran with the probe's first configuration
    for (const auto& c : all[t].front().shard->report.shard->census)
      if (c.target == target.name) census = CensusRun{c.completed, c.alerts};
    if (options.knowledge == nullptr)
      throw InputError("merge needs the knowledge base to judge a probe split across shards");
    report::ProbeFacts& facts = probe.facts;
    facts.census.clear();
    facts.alerts.clear();
    facts.disagreements.clear();
    const KnowledgeEntry* entry = facts.knowledge_id.empty() ? nullptr : options.knowledge->find(facts.knowledge_id);
    judge_probe(probe, entry, Device::of(target.device), census);
  }
}

// The merged report's body, of the shards' kind (merge_shards checks that they share one), with
// the joined targets; probes split across shards judged again, and the census cross-tabulated again
// over every probe when the first shard has one.
report::Body joined_body(const report::Report& first, const std::vector<std::vector<Piece>>& all,
                         std::vector<report::Target> common, const MergeOptions& options) {
  return std::visit(
      report::overloaded{
          [&](const report::RunBody&) -> report::Body {
            return report::RunBody{elements<report::RunBody>(all, common)};
          },
          [&](const report::ExecBody&) -> report::Body {
            return report::ExecBody{elements<report::ExecBody>(all, common)};
          },
          [&](const report::ProbesBody& p) -> report::Body {
            report::ProbesBody joined{elements<report::ProbesBody>(all, common), std::nullopt};
            judge_split_probes(joined.targets, all, options);
            if (p.census) joined.census = cross_tabulate(joined.targets, p.census->config);
            return joined;
          },
          // merge_invariance joins these (cli/cmd_merge.cpp); a selftest is never sharded.
          [](const report::Invariance&) -> report::Body {
            throw std::logic_error("merge_shards: an invariance shard");
          },
          [](const report::SelfTest&) -> report::Body { throw std::logic_error("merge_shards: a self-test shard"); }},
      first.body);
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
  for (auto& [t, j] : joined) {
    // A shard's kept file holds what its report declares for that cell, and no more is read from it.
    for (size_t c = 0; c < j.dumps.size(); ++c)
      if (!j.dumps[c].empty()) stats->declare(j.dumps[c], j.target.configs[c].reference);
    if (j.one_machine) configuration_dependence(j.target.configs, j.dumps, stats->collect());
  }
  if (stats) stats->resolve();

  std::vector<report::Target> targets;
  for (size_t t = 0; t < all.size(); ++t) {
    const auto it = joined.find(t);
    if (it == joined.end()) {
      targets.push_back(*all[t].front().target);
      continue;
    }
    Joined& j = it->second;
    if (j.one_machine) {
      j.target.dependence = configuration_dependence(j.target.configs, j.dumps, stats->answer());
      if (j.target.referee && j.target.dependence)  // from the errors each shard kept
        classify_dependence(*j.target.dependence, j.target.configs, *j.target.referee);
      const bool traced = std::any_of(j.target.configs.begin(), j.target.configs.end(),
                                      [](const report::ConfigResult& c) { return c.trace.has_value(); });
      if (traced && j.target.dependence)
        trace::explain_dependence(*j.target.dependence, j.target.configs, j.traces, j.repeats);
    } else {
      notes.push_back(
          fmt::format("{}: its configurations ran on different machine kinds, so whether its results depend "
                      "on the configuration is not judged",
                      j.target.name));
    }
    targets.push_back(std::move(j.target));
  }
  // The shards' own allowlist decisions are not carried over: merge applies its own.
  for (auto& t : targets)
    for (auto& c : t.configs) c.allowed_by.reset();
  rep.body = joined_body(first, all, std::move(targets), options);
  for (const ShardFile* s : ordered)
    rep.wall_ms += s->report.wall_ms;  // the shards' time, as one process would spend it
  report::finalize(rep);
  return rep;
}

// The cells of `set` that did not finish on every repeat, with where they ran.
void add_failures(report::Fleet& fleet, const std::vector<const ShardFile*>& set,
                  const std::map<const ShardFile*, int>& machine_of) {
  for (const ShardFile* s : set)
    for (const auto& t : s->report.targets())
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
  for (const auto& t : r.targets())
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
  const ShardSets checked = check_shards(shards);
  const ShardFile& head = *checked.head;
  // One kind: a plan names its kind (fleet::session_plan), but a file can be edited.
  for (const auto& s : shards)
    if (s.report.body.index() != head.report.body.index())
      throw InputError(fmt::format("{} is a shard of a {} report, and {} of a {} report", s.path,
                                   report::kind_of(s.report.body).name, head.path,
                                   report::kind_of(head.report.body).name));
  const int count = checked.count;
  const auto& kinds = checked.kinds;
  const auto& machine_of = checked.machine_of;
  const auto& sets = checked.sets;
  const bool replicated = checked.replicated;

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
      for (const auto& t : merged[m].targets())
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
