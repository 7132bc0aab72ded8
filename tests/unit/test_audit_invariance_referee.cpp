// SPDX-License-Identifier: Apache-2.0
// invariance's float64 referee (audit/invariance/invariance_referee.h) with hand-made cells and row
// errors: each class's errors, the class of its difference from the reference class, the advice that
// names the class closest to float64, a fix candidate that is a downgrade (never the fix named first,
// never without the word), and the report's JSON and text.
#include "audit/invariance/invariance_analysis.h"
#include "audit/invariance/invariance_fix.h"
#include "audit/invariance/invariance_referee.h"
#include "reports/json_read.h"
#include "reports/render.h"

#include <doctest/doctest.h>

#include <map>

namespace {

using ra::RowError;
using ra::report::DifferenceClass;
using ra::report::InvarianceCell;
using ra::report::InvarianceConfig;
using ra::report::ReferenceError;

ReferenceError error(double ulp) {
  ReferenceError e;
  e.name = "output";
  e.dtype = "float32";
  e.numel = 8;
  e.max_ulp = ulp;
  e.max_abs = ulp * 1e-7;
  e.max_rel = ulp * 6e-8;
  return e;
}

// Two anchors whose rows got `digest` at each size (start placement only), analysed.
InvarianceConfig swept(const std::string& name, const std::map<int64_t, std::string>& digests) {
  InvarianceConfig c;
  c.config = name;
  for (const auto& [size, d] : digests) {
    InvarianceCell cell{size, "start", {}};
    for (int a = 0; a < 2; ++a) cell.rows.push_back({a, "output", a, d + std::to_string(a), d == digests.at(1), 0, 0});
    c.cells.push_back(cell);
  }
  c.switches = {{"deterministic", "", "off"}, {"threads", "", "2"}, {"mkl_cbwr", "", "unset"}};
  c.timing.calls = 100;
  ra::invariance::analyse(c);
  return c;
}

// The worker's row errors: each digest's anchors at `ulp[digest]` (anchor 1 one ULP further).
std::vector<RowError> row_errors(const std::map<std::string, double>& ulp) {
  std::vector<RowError> out;
  for (const auto& [d, u] : ulp)
    for (int a = 0; a < 2; ++a) out.push_back({a, "output", d + std::to_string(a), error(u + a)});
  return out;
}

const ra::report::Referee kRan{"cpu", "cpu", true, ""};

}  // namespace

TEST_CASE("attach_class_errors: each class's rows against float64, and reordering between classes") {
  InvarianceConfig c = swept("default", {{1, "x"}, {2, "x"}, {4, "y"}, {8, "y"}});
  REQUIRE(c.classes.size() == 2);
  ra::invariance::attach_class_errors(c, row_errors({{"x", 2}, {"y", 5}}), kRan);
  REQUIRE(c.classes[0].errors.size() == 1);
  CHECK(c.classes[0].errors[0].max_ulp == 3);  // the furthest anchor
  CHECK(c.classes[0].errors[0].numel == 16);   // both anchors' rows
  CHECK(c.classes[1].errors[0].max_ulp == 6);
  CHECK_FALSE(c.classes[0].difference);  // the reference class differs from nothing
  REQUIRE(c.classes[1].difference);
  CHECK(c.classes[1].difference->cls == DifferenceClass::Reordering);
  CHECK(c.classes[1].difference->a_run == "batch 1");
  CHECK(c.classes[1].difference->b_run == "batch 4");
  REQUIRE(c.referee);
  CHECK(c.referee->cls == DifferenceClass::Reordering);
  CHECK(c.referee->tensor == "output at batch 4");
  CHECK(ra::invariance::closest_class_text(c).empty());
  CHECK(c.advice.back().find("none is more right") != std::string::npos);
}

TEST_CASE("attach_class_errors: a class far from float64 is beyond reordering, and the advice names the closest") {
  InvarianceConfig c = swept("default", {{1, "x"}, {2, "x"}, {4, "y"}, {8, "y"}});
  ra::invariance::attach_class_errors(c, row_errors({{"x", 2}, {"y", 400}}), kRan);
  REQUIRE(c.classes[1].difference);
  CHECK(c.classes[1].difference->cls == DifferenceClass::BeyondReordering);
  CHECK(c.classes[1].difference->why.find("batch 4 is 401 ULP from float64 where batch 1 is 3") != std::string::npos);
  const std::string closest = ra::invariance::closest_class_text(c);
  CHECK(closest.find("{1,2} is closest to float64 (max 3 ULP, where {4,8} is 401 ULP") != std::string::npos);
  CHECK(c.advice.back() == "float64 referee: " + closest);
  // The padding advice (the fix search's answer when no switch fixes it) says it too.
  CHECK(ra::invariance::padding_advice(c).find(closest) != std::string::npos);
}

