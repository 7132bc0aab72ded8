// SPDX-License-Identifier: Apache-2.0
#include "audit/skeleton/rounds.h"

namespace ra {

std::vector<std::string> run_rounds(size_t cells, int repeats, const std::optional<report::AutoRepeats>& rule,
                                    const RoundParts& parts) {
  std::vector<int> target(cells, rule ? rule->min : repeats);
  std::vector<size_t> have(cells, 0);
  std::vector<std::string> stopped_by(cells);
  for (bool more = true; more;) {
    parts.run(round_jobs(have, target), target);
    if (!rule) break;
    have.assign(target.begin(), target.end());
    more = plan_next_round(parts.runs(), *rule, target, stopped_by);
  }
  return stopped_by;
}

}  // namespace ra
