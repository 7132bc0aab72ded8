// SPDX-License-Identifier: Apache-2.0
#include "audit/digest/tensor_stats.h"

#include <ATen/ATen.h>
#include <doctest/doctest.h>

#include <cmath>

TEST_CASE("tensor_difference: count, first index, max abs and ULP") {
  const at::Tensor a = at::zeros({3, 4});
  at::Tensor b = a.clone();
  b[1][2] = 0.5f;
  b[2][3] = -0.25f;
  const auto s = ra::tensor_difference(a, b);
  CHECK(s.numel == 12);
  CHECK(s.differing == 2);
  CHECK(s.first_index == 6);
  CHECK(s.first_index_nd == std::vector<int64_t>{1, 2});
  CHECK(s.max_abs_diff == doctest::Approx(0.5));
  CHECK(s.nan_mismatches == 0);
}

TEST_CASE("tensor_difference: adjacent floats are one ULP apart, across zero too") {
  const float x = 1.0f;
  const at::Tensor a = at::full({1}, x), b = at::full({1}, std::nextafter(x, 2.0f));
  CHECK(ra::tensor_difference(a, b).max_ulp == 1);
  const at::Tensor tiny = at::full({1}, std::numeric_limits<float>::denorm_min());
  CHECK(ra::tensor_difference(tiny, -tiny).max_ulp == 2);
  const auto zeros = ra::tensor_difference(at::full({1}, 0.0f), at::full({1}, -0.0f));
  CHECK(zeros.differing == 1);
  CHECK(zeros.max_ulp == 0);
}

TEST_CASE("tensor_difference: NaN mismatches, integers, identical, shape mismatch") {
  at::Tensor a = at::ones({4}), b = a.clone();
  b[0] = std::nanf("");
  const auto s = ra::tensor_difference(a, b);
  CHECK(s.differing == 1);
  CHECK(s.nan_mismatches == 1);
  CHECK(std::isnan(s.max_abs_diff));

  const auto ints = ra::tensor_difference(at::arange(5), at::arange(5) * 2);
  CHECK(ints.differing == 4);
  CHECK(ints.max_abs_diff == 4);
  CHECK(ints.max_ulp == 4);

  CHECK(ra::tensor_difference(a, a.clone()).differing == 0);
  CHECK(ra::tensor_difference(at::ones({2, 3}), at::ones({3, 2})).note == "shape differs: 2x3 vs 3x2");
  CHECK(!ra::tensor_difference(at::ones({2}), at::ones({2}, at::kDouble)).note.empty());
}

TEST_CASE("dump_differences: missing dumps give notes, not exceptions") {
  const auto m = ra::dump_differences("/nonexistent/a.pt", "/nonexistent/b.pt", {"output"});
  REQUIRE(m.count("output") == 1);
  CHECK(m.at("output").note.find("not available") != std::string::npos);
}

TEST_CASE("tensor_difference: expanded views and large tensors are compared piece by piece, as their copies") {
  // More than one piece (2^20 elements): the first difference sits in the third piece.
  at::Tensor a = at::zeros({3 << 20}, at::kFloat), b = a.clone();
  b[(2 << 20) + 5] = 1.5f;
  b[(3 << 20) - 1] = -4.0f;
  const auto s = ra::tensor_difference(a, b);
  CHECK(s.differing == 2);
  CHECK(s.first_index == (2 << 20) + 5);
  CHECK(s.max_abs_diff == 4.0);
  // An expanded view against a contiguous tensor: the same statistics as between copies.
  const at::Tensor row = at::arange(3, at::kDouble);
  const at::Tensor view = row.expand({2000, 3});
  at::Tensor other = view.contiguous();
  other[1999][2] = 2.5;
  const auto v = ra::tensor_difference(view, other);
  const auto c = ra::tensor_difference(view.contiguous(), other);
  CHECK(v.differing == 1);
  CHECK(v.first_index == c.first_index);
  CHECK(v.first_index_nd == std::vector<int64_t>{1999, 2});
  CHECK(v.max_abs_diff == c.max_abs_diff);
  CHECK(v.max_ulp == c.max_ulp);
}
