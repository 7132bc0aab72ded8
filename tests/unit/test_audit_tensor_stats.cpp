// SPDX-License-Identifier: Apache-2.0
#include "audit/digest/tensor_stats.h"
#include "audit/digest/digest.h"
#include "audit/runtime/child_support.h"

#include <ATen/ATen.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <unistd.h>

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

TEST_CASE("Recorder: given the reference's digests it keeps and dumps only the tensors that differ") {
  const std::string dir = std::filesystem::temp_directory_path() / ("ra-recorder-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const at::Tensor same = at::arange(1000, at::kFloat), changed = at::ones({4});
  ra::Recorder rec(true, {{"same", ra::digest(same)}, {"changed", ra::digest(at::zeros({4}))}});
  rec.add("same", same);
  rec.add("changed", changed);
  rec.add("new", changed);  // not in the reference: kept
  CHECK(rec.tensors().size() == 3);  // every digest is recorded either way
  CHECK(rec.write_dump(dir + "/d.pt").empty());
  ra::Recorder full(true);
  full.add("same", same);
  full.add("changed", at::zeros({4}));
  full.add("new", at::zeros({4}));
  CHECK(full.write_dump(dir + "/full.pt").empty());
  const auto stats = ra::dump_differences(dir + "/full.pt", dir + "/d.pt", {"same", "changed", "new"});
  CHECK(stats.at("same").note == "tensor missing from one run");
  CHECK(stats.at("changed").note.empty());
  CHECK(stats.at("changed").differing == 4);
  CHECK(stats.at("new").differing == 4);
  // A dump that cannot be written is reported, not thrown, and leaves no file.
  CHECK(rec.write_dump(dir + "/no-such-folder/d.pt") == "No such file or directory");
  CHECK_FALSE(std::filesystem::exists(dir + "/no-such-folder/d.pt"));
  // (Not std::filesystem::remove_all: libtorch.so exports a copy of it that crashes when called here.)
  std::remove((dir + "/d.pt").c_str());
  std::remove((dir + "/full.pt").c_str());
  ::rmdir(dir.c_str());
}
