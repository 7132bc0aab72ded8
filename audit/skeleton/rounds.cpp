// SPDX-License-Identifier: Apache-2.0
#include "audit/skeleton/rounds.h"

#include <fmt/format.h>

namespace ra {

std::vector<std::string> run_rounds(size_t cells, int repeats, const std::optional<report::AutoRepeats>& rule,
                                    const RoundParts& parts) {
  Progress line(0, parts.progress);  // one line for every round: "run 2/6" counts on
  std::vector<int> target(cells, rule ? rule->min : repeats);
  std::vector<size_t> have(cells, 0);
  std::vector<std::string> stopped_by(cells);
  for (bool more = true; more;) {
    parts.run(round_jobs(have, target), target, line);
    if (!rule) break;
    have.assign(target.begin(), target.end());
    more = plan_next_round(parts.runs(), *rule, target, stopped_by);
  }
  return stopped_by;
}

std::vector<std::string> run_rounds(size_t cells, int repeats, const std::optional<report::AutoRepeats>& rule,
                                    const TrialParts& parts) {
  const auto round = [&parts](const RoundJobs& jobs, const std::vector<int>& target, Progress& line) {
    for (size_t c = 0; c < target.size(); ++c) parts.grow(c, target[c]);
    if (jobs.empty()) return;
    line.add(jobs.size());
    const auto name = [&](size_t i) { return parts.name(jobs[i].first); };
    const ChildProgress progress{line, name, [&](size_t i, const ChildOutcome& outcome) {
                                   return fmt::format("{} repeat {}: {:.0f} ms", name(i), jobs[i].second,
                                                      outcome.wall_ms);
                                 }};
    const auto make = [&](size_t i) { return parts.make(jobs[i].first, jobs[i].second); };
    const auto collect = [&](size_t i, const ChildOutcome& outcome) {
      parts.collect(jobs[i].first, jobs[i].second, outcome);
    };
    SlotFn slot_of;
    if (parts.slot_of) slot_of = [&](size_t i) { return parts.slot_of(jobs[i].first); };
    run_children(jobs.size(), make, parts.parallel, progress, collect, slot_of, parts.per_slot);
  };
  return run_rounds(cells, repeats, rule, RoundParts{round, parts.runs, parts.progress});
}

}  // namespace ra
