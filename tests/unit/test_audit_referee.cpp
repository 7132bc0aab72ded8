// SPDX-License-Identifier: Apache-2.0
// The classes of a difference from the float64 referee's figures (audit/trial/referee.h): the ULP
// test, and the conditioning run that keeps an ill-conditioned reordering from being called a bug.
#include "audit/trial/referee.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

namespace {

using ra::report::DifferenceClass;
using ra::report::ReferenceError;

ReferenceError error(double ulp, double abs) {
  ReferenceError e;
  e.name = "output";
  e.dtype = "float32";
  e.numel = 1;
  e.max_ulp = ulp;
  e.max_abs = abs;
  e.max_rel = abs;
  return e;
}

ra::report::TensorFinding finding() {
  ra::report::TensorFinding f;
  f.name = "output";
  f.dtype = "float32";
  f.shape = {};
  return f;
}

const ra::report::Referee ran{"cpu", "cpu", true, ""};

// A configuration dependence of one scalar tensor between configurations a and b.
std::optional<ra::report::ConfigDependence> dependence(const ReferenceError& a, const ReferenceError& b) {
  ra::report::ConfigDependence d;
  d.groups = {{"a"}, {"b"}};
  d.differing = {finding()};
  d.differing[0].referee = ra::classify_difference(d.differing[0], ran, "a", &a, "b", &b);
  d.referee = ra::report::summarise_classes({{"output", *d.differing[0].referee}});
  return d;
}

}  // namespace

TEST_CASE("referee: errors of one order are reordering, one far further is beyond it") {
  const auto f = finding();
  const auto near_a = error(3, 3e-7), near_b = error(20, 2e-6), far = error(4000, 4e-4);
  CHECK(ra::classify_difference(f, ran, "a", &near_a, "b", &near_b).cls == DifferenceClass::Reordering);
  const auto c = ra::classify_difference(f, ran, "a", &near_a, "b", &far);
  CHECK(c.cls == DifferenceClass::BeyondReordering);
  CHECK(c.why.find("b is 4000 ULP from float64") == 0);
}

TEST_CASE("referee: a NaN or no referee leaves a difference unclassified, with the reason") {
  const auto f = finding();
  auto nan = error(std::numeric_limits<double>::quiet_NaN(), 0);
  nan.nan_reference = 1;
  const auto e = error(3, 3e-7);
  const auto c = ra::classify_difference(f, ran, "a", &nan, "b", &e);
  CHECK(c.cls == DifferenceClass::Unclassified);
  CHECK(c.why == "NaN in the reference");
  const ra::report::Referee refused{"cpu", "cpu", false, "an AOTInductor package"};
  CHECK(ra::classify_difference(f, refused, "a", &e, "b", &e).why == "no float64 referee: an AOTInductor package");
}

TEST_CASE("referee: conditioning turns an ill-conditioned gap into reordering, and only that") {
  // 1 + 2^24 - 2^24 summed in two orders: 0 and 1, float64 1. The ULP test alone says beyond.
  const auto exact = error(0, 0), cancelled = error(1.07e9, 1);
  std::vector<ra::report::ConfigResult> none;
  auto d = dependence(cancelled, exact);
  REQUIRE(d->referee->cls == DifferenceClass::BeyondReordering);
  CHECK(ra::any_beyond_reordering(none, d));

  SUBCASE("rounding the inputs moves float64 by as much: reordering") {
    ra::weigh_conditioning(none, d, {error(1e9, 0.9)});
    CHECK(d->differing[0].referee->cls == DifferenceClass::Reordering);
    CHECK(d->referee->cls == DifferenceClass::Reordering);
    CHECK(d->differing[0].referee->why.find("rounding the inputs alone moves float64 by up to 0.9") !=
          std::string::npos);
    CHECK_FALSE(ra::any_beyond_reordering(none, d));
  }
  SUBCASE("rounding moves it far less: still beyond, and the figure said") {
    ra::weigh_conditioning(none, d, {error(1, 1e-7)});
    CHECK(d->referee->cls == DifferenceClass::BeyondReordering);
    CHECK(d->differing[0].referee->why.find("far less than the 1 seen") != std::string::npos);
  }
  SUBCASE("no conditioning figure for the tensor: the ULP class stands") {
    auto other = error(1e9, 0.9);
    other.name = "other";
    ra::weigh_conditioning(none, d, {other});
    CHECK(d->referee->cls == DifferenceClass::BeyondReordering);
  }
}

TEST_CASE("referee: the fill rerun turns on what fills memory nobody wrote, unless both are on") {
  const auto rerun = ra::fill_rerun_config({"default", {}});
  REQUIRE(rerun);
  CHECK(rerun->values.at("deterministic") == "warn");
  CHECK(rerun->values.at("fill_uninitialized_memory") == "on");
  CHECK_FALSE(ra::fill_rerun_config({"det", {{"deterministic", "on"}}}));
  const auto off = ra::fill_rerun_config({"x", {{"deterministic", "on"}, {"fill_uninitialized_memory", "off"}}});
  REQUIRE(off);
  CHECK(off->values.at("deterministic") == "on");
  CHECK(off->values.at("fill_uninitialized_memory") == "on");
}

