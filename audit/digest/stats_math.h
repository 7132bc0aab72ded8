// SPDX-License-Identifier: Apache-2.0
// Small statistics used by verdicts.
#pragma once

#include <utility>

namespace ra {

// Wilson score interval (95%) for k successes in n Bernoulli trials; (0, 1) when n == 0.
std::pair<double, double> wilson_interval(int k, int n);

}  // namespace ra
