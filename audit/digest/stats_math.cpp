// SPDX-License-Identifier: Apache-2.0
#include "audit/digest/stats_math.h"

#include <algorithm>
#include <cmath>

namespace ra {

std::pair<double, double> wilson_interval(int k, int n) {
  if (n <= 0) return {0.0, 1.0};
  constexpr double z = 1.959963984540054;
  const double p = static_cast<double>(k) / n, z2 = z * z;
  const double denom = 1 + z2 / n;
  const double centre = (p + z2 / (2.0 * n)) / denom;
  const double half = z * std::sqrt(p * (1 - p) / n + z2 / (4.0 * n * n)) / denom;
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

}  // namespace ra
