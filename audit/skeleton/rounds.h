// SPDX-License-Identifier: Apache-2.0
// The one round-runner: how every kind that repeats trials (`run`, `probes`, `exec`) runs them.
//
// A cell is what --repeats decides: a configuration of `run` and `exec`, a probe in a configuration
// of the probe suite. The first round takes every cell to its first repeats (--repeats N, or
// --repeats auto's minimum). With --repeats auto, each later round takes the cells still undecided
// about twice as far (audit/trial/analysis.h: decide_repeats, next_repeat_count), until every cell
// is decided. A kind says only how one round's jobs run, and where each cell's runs are; the order
// of the rounds, the decisions and when to stop are here.
#pragma once

#include "audit/trial/analysis.h"
#include "reports/target_model.h"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ra {

// One round's trials: (cell, repeat) pairs, repeat-major, each repeat of a cell once.
using RoundJobs = std::vector<std::pair<size_t, int>>;

struct RoundParts {
  // Runs `jobs`; afterwards cell c holds its runs 0 .. target[c] - 1, in repeat order.
  std::function<void(const RoundJobs& jobs, const std::vector<int>& target)> run;
  // Every cell's runs so far, in repeat order (read between rounds of --repeats auto only).
  std::function<const std::vector<std::vector<TrialRun>>&()> runs;
};

// Runs the rounds of `cells` cells: `repeats` each, or with `rule` (--repeats auto) until each is
// decided. Returns what decided each cell (report::ConfigResult::stopped_by), "" without `rule`.
std::vector<std::string> run_rounds(size_t cells, int repeats, const std::optional<report::AutoRepeats>& rule,
                                    const RoundParts& parts);

}  // namespace ra
