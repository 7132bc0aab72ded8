// SPDX-License-Identifier: Apache-2.0
// The one round-runner: how every kind that repeats trials (`run`, `probes`, `exec`) runs them.
//
// A cell is what --repeats decides: a configuration of `run` and `exec`, a probe in a configuration
// of the probe suite. The first round takes every cell to its first repeats (--repeats N, or
// --repeats auto's minimum). With --repeats auto, each later round takes the cells still undecided
// about twice as far (audit/trial/analysis.h: decide_repeats, next_repeat_count), until every cell
// is decided. The order of the rounds, the decisions and when to stop are here.
//
// The round-runner also owns the progress line of the rounds, as ninja's builder calls its Status
// and no edge counts itself: one line for all the rounds of a call, whose children the runner
// numbers, ticks and reports (audit/trial/runner.h: ChildProgress). Where a trial is one child
// (`run`, `exec`: TrialParts), a kind says only how the child of a repeat of a cell is made, how its
// run is collected and what the cell is called; the round's children are run here. The probe suite
// runs the probes of many cells in one child (RoundParts): it says how a round's jobs become
// children, and runs them on the line it is given.
#pragma once

#include "audit/common/progress.h"
#include "audit/trial/analysis.h"
#include "audit/trial/runner.h"
#include "reports/target_model.h"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ra {

// One round's trials: (cell, repeat) pairs, repeat-major, each repeat of a cell once.
using RoundJobs = std::vector<std::pair<size_t, int>>;

// Every cell's runs so far, in repeat order, as they are compared (read between rounds of --repeats
// auto only).
using RunsFn = std::function<const std::vector<std::vector<TrialRun>>&()>;

struct RoundParts {
  // Runs `jobs` as children on `line` (ChildProgress), after adding them to its total; afterwards
  // cell c holds its runs 0 .. target[c] - 1, in repeat order.
  std::function<void(const RoundJobs& jobs, const std::vector<int>& target, Progress& line)> run;
  RunsFn runs;
  bool progress = false;  // the line is drawn on the terminal (SessionOptions::progress), else logged
};

// Runs the rounds of `cells` cells: `repeats` each, or with `rule` (--repeats auto) until each is
// decided. Returns what decided each cell (report::ConfigResult::stopped_by), "" without `rule`.
std::vector<std::string> run_rounds(size_t cells, int repeats, const std::optional<report::AutoRepeats>& rule,
                                    const RoundParts& parts);

// A kind whose trial is one child: the child of repeat r of cell c, and where its run goes.
struct TrialParts {
  // Before a round's children start: cell `cell` is to hold `runs` runs (a number that only grows).
  std::function<void(size_t cell, int runs)> grow;
  // The child of repeat `repeat` of cell `cell`, made as it is about to start (a JobMaker: it may
  // throw, and its files may be written only now).
  std::function<ChildJob(size_t cell, int repeat)> make;
  // Files the child's outcome as that repeat's run, as the child ends.
  std::function<void(size_t cell, int repeat, const ChildOutcome& outcome)> collect;
  RunsFn runs;
  // The cell as the progress line names it: "det" in "[3/12] det repeat 1: 612 ms".
  std::function<std::string(size_t cell)> name;
  int parallel = 1;  // children at once (--jobs)
  SlotFn slot_of;    // by cell: the GPU slot of its children (audit/trial/placement.h); empty for none
  int per_slot = 1;
  bool progress = false;
};

// The same, each (cell, repeat) of a round one child, --jobs at once.
std::vector<std::string> run_rounds(size_t cells, int repeats, const std::optional<report::AutoRepeats>& rule,
                                    const TrialParts& parts);

}  // namespace ra
