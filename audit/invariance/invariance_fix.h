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
// position- or warm-up-dependent sizes), every placement. A candidate fixes it when those sizes
// then give one class and neither dependence. When none does alone and two or more ran, all of
// them together are tried. The configuration itself is swept again first in the same sitting, and
// each candidate's forward passes (per call, timed in the worker around the model's calls only)
// are priced against it in report::kTimingRounds rounds: the configuration and every candidate
// that ran are swept again in turn, and each round's ratio pairs two sweeps made one after the
// other. The cost is the median ratio with its spread, or "not measurable on this machine now"
// when the spread straddles 1.0 or the rounds disagree by more than 2x (core_model.h's
// cost_measurable). When no switch fixes it, the answer is padding or bucketing to one class,
// named (invariance_analysis.h's padding_advice).
//
// The cost. One worker for the rerun and one per candidate that runs (plus the combination and
// its rerun), one at a time so that their timings do not share the CPU, each on few sizes; then
// kTimingRounds - 1 more of each that ran, for the prices.
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

// The seam that runs workers: one sweep per configuration over `sizes`, analysed, in order (a
// worker that failed gives verdict "crashed" and its message).
using SweepFn =
    std::function<std::vector<report::InvarianceConfig>(const std::vector<Config>&, const std::vector<int64_t>& sizes)>;

// The search from `from` (run under `from_config`); see above.
report::InvarianceFix search_invariance_fix(const report::InvarianceConfig& from, const Config& from_config,
                                            const Device& device, const SweepFn& sweep);

}  // namespace ra::invariance