namespace {

// A rerun whose output has `digest` and `nan` NaN elements.
ra::TrialRun rerun(int repeat, const std::string& digest, int64_t nan) {
  ra::TrialRun r;
  r.repeat = repeat;
  r.result.emplace();
  r.result->tensors = {{"output", "float32", {4}, digest}};
  auto e = error(std::numeric_limits<double>::quiet_NaN(), 0);
  e.numel = 4;
  e.nan_result = nan;
  r.result->errors = {e};
  return r;
}

ra::report::ConfigResult diverged() {
  ra::report::ConfigResult c;
  c.name = "default";
  c.diverged_tensors = {finding()};
  c.diverged_tensors[0].referee = ra::report::Classified{DifferenceClass::Unclassified, "NaN in the reference"};
  c.referee.emplace();
  c.referee->errors = {error(3, 3e-7)};
  return c;
}

}  // namespace

TEST_CASE("referee: reruns that agree with fresh NaN are uninitialized memory; anything else is not") {
  const std::string a(32, 'a'), b(32, 'b');
  auto c = diverged();
  REQUIRE(ra::worth_fill_rerun(c));
  ra::classify_uninitialized(c, {rerun(0, a, 4), rerun(1, a, 4)}, "default+fill", "aten::empty");
  CHECK(c.diverged_tensors[0].referee->cls == DifferenceClass::Uninitialized);
  CHECK(c.diverged_tensors[0].referee->why.find("4 of its 4 elements are NaN") != std::string::npos);
  CHECK(c.diverged_tensors[0].referee->op == "aten::empty");
  CHECK(c.referee->summary->cls == DifferenceClass::Uninitialized);

  auto differ = diverged();  // the reruns still differ: not decided by the fill
  ra::classify_uninitialized(differ, {rerun(0, a, 4), rerun(1, b, 4)}, "default+fill", "");
  CHECK(differ.diverged_tensors[0].referee->cls == DifferenceClass::Unclassified);
  auto no_nan = diverged();  // they agree, but no NaN appeared (deterministic algorithms fixed a race)
  ra::classify_uninitialized(no_nan, {rerun(0, a, 0), rerun(1, a, 0)}, "default+fill", "");
  CHECK(no_nan.diverged_tensors[0].referee->cls == DifferenceClass::Unclassified);
  auto one = diverged();  // one rerun is not two
  ra::classify_uninitialized(one, {rerun(0, a, 4)}, "default+fill", "");
  CHECK(one.diverged_tensors[0].referee->cls == DifferenceClass::Unclassified);
}

TEST_CASE("referee: a fix is a downgrade when a tensor's error rises past the classes' bound, and only then") {
  auto named = [](const char* name, double ulp) {
    ReferenceError e = error(ulp, ulp * 1e-7);
    e.name = name;
    return e;
  };
  const std::vector<ReferenceError> failing = {named("output", 3), named("hidden", 40)};
  // 310 ULP where the failing configuration had 3: past max(16, 8 x 3).
  auto a = ra::judge_fix_accuracy(failing, {named("output", 310), named("hidden", 40)});
  REQUIRE(a);
  CHECK(a->downgrade());
  CHECK(a->tensor == "output");
  CHECK(a->max_ulp == 310);
  CHECK(a->from_ulp == 3);
  CHECK(ra::report::fix_accuracy_text(*a, "default") ==
        "max 310 ULP from float64 in output where default had 3: a downgrade");
  // 16 ULP where it had 3 is within the floor; 320 where it had 40 within 8x: of the same order.
  a = ra::judge_fix_accuracy(failing, {named("output", 16), named("hidden", 320)});
  REQUIRE(a);
  CHECK(a->change == ra::report::AccuracyChange::SameOrder);
  CHECK(a->tensor == "hidden");  // the furthest from float64
  a = ra::judge_fix_accuracy({named("output", 2)}, {named("output", 2)});
  REQUIRE(a);
  CHECK(a->change == ra::report::AccuracyChange::Unchanged);
  CHECK(ra::report::fix_accuracy_text(*a, "default") == "error vs float64 unchanged (max 2 ULP)");
  a = ra::judge_fix_accuracy({named("output", 310)}, {named("output", 3)});
  REQUIRE(a);
  CHECK(a->change == ra::report::AccuracyChange::Closer);
  // The furthest of two downgraded tensors above its own bound is named.
  a = ra::judge_fix_accuracy(failing, {named("output", 100), named("hidden", 5000)});
  REQUIRE(a);
  CHECK(a->tensor == "hidden");
  // Nothing to compare (no referee, a NaN, a tensor the failing run lacks): nothing claimed.
  CHECK_FALSE(ra::judge_fix_accuracy({}, {named("output", 310)}));
  CHECK_FALSE(ra::judge_fix_accuracy(failing, {}));
  auto nan = named("output", 310);
  nan.nan_result = 1;
  CHECK_FALSE(ra::judge_fix_accuracy(failing, {nan}));
  CHECK_FALSE(ra::judge_fix_accuracy(failing, {named("other", 310)}));
}

TEST_CASE("referee: a candidate's errors are each tensor's furthest over its repeats") {
  auto run = [](double ulp) {
    ra::TrialRun r;
    r.result.emplace();
    r.result->status = ra::report::TrialStatus::Ok;
    r.result->errors = {error(ulp, ulp * 1e-7)};
    return r;
  };
  std::vector<ra::TrialRun> runs = {run(3), run(40), run(5)};
  auto worst = ra::furthest_errors(runs);
  REQUIRE(worst.size() == 1);
  CHECK(worst[0].max_ulp == 40);
  runs[2].result->errors[0].nan_result = 2;  // a NaN is further than any figure
  worst = ra::furthest_errors(runs);
  REQUIRE(worst.size() == 1);
  CHECK(worst[0].nan_result == 2);
  runs[1].result->status = ra::report::TrialStatus::Crashed;
  runs.pop_back();
  CHECK(ra::furthest_errors(runs)[0].max_ulp == 3);
  CHECK(ra::furthest_errors({}).empty());
}