TEST_CASE("attach_class_errors: without a referee that ran, every difference is unclassified with its reason") {
  InvarianceConfig c = swept("default", {{1, "x"}, {4, "y"}});
  const ra::report::Referee refused{"cpu", "cpu", false,
                                    "an AOTInductor package: its kernels are compiled for one dtype"};
  ra::invariance::attach_class_errors(c, row_errors({{"x", 2}, {"y", 400}}), refused);
  CHECK(c.classes[0].errors.empty());
  REQUIRE(c.classes[1].difference);
  CHECK(c.classes[1].difference->cls == DifferenceClass::Unclassified);
  CHECK(c.classes[1].difference->why.find("no float64 referee: an AOTInductor package") == 0);
  CHECK(ra::invariance::closest_class_text(c).empty());
}

TEST_CASE("weigh_candidate: a fix beyond the classes' bound from float64 is a downgrade") {
  InvarianceConfig from = swept("default", {{1, "x"}, {4, "y"}});
  ra::invariance::attach_class_errors(from, row_errors({{"x", 2}, {"y", 3}}), kRan);
  ra::report::InvarianceFixCandidate good, worse;
  good.verdict = worse.verdict = "invariant";
  good.classes = {{{1, 4}, true, {error(3)}, std::nullopt}};
  worse.classes = {{{1, 4}, true, {error(310)}, std::nullopt}};
  ra::invariance::weigh_candidate(good, from);
  ra::invariance::weigh_candidate(worse, from);
  CHECK_FALSE(good.downgrade);
  CHECK(good.accuracy == "error vs float64 unchanged (max 3 ULP; default had 4)");
  CHECK(worse.downgrade);
  CHECK(worse.accuracy == "max 310 ULP from float64 where default had 4 (output): a downgrade");
  ra::report::InvarianceFixCandidate unmeasured;  // no figures: nothing said
  unmeasured.verdict = "invariant";
  unmeasured.classes = {{{1, 4}, true, {}, std::nullopt}};
  ra::invariance::weigh_candidate(unmeasured, from);
  CHECK(unmeasured.accuracy.empty());
  CHECK_FALSE(unmeasured.downgrade);
}

