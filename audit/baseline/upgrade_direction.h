// SPDX-License-Identifier: Apache-2.0
// An upgrade's direction (issue 53): "torch 2.15 changed 12 tensors" does not say whether the new
// bits are better or worse. A comparison with a baseline (audit/baseline/baseline.h) classes each
// tensor whose bits changed as a difference between the baseline's result and the current one, with
// the referee's classes (audit/trial/referee.h): both results carry their error against the float64
// referee, kept per tensor by each side's reference repeat (ConfigResult::referee; a baseline file
// keeps it too, reports/baseline_file.h). Reordering: both within one order of float64, neither more
// right; beyond reordering: one lies much further from float64, and which one says whether the new
// release moved the tensor away from float64 or toward it.
//
// The model's own state as loaded (param/, buffer/: what it was given, not what it computed, and not
// measured against float64) is left out: other weights change it by design.
// No class is claimed where a side has no errors (a baseline saved before the referee or with
// --referee off, a referee that did not run): one line says so. A tensor on one side only, or whose
// dtype or shape changed, is unclassified with that reason. The referee's conditioning run (which
// calls a gap in an ill-conditioned result reordering after all) is not kept in a baseline, and
// `compare` has no model to run it again, so a change across releases is weighed by its ULP alone.
// The cost: a lookup per changed tensor; no process, no file.
#pragma once

#include "reports/baseline_model.h"
#include "reports/target_model.h"

#include <vector>

namespace ra {

// The direction of the changed tensors `changed` (every differing tensor of one configuration, not
// only those a result lists) from the baseline's target `bt` and configuration `b` to the current
// `ct` and `c`, the sides named `names`; each tensor of `changed` gets its class (BaselineTensor::referee)
// where one is claimed. Empty (nothing classed, no note) when nothing the model computed changed.
report::BaselineDirection upgrade_direction(const report::Target& bt, const report::ConfigResult& b,
                                            const report::Target& ct, const report::ConfigResult& c,
                                            const report::SideNames& names,
                                            std::vector<report::BaselineTensor>& changed);

}  // namespace ra
