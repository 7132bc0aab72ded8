// SPDX-License-Identifier: Apache-2.0
// What fixes a batch-variance finding: `invariance`'s fix search.
//
// The problem. A variant configuration tells the user that a row's bits depend on its batch, not
// what to do about it. A switch that changes which kernel a batch size gets (intra-op threads,
// MKL's reproducibility branch, cuBLAS's workspace, TF32, cuBLAS's reduced-precision reductions,
// deterministic algorithms) may restore invariance on one machine and not on another, at a cost
// no documentation gives.
//
// The approach, as `run --trace` searches (audit/trace/fix_search.h). From the first configuration,
// when it is variant, each candidate switch is toggled alone toward its deterministic setting,
// where it can matter on the device and where its effective value differs; the others are listed,
// not run ("no effect on cpu", "already 1 in default"). Only the sizes needed are swept again:
// batch 1 (the reference) and the smallest size of each other class (with a single class, the
// position- or warm-up-dependent sizes), every placement; on the verify axis every block length. A
// candidate fixes it when those sizes then give one class and neither dependence, and the
// configuration itself gives more than one there: the first sweep says so when it swept exactly
// those sizes; otherwise the configuration is swept again, once, after the first candidate that
// came out invariant (the variance must come back on those sizes alone). On the verify axis, whose
// calls are made anchor by anchor, each candidate is screened first on the anchors up to the first
// one whose bits moved in the first sweep (usually anchor 0 alone): where the variance is still there
// it fixes nothing, and that sweep stands (its classes are those anchors'); only a candidate the
// screen finds invariant is swept again with every anchor, which decides. (A batch holds every
// anchor at once: fewer anchors save almost no calls there, so it has no screen.) When none fixes it alone
// and two or more ran, all of them together are tried. Only a candidate that fixes it is priced
// (issue 54: the search priced candidates of which none fixed anything, 188 of 203 s): its forward
// passes (per call, timed in the worker around the model's calls only) against the configuration's
// in report::kTimingRounds rounds, the configuration and every fix swept again in turn, each round's
// ratio pairing two sweeps made one after the other (the first round: the candidate's own sweep and
// the rerun, or the first sweep). The cost is the median ratio with its spread, or "not measurable
// on this machine now" when the spread straddles 1.0 or the rounds disagree by more than 2x
// (core_model.h's cost_measurable). When no switch fixes it, the answer is padding or bucketing to
// one class, named (invariance_analysis.h's padding_advice).
//
// The cost. One worker per candidate that runs (plus the combination), one at a time so that their
// timings do not share the CPU (on the verify axis most of them on a few anchors, a sweep of every
// anchor only for a candidate that may fix it); a rerun only to credit a fix; pricing rounds only for fixes. The
// whole search makes at most kFixCallBudget times the first sweep's model calls: a sweep that would
// pass it is not started (a candidate "not run" says so, a fix's cost has fewer rounds). Counted in
// calls, which a sweep of given sizes makes the same on every machine, so what the search runs is
// the same from one audit to the next (the report is deterministic; the clock decides nothing).
#pragma once

#include "audit/common/device.h"
#include "audit/trial/config.h"
#include "reports/model.h"

#include <functional>
#include <string>
#include <vector>

namespace ra::invariance {

// The sizes to sweep again for a variant configuration, ascending (empty when it is not variant):
// batch 1 and one size of each other class, or every block length of a verify sweep.
std::vector<int64_t> fix_sizes(const report::InvarianceConfig& c);

// The candidates, in switch-table order: stage "single" with the toggle to run, or "skipped" with
// the reason (verdict "not run").
std::vector<report::InvarianceFixCandidate> fix_candidates(const report::InvarianceConfig& from, const Device& device);

// The search's bound: its sweeps make at most this many times the first sweep's model calls.
inline constexpr int64_t kFixCallBudget = 3;

// One worker of a fix-search sweep: its configuration, and what the progress line says while it
// runs ("fix search: candidate threads=1", "fix search: timing round 3 of 5, candidate threads=1").
struct SweepStep {
  Config config;
  std::string label;
};

// The seam that runs workers: one sweep per step over `sizes`, analysed, in order (a worker that
// failed gives verdict "crashed" and its message); each result's timing.calls counts its model calls.
// `anchors` is how many anchor rows (the input's first ones) each worker compares: 0 for all of
// them, as the audit's own sweep.
using SweepFn = std::function<std::vector<report::InvarianceConfig>(const std::vector<SweepStep>&,
                                                                    const std::vector<int64_t>& sizes, int anchors)>;

// The search from `from` (run under `from_config`; its timing.calls is the first sweep's); see above.
report::InvarianceFix search_invariance_fix(const report::InvarianceConfig& from, const Config& from_config,
                                            const Device& device, const SweepFn& sweep);

}  // namespace ra::invariance