namespace {

// A fake machine on which deterministic=on and threads=1 each make the rows invariant, the first by
// computing them in a lower precision (310 ULP from float64, where the default's rows lie within 3).
std::vector<InvarianceConfig> fake_sweep(const std::vector<ra::invariance::SweepStep>& steps,
                                         const std::vector<int64_t>& sizes, int) {
  std::vector<InvarianceConfig> out;
  for (const auto& [config, label] : steps) {
    const bool det = config.values.count("deterministic") != 0 && config.values.at("deterministic") == "on";
    const bool one = config.values.count("threads") != 0 && config.values.at("threads") == "1";
    std::map<int64_t, std::string> d;
    for (const int64_t m : sizes) d[m] = m >= 4 && !det && !one ? "y" : "x";
    InvarianceConfig c = swept(config.name, d);
    ra::invariance::attach_class_errors(c, row_errors({{"x", det ? 310 : 2}, {"y", 2}}), kRan);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

TEST_CASE("search_invariance_fix: a downgrade is never the fix named first, nor named without the word") {
  InvarianceConfig from = swept("default", {{1, "x"}, {4, "y"}});
  ra::invariance::attach_class_errors(from, row_errors({{"x", 2}, {"y", 2}}), kRan);
  const auto f =
      ra::invariance::search_invariance_fix(from, ra::parse_config("default", 2), ra::Device::cpu(), fake_sweep);
  const auto named = [&](const std::string& t) {
    for (const auto& c : f.candidates)
      if (c.toggles == t) return c;
    FAIL("no candidate " << t);
    return ra::report::InvarianceFixCandidate{};
  };
  CHECK(named("deterministic=on").fixes);
  CHECK(named("deterministic=on").downgrade);
  CHECK(named("threads=1").fixes);
  CHECK_FALSE(named("threads=1").downgrade);
  CHECK(f.conclusion.rfind("threads=1 from default makes it invariant", 0) == 0);
  CHECK(f.conclusion.find("so does deterministic=on (a downgrade: max 311 ULP from float64 where default had 3") !=
        std::string::npos);
  // Every format says the word beside the candidate.
  ra::report::Report r;
  auto& inv = r.body.emplace<ra::report::Invariance>();
  inv.model = "m.pt";
  inv.referee = kRan;
  inv.configs = {from};
  inv.fix = f;
  ra::report::finalize(r);
  CHECK(ra::report::render_text(r).find("deterministic=on: invariant, but max 311 ULP from float64 where default had "
                                        "3 (output): a downgrade") != std::string::npos);
  CHECK(ra::report::render_text(r).find("threads=1: invariant: fixes it, error vs float64 unchanged") !=
        std::string::npos);
}

TEST_CASE("search_invariance_fix: only a downgrade fixes it: said so, and padding keeps the accuracy") {
  InvarianceConfig from = swept("default", {{1, "x"}, {4, "y"}});
  ra::invariance::attach_class_errors(from, row_errors({{"x", 2}, {"y", 2}}), kRan);
  const auto only_det = [](const std::vector<ra::invariance::SweepStep>& steps, const std::vector<int64_t>& sizes,
                           int a) {
    auto out = fake_sweep(steps, sizes, a);
    for (size_t i = 0; i < steps.size(); ++i)
      if (steps[i].config.values.count("threads") != 0 && steps[i].config.values.at("threads") == "1")
        out[i] = fake_sweep({{ra::parse_config("default", 2), steps[i].label}}, sizes, a).front();
    return out;
  };
  const auto f =
      ra::invariance::search_invariance_fix(from, ra::parse_config("default", 2), ra::Device::cpu(), only_det);
  CHECK(f.conclusion.rfind("only deterministic=on (a downgrade: ", 0) == 0);
  CHECK(f.conclusion.find("padding or bucketing to one class keeps the accuracy") != std::string::npos);
}

TEST_CASE("the referee's part of an invariance report: JSON round trip and text") {
  ra::report::Report r;
  auto& inv = r.body.emplace<ra::report::Invariance>();
  inv.model = "m.pt";
  inv.referee = kRan;
  InvarianceConfig c = swept("default", {{1, "x"}, {4, "y"}});
  ra::invariance::attach_class_errors(c, row_errors({{"x", 2}, {"y", 400}}), kRan);
  inv.configs = {c};
  ra::report::finalize(r);
  const auto back = ra::report::report_from_json(ra::report::to_json(r));
  CHECK(ra::report::to_json(back).dump() == ra::report::to_json(r).dump());
  const auto& b = std::get<ra::report::Invariance>(back.body);
  REQUIRE(b.referee);
  CHECK(b.referee->ran);
  REQUIRE(b.configs.front().classes.size() == 2);
  CHECK(b.configs.front().classes[1].errors.front().max_ulp == 401);
  REQUIRE(b.configs.front().classes[1].difference);
  CHECK(b.configs.front().classes[1].difference->cls == DifferenceClass::BeyondReordering);
  const std::string text = ra::report::render_text(r);
  CHECK(text.find("  {4}: error vs float64: output 401 ULP") != std::string::npos);
  CHECK(text.find("  between classes, class: beyond-reordering - output at batch 4: batch 4 is 401 ULP") !=
        std::string::npos);
  CHECK(ra::report::render_junit(r).find("between classes, class: beyond-reordering") != std::string::npos);
  CHECK(ra::report::render_markdown(r).find("**default** {1}: error vs float64: output 3 ULP") != std::string::npos);
  CHECK(ra::report::render_html(r).find("<p class=\"referee\" data-config=\"default\">") != std::string::npos);
  // A referee that did not run: one line under the head, in the text.
  inv.referee = ra::report::Referee{"cpu", "cpu", false, "its float64 run raised: boom"};
  CHECK(ra::report::render_text(r).find("float64 referee: did not run (its float64 run raised: boom)") !=
        std::string::npos);
}
