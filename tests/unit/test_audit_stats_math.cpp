// SPDX-License-Identifier: Apache-2.0
#include "audit/digest/stats_math.h"

#include <doctest/doctest.h>

TEST_CASE("wilson_interval") {
  const auto [lo, hi] = ra::wilson_interval(2, 2);
  CHECK(lo == doctest::Approx(0.342).epsilon(0.01));
  CHECK(hi == doctest::Approx(1.0));
  const auto [lo0, hi0] = ra::wilson_interval(0, 10);
  CHECK(lo0 == doctest::Approx(0.0));
  CHECK(hi0 == doctest::Approx(0.278).epsilon(0.01));
  const auto none = ra::wilson_interval(0, 0);
  CHECK(none.first == 0.0);
  CHECK(none.second == 1.0);
}
