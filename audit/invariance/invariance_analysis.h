// SPDX-License-Identifier: Apache-2.0
// What a sweep's cells mean (torch-free, unit-tested with hand-made cells):
//   * classes: batch sizes whose anchor rows got identical bits at the start placement, for every
//     anchor and output; size 1 (the reference) is in the first;
//   * position dependence: a size at which the middle, end or permuted placement gave a row other
//     bits than the start placement of the same size (apart from size dependence);
//   * warm-up dependence: a size whose second call of the same batch differed from its first;
//   * the verdict (invariant only with one class and neither dependence) and the advice that follows.
#pragma once

#include "reports/model.h"

#include <string>
#include <vector>

namespace ra::invariance {

// Fills classes, position_dependent, warmup_dependent, verdict and advice of `c` from its cells
// (a crashed or nondeterministic configuration is left as it is).
void analyse(report::InvarianceConfig& c);

// A configuration whose anchors alone changed from call to call (`why`, the worker's sentence):
// verdict "nondeterministic", no classes, and the advice to remove the randomness, never padding
// (issue 39: a model drawing random numbers every call was told "pad every batch to {16}").
void nondeterministic(report::InvarianceConfig& c, const std::string& why);

// Across configurations: each variant configuration learns which other configurations were
// invariant (an advice line naming them), since their switches are then a fix; where several were
// tried and none is, that padding or bucketing is the fix.
void compare_configs(std::vector<report::InvarianceConfig>& configs);

// When no switch fixes `c`: the class of sizes to pad every batch to (the widest batched one), and
// the bucketing alternative when there are more than two classes; "" with a single class. For the
// verify axis: the block lengths that gave the decode step's bits ("" when none did).
std::string padding_advice(const report::InvarianceConfig& c);

}  // namespace ra::invariance
