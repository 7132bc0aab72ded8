// SPDX-License-Identifier: Apache-2.0
#include "worker/digest/digest.h"
#include "worker/digest/tensor_stats.h"
#include "worker/runtime/child_support.h"
#include "worker/tensor_io/kept_read.h"
#include "worker/tensor_io/python_pickle.h"

#include <ATen/ATen.h>
#include <doctest/doctest.h>

#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

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

TEST_CASE("tensor_difference: adjacent floats are one ULP apart; across zero is counted, not measured") {
  const float x = 1.0f;
  const at::Tensor a = at::full({1}, x), b = at::full({1}, std::nextafter(x, 2.0f));
  const auto one = ra::tensor_difference(a, b);
  CHECK(one.max_ulp == 1);
  CHECK(one.sign_differs == 0);
  CHECK(one.max_rel_diff == doctest::Approx(std::ldexp(1.0, -23) / (1 + std::ldexp(1.0, -23))));
  // Two denormals of opposite sign, and a last-bit-sized value against its negation: the floats
  // between them are all the denormals and tiny normals, so a count would be billions.
  const at::Tensor tiny = at::full({1}, std::numeric_limits<float>::denorm_min());
  const auto denormals = ra::tensor_difference(tiny, -tiny);
  CHECK(denormals.sign_differs == 1);
  CHECK(std::isnan(denormals.max_ulp));
  CHECK(denormals.max_rel_diff == 2);
  const auto crossing =
      ra::tensor_difference(at::tensor({1.58e-8f, 1.0f}), at::tensor({-1.58e-8f, std::nextafter(1.0f, 0.0f)}));
  CHECK(crossing.differing == 2);
  CHECK(crossing.sign_differs == 1);
  CHECK(crossing.max_ulp == 1);  // the element on one side of zero only
  CHECK(crossing.max_abs_diff == doctest::Approx(3.16e-8));
  // Zero against a value, and the two zeros: at zero, so counted in sign_differs.
  const auto zero = ra::tensor_difference(at::full({1}, 0.0f), at::full({1}, 1e-30f));
  CHECK(zero.sign_differs == 1);
  CHECK(std::isnan(zero.max_ulp));
  CHECK(zero.max_rel_diff == 1);
  const auto zeros = ra::tensor_difference(at::full({1}, 0.0f), at::full({1}, -0.0f));
  CHECK(zeros.differing == 1);
  CHECK(zeros.sign_differs == 1);
  CHECK(zeros.max_abs_diff == 0);
  CHECK(zeros.max_rel_diff == 0);
  CHECK(zeros.beyond_tolerance == 0);  // +0 and -0 are equal within any tolerance
  // Denormals on one side of zero are counted in representable steps as usual.
  const float d = std::numeric_limits<float>::denorm_min();
  CHECK(ra::tensor_difference(at::full({1}, d), at::full({1}, 5 * d)).max_ulp == 4);
  // Doubles: the same rules at 64 bits.
  const auto dbl =
      ra::tensor_difference(at::full({1}, -2.0, at::kDouble), at::full({1}, std::nextafter(-2.0, -3.0), at::kDouble));
  CHECK(dbl.max_ulp == 1);
  CHECK(dbl.sign_differs == 0);
}

TEST_CASE("tensor_difference: infinities and NaN payloads are beyond any tolerance and never measured") {
  const float inf = std::numeric_limits<float>::infinity();
  const auto infs = ra::tensor_difference(at::tensor({inf, 1.0f}), at::tensor({-inf, 1.0f}));
  CHECK(infs.differing == 1);
  CHECK(infs.beyond_tolerance == 1);
  CHECK(std::isnan(infs.max_abs_diff));
  CHECK(std::isnan(infs.max_ulp));
  CHECK(infs.sign_differs == 0);
  const auto big = ra::tensor_difference(at::tensor({inf}), at::tensor({std::numeric_limits<float>::max()}));
  CHECK(big.beyond_tolerance == 1);
  CHECK(std::isnan(big.max_abs_diff));
  // Two NaNs with different payloads: bits differ, both NaN.
  uint32_t quiet = 0x7fc00000, payload = 0x7fc00001;
  float qa = 0, qb = 0;
  std::memcpy(&qa, &quiet, 4);
  std::memcpy(&qb, &payload, 4);
  const auto nans = ra::tensor_difference(at::tensor({qa, 2.0f}), at::tensor({qb, 2.0f}));
  CHECK(nans.differing == 1);
  CHECK(nans.nan_mismatches == 1);
  CHECK(nans.beyond_tolerance == 1);
  CHECK_FALSE(ra::report::within_tolerance(nans));
}

