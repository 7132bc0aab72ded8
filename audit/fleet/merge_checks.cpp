// SPDX-License-Identifier: Apache-2.0
#include "audit/fleet/merge_checks.h"

#include "audit/baseline/baseline.h"
#include "audit/common/errors.h"
#include "audit/fleet/shard.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace ra::fleet {
namespace {

std::string short_plan(const std::string& digest) { return digest.substr(0, 12); }

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
      foreign += fmt::format(
          "{}{} (plan {}, {} shards{})", foreign.empty() ? "" : "; ", s.path, short_plan(s.report.shard->plan),
          s.report.shard->count,
          s.report.tool_version == first->report.tool_version ? "" : ", repro-audit " + s.report.tool_version);
  if (!foreign.empty())
    throw InputError(fmt::format("not shards of plan {} ({} shards): {}", short_plan(first->report.shard->plan),
                                 first->report.shard->count, foreign));
  for (const auto& s : shards) {
    const auto& sh = *s.report.shard;
    // A plan is targets x configurations: anything else has no cells to check against.
    if (sh.configs.empty() ? sh.plan_cells != 0 : sh.plan_cells % sh.configs.size() != 0)
      throw InputError(
          fmt::format("{}: shard {}/{} names a plan of {} cells, which is no whole number of targets of {} "
                      "configurations",
                      s.path, sh.index, sh.count, sh.plan_cells, sh.configs.size()));
    const auto [first_cell, last_cell] = shard_range(sh.plan_cells, sh.index, sh.count);
    if (sh.plan_cells != first->report.shard->plan_cells || sh.configs != first->report.shard->configs ||
        sh.first_cell != first_cell || sh.last_cell != last_cell)
      throw InputError(
          fmt::format("{}: shard {}/{} does not hold the cells its plan assigns it", s.path, sh.index, sh.count));
  }
  return *first;
}

// Shards grouped by machine kind: fingerprints that agree on every key that can change results
// (audit/baseline/baseline.h), in the order first given.
std::vector<std::vector<const ShardFile*>> machine_kinds(const std::vector<ShardFile>& shards) {
  std::vector<std::vector<const ShardFile*>> kinds;
  for (const auto& s : shards) {
    size_t k = 0;
    while (k < kinds.size() &&
           !diff_environments(kinds[k].front()->report.environment, s.report.environment).changes.empty())
      ++k;
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
      throw InputError(
          fmt::format("shard {}/{} is given twice: {} and {}", s->report.shard->index, count, slot->path, s->path));
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

}  // namespace

// "2/4, 3/4"
std::string shard_list(const std::vector<int>& indices, int count) {
  std::string out;
  for (int k : indices) out += fmt::format("{}{}/{}", out.empty() ? "" : ", ", k, count);
  return out;
}

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
      if (next >= s->report.targets().size())
        throw InputError(fmt::format("{}: shard {}/{} has fewer targets than its cells", s->path, sh.index, sh.count));
      const size_t index = next++;
      const report::Target& target = s->report.targets()[index];
      bool names_match = target.configs.size() == end - cell;
      for (size_t c = cell; names_match && c < end; ++c)
        names_match = target.configs[c - cell].name == head.configs[c % configs];
      if (!names_match)
        throw InputError(fmt::format("{}: target '{}' does not hold the configurations of its cells {}-{}", s->path,
                                     target.name, cell, end - 1));
      if (!out[t].empty() &&
          (out[t].front().target->name != target.name || out[t].front().target->model_digest != target.model_digest))
        throw InputError(fmt::format("{}: target {} is '{}' here but '{}' in {}", s->path, t + 1, target.name,
                                     out[t].front().target->name, out[t].front().shard->path));
      out[t].push_back({s, &target, index, cell % configs});
      cell = end;
    }
    if (next != s->report.targets().size())
      throw InputError(fmt::format("{}: shard {}/{} has more targets than its cells", s->path, sh.index, sh.count));
  }
  return out;
}

ShardSets check_shards(const std::vector<ShardFile>& shards) {
  ShardSets out;
  const ShardFile& head = check_plan(shards);
  const int count = head.report.shard->count;
  out.head = &head;
  out.count = count;
  const auto kinds = machine_kinds(shards);
  std::map<const ShardFile*, int>& machine_of = out.machine_of;
  std::vector<std::vector<const ShardFile*>> indexed;
  for (size_t k = 0; k < kinds.size(); ++k) {
    for (const ShardFile* s : kinds[k]) machine_of[s] = static_cast<int>(k + 1);
    indexed.push_back(by_index(kinds[k], count));
  }
  // One machine kind: every K once. Several: each ran the whole plan (compared cell by cell), or
  // together they ran it once (a mixed fleet).
  std::vector<std::vector<const ShardFile*>>& sets = out.sets;
  bool& replicated = out.replicated;
  const bool each_whole =
      std::all_of(indexed.begin(), indexed.end(), [](const auto& x) { return missing_of(x).empty(); });
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
      throw InputError(
          fmt::format("the shards come from {} machine kinds that neither each ran the whole plan nor "
                      "together ran it once: {}",
                      kinds.size(), have));
    }
    if (const auto missing = missing_of(once); !missing.empty())
      throw InputError(fmt::format("{} {} of plan {} {} missing ({} of {} given)",
                                   missing.size() == 1 ? "shard" : "shards", shard_list(missing, count),
                                   short_plan(head.report.shard->plan), missing.size() == 1 ? "is" : "are",
                                   count - static_cast<int>(missing.size()), count));
    sets.push_back(once);
  }
  out.kinds = kinds;
  // Each shard's targets are its cells; an invariance shard has none: its sweep's cells are its
  // invariance section's (audit/invariance/invariance_shard.h checks them).
  for (const auto& set : sets)
    if (!std::holds_alternative<report::Invariance>(set.front()->report.body)) (void)pieces(set);
  return out;
}

}  // namespace ra::fleet
