// SPDX-License-Identifier: Apache-2.0
// The float64 referee in `invariance` (issue 53): are the classes of sizes equally right?
//
// The problem. Batch variance says a row gets other bits in a batch of 4 than alone, not whether
// either is wrong: 2 ULP of reordering, with both as close to the exact result as each other, or a
// kernel that computes a batch worse (TF32, a reduced-precision reduction, a mask ignored).
//
// The approach. As `run` does (audit/trial/referee.h), one float64 child per audit: a worker in the
// referee's configuration (deterministic, one thread on the CPU) that loads the model in float64 and
// calls each anchor row alone (InvarianceRequest::referee), the reference of the sweep itself in a
// better precision. (Not the whole --input in one call, as run's referee does: a model whose rows share
// something, a batch mean, would then have no class near that reference, and every class would look
// equally wrong, which reads as reordering.) Each configuration's worker (worker/invariance/batch_sweep.h) measures
// every distinct start slice of an anchor against the referee's row at the same place (RowError);
// here each class gets the errors of its smallest size's rows (per output, the furthest anchor),
// and each class other than the reference one the class of its difference from it
// (classify_difference: reordering, beyond-reordering, unclassified with the reason). The padding
// advice names the class closest to float64 when they differ in accuracy, and a fix candidate that
// makes the rows invariant but moves them beyond the classes' bound from float64 is a downgrade.
//
// The cost. One float64 call per anchor row; in each worker one comparison per distinct anchor slice
// (about anchors x outputs x classes), on the CPU.
#pragma once

#include "audit/invariance/invariance_protocol.h"
#include "reports/model.h"

#include <string>
#include <vector>

namespace ra::invariance {

// Fills each class's errors of `c` from the worker's `errors`, the class of each class's difference
// from the reference class, and c.referee (the summary); with more than one class, an advice line
// saying which class is closest to float64 or that they are equally close. Without a referee that
// ran, the differences are unclassified with its note.
void attach_class_errors(report::InvarianceConfig& c, const std::vector<RowError>& errors,
                         const report::Referee& referee);

// "of the classes, {4…9} is closest to float64 (2 ULP, where {1} is 310): ..." when the classes of `c`
// differ in accuracy (one class's error beyond the classes' bound of another's); "" otherwise.
std::string closest_class_text(const report::InvarianceConfig& c);

// An invariant fix candidate's error against float64 beside the configuration's `from` (per output, the
// furthest of the classes), in `c.accuracy`, and `c.downgrade` when some output lies beyond
// max(kFloorUlp, kFactor x from's error) from float64. Nothing without figures on both sides.
void weigh_candidate(report::InvarianceFixCandidate& c, const report::InvarianceConfig& from);

}  // namespace ra::invariance