TEST_CASE("tensor_difference: the tolerance count follows |a - b| <= atol + rtol * |a|, defaults by dtype") {
  const at::Tensor a = at::tensor({100.0f, 1.0f, 0.0f, -3.0f});
  const at::Tensor b = at::tensor({100.001f, 1.5f, 1e-9f, -3.0f});
  const auto defaults = ra::tensor_difference(a, b);  // float32: rtol 1.3e-6, atol 1e-5
  CHECK(defaults.tolerance == ra::report::Tolerance{1e-5, 1.3e-6});
  CHECK(defaults.differing == 3);
  CHECK(defaults.beyond_tolerance == 2);  // 1e-3 > 1e-5 + 1.3e-4, and 0.5; 1e-9 is within atol
  CHECK_FALSE(ra::report::within_tolerance(defaults));
  const auto loose = ra::tensor_difference(a, b, ra::report::Tolerance{0, 0.5});
  CHECK(loose.beyond_tolerance == 1);  // 1e-9 against 0: rtol alone allows nothing at zero
  const auto looser = ra::tensor_difference(a, b, ra::report::Tolerance{1e-6, 0.5});
  CHECK(looser.beyond_tolerance == 0);
  CHECK(ra::report::within_tolerance(looser));
  CHECK(looser.max_rel_diff == doctest::Approx(1.0));  // 1e-9 against 0
  // Integers: bitwise by default (nothing within), any distance within atol when given.
  const auto ints = ra::tensor_difference(at::arange(5), at::arange(5) * 2);
  CHECK(ints.tolerance == ra::report::Tolerance{});
  CHECK(ints.beyond_tolerance == 4);
  CHECK(ra::tensor_difference(at::arange(5), at::arange(5) * 2, ra::report::Tolerance{4, 0}).beyond_tolerance == 0);
  CHECK(ra::report::default_tolerance("bfloat16") == ra::report::Tolerance{1e-5, 1.6e-2});
  CHECK(ra::report::default_tolerance("int64") == ra::report::Tolerance{});
  // A complex element counts once when either part differs.
  const at::Tensor c = at::complex(at::tensor({1.0f, 2.0f}), at::tensor({0.0f, 1.0f}));
  const at::Tensor c2 = at::complex(at::tensor({1.5f, 2.0f}), at::tensor({0.5f, 1.0f}));
  const auto cs = ra::tensor_difference(c, c2);
  CHECK(cs.differing == 1);
  CHECK(cs.beyond_tolerance == 1);
  CHECK(cs.sign_differs == 1);  // the imaginary part left zero
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
  const auto m = ra::dump_differences({"/nonexistent/a.pt", {}}, {"/nonexistent/b.pt", {}}, {"output"});
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
  rec.add("new", changed);           // not in the reference: kept
  CHECK(rec.tensors().size() == 3);  // every digest is recorded either way
  CHECK(rec.write_dump(dir + "/d.pt").empty());
  ra::Recorder full(true);
  full.add("same", same);
  full.add("changed", at::zeros({4}));
  full.add("new", at::zeros({4}));
  CHECK(full.write_dump(dir + "/full.pt").empty());
  const auto stats = ra::dump_differences({dir + "/full.pt", {}}, {dir + "/d.pt", {}}, {"same", "changed", "new"});
  CHECK(stats.at("same").note == "tensor missing from one run");
  CHECK(stats.at("changed").note.empty());
  CHECK(stats.at("changed").differing == 4);
  CHECK(stats.at("new").differing == 4);
  // A dump, or a kept file, that is a symlink is not read through (issue 51): its note names it, and
  // blames the trial only for a trial's dump.
  REQUIRE(::symlink((dir + "/full.pt").c_str(), (dir + "/link.pt").c_str()) == 0);
  const std::vector<ra::report::TensorDigest> declared = {{"changed", "float32", {4}, ""}};
  CHECK(ra::dump_differences({dir + "/link.pt", declared}, {dir + "/d.pt", {}}, {"changed"}).at("changed").note ==
        "kept tensors unreadable: file '" + dir + "/link.pt' is a symlink, not followed");
  CHECK(ra::dump_differences({dir + "/link.pt", {}}, {dir + "/d.pt", {}}, {"changed"}).at("changed").note ==
        "tensor values not available (trial dump unreadable: file '" + dir + "/link.pt' is a symlink, not followed)");
  // A kept file's tensor must be what its baseline declares.
  const std::vector<ra::report::TensorDigest> reshaped = {
      {"same", "float32", {1000}, ""}, {"changed", "float32", {2, 2}, ""}, {"new", "float32", {4}, ""}};
  CHECK(ra::dump_differences({dir + "/full.pt", reshaped}, {dir + "/d.pt", {}}, {"changed"}).at("changed").note ==
        "kept tensors unreadable: file '" + dir +
            "/full.pt' holds 'changed' as float32[4], not the float32[2x2] "
            "declared for it");
  std::remove((dir + "/link.pt").c_str());
  // A dump that cannot be written is reported, not thrown, and leaves no file.
  CHECK(rec.write_dump(dir + "/no-such-folder/d.pt") == "No such file or directory");
  CHECK_FALSE(std::filesystem::exists(dir + "/no-such-folder/d.pt"));
  // (Not std::filesystem::remove_all: libtorch.so exports a copy of it that crashes when called here.)
  std::remove((dir + "/d.pt").c_str());
  std::remove((dir + "/full.pt").c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("Recorder: a kept tensor holds its value when added, not the live tensor's later values") {
  const std::string dir = std::filesystem::temp_directory_path() / ("ra-recorder-live-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  // A parameter, recorded, then changed in place by an optimizer step, and recorded again (issue 51:
  // on the CPU the dump held the last value under both names).
  at::Tensor live = at::zeros({4});
  const at::Tensor view = at::zeros({2, 4}).t();  // not contiguous
  ra::Recorder rec(true);
  rec.add("step1/param/w", live);
  rec.add("step1/param/v", view);
  live.add_(1);
  view.add_(2);
  rec.add("step2/param/w", live);
  REQUIRE(rec.write_dump(dir + "/d.pt").empty());
  const c10::IValue kept = ra::load_python_pickle_file(dir + "/d.pt");
  const auto d = kept.toGenericDict();
  CHECK(at::equal(d.at("step1/param/w").toTensor(), at::zeros({4})));
  CHECK(at::equal(d.at("step2/param/w").toTensor(), at::ones({4})));
  CHECK(at::equal(d.at("step1/param/v").toTensor(), at::zeros({4, 2})));
  // Dtypes beyond torch.save's classic storages, as pickle_save names them, read back by the checked reader.
  ra::Recorder exotic(true);
  for (const auto type : {at::kUInt16, at::kFloat8_e4m3fn, at::kComplexHalf})
    exotic.add(ra::dtype_name(type), at::ones({3}, type));
  REQUIRE(exotic.write_dump(dir + "/d.pt").empty());
  const auto e = ra::load_python_pickle_file(dir + "/d.pt").toGenericDict();
  for (const auto type : {at::kUInt16, at::kFloat8_e4m3fn, at::kComplexHalf}) {
    CAPTURE(ra::dtype_name(type));
    CHECK(ra::dtype_name(e.at(ra::dtype_name(type)).toTensor().scalar_type()) == ra::dtype_name(type));
    CHECK(ra::digest(e.at(ra::dtype_name(type)).toTensor()) == ra::digest(at::ones({3}, type)));
  }
  std::remove((dir + "/d.pt").c_str());
  ::rmdir(dir.c_str());
}
