// SPDX-License-Identifier: Apache-2.0
// invariance's fix search (audit/invariance/invariance_fix.h) with a fake sweep: which sizes run
// again, which switches are candidates on each device (cuBLAS's reduced-precision reductions among
// them), the verdicts, the costs of the fixes alone against reruns, the budget of model calls, the
// progress labels, the padding advice when nothing fixes it, and the report's JSON round trip.
#include "audit/invariance/invariance_analysis.h"
#include "audit/invariance/invariance_fix.h"
#include "reports/json_read.h"
#include "reports/render.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

namespace {

using ra::Config;
using ra::report::InvarianceCell;
using ra::report::InvarianceConfig;

// A configuration whose one anchor got `digest` at each size (start placement only), analysed.
InvarianceConfig swept(const std::string& name, const std::map<int64_t, std::string>& digests, double forward_ms = 10) {
  InvarianceConfig c;
  c.config = name;
  for (const auto& [size, d] : digests) {
    InvarianceCell cell{size, "start", {}};
    cell.rows.push_back({0, "output", 0, d, d == digests.at(1), 0, 0});
    c.cells.push_back(cell);
  }
  c.switches = {{"deterministic", "", "off"},
                {"cublas_workspace", "", "unset"},
                {"tf32.cublas", "", "off"},
                {"tf32.cudnn", "", "on"},
                {"threads", "", "2"},
                {"mkl_cbwr", "", "unset"},
                {"cublas.fp16_reduction", "", "on"},
                {"cublas.bf16_reduction", "", "on"}};
  c.timing.forward_ms = forward_ms;
  c.timing.calls = static_cast<int64_t>(digests.size());
  ra::invariance::analyse(c);
  return c;
}

// A fake machine: a row differs at sizes >= 4 unless every switch of `fixing` has its value; each
// switch named in `costs` multiplies the forward time.
struct FakeSweep {
  std::map<std::string, std::string> fixing;
  std::map<std::string, double> costs;
  std::vector<std::vector<std::string>> calls;  // the configurations of each call
  std::vector<std::string> labels;              // every worker's progress label, in order
  std::vector<std::vector<int64_t>> sizes;
  std::vector<int> anchors;  // the anchors asked of each call (0: all)
  std::vector<InvarianceConfig> operator()(const std::vector<ra::invariance::SweepStep>& steps,
                                           const std::vector<int64_t>& s, int a) {
    anchors.push_back(a);
    calls.emplace_back();
    sizes.push_back(s);
    std::vector<InvarianceConfig> out;
    for (const auto& [c, label] : steps) {
      calls.back().push_back(c.name);
      labels.push_back(label);
      bool fixed = !fixing.empty();
      for (const auto& [k, v] : fixing) fixed = fixed && c.values.count(k) && c.values.at(k) == v;
      double ms = 10;
      for (const auto& [k, f] : costs)
        if (c.values.count(k)) ms *= f;
      std::map<int64_t, std::string> d;
      for (int64_t m : s) d[m] = (m >= 4 && !fixed) ? "y" : "x";
      out.push_back(swept(c.name, d, ms * static_cast<double>(d.size())));
    }
    return out;
  }
};

std::vector<std::string> keys(const std::vector<ra::report::InvarianceFixCandidate>& cs, const char* stage) {
  std::vector<std::string> out;
  for (const auto& c : cs)
    if (c.stage == stage) out.push_back(c.toggles + (c.message.empty() ? "" : " (" + c.message + ")"));
  return out;
}

const ra::report::InvarianceFixCandidate& named(const std::vector<ra::report::InvarianceFixCandidate>& cs,
                                                const std::string& toggles) {
  return *std::find_if(cs.begin(), cs.end(), [&](const auto& c) { return c.toggles == toggles; });
}

const InvarianceConfig kDefault = swept("default", {{1, "x"}, {2, "x"}, {4, "y"}, {8, "y"}, {16, "y"}});

}  // namespace

TEST_CASE("fix_sizes: batch 1 and the smallest size of each other class") {
  CHECK(ra::invariance::fix_sizes(kDefault) == std::vector<int64_t>{1, 4});
  const InvarianceConfig three = swept("default", {{1, "x"}, {2, "z"}, {3, "z"}, {4, "y"}, {8, "y"}});
  CHECK(ra::invariance::fix_sizes(three) == std::vector<int64_t>{1, 2, 4});
  CHECK(ra::invariance::fix_sizes(swept("default", {{1, "x"}, {2, "x"}})).empty());  // invariant: nothing to fix
}

TEST_CASE("fix_candidates: the switches that matter on each device, the others said why") {
  const auto cpu = ra::invariance::fix_candidates(kDefault, ra::Device::cpu());
  CHECK(keys(cpu, "single") == std::vector<std::string>{"deterministic=on", "threads=1", "mkl_cbwr=COMPATIBLE"});
  CHECK(keys(cpu, "skipped") ==
        std::vector<std::string>{"cublas_workspace=:16:8 (no effect on cpu)", "tf32.cublas=off (no effect on cpu)",
                                 "tf32.cudnn=off (no effect on cpu)", "cublas.fp16_reduction=off (no effect on cpu)",
                                 "cublas.bf16_reduction=off (no effect on cpu)"});
  for (const auto& c : cpu) CHECK(c.verdict == (c.stage == "skipped" ? "not run" : ""));
  const auto cuda = ra::invariance::fix_candidates(kDefault, ra::Device::cuda());
  CHECK(keys(cuda, "single") == std::vector<std::string>{"deterministic=on", "cublas_workspace=:16:8", "tf32.cudnn=off",
                                                         "threads=1", "cublas.fp16_reduction=off",
                                                         "cublas.bf16_reduction=off"});
  CHECK(keys(cuda, "skipped") == std::vector<std::string>{"tf32.cublas=off (already off in default)",
                                                          "mkl_cbwr=COMPATIBLE (no effect on cuda)"});
  for (const auto& c : cuda)
    if (c.toggles == "cublas.fp16_reduction=off") {
      CHECK(c.config == "default+cublas.fp16_reduction=off");
      CHECK(c.cpp == "at::globalContext().setAllowFP16ReductionCuBLAS(false);");
      CHECK(c.python == "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False");
    }
}

TEST_CASE("search_invariance_fix: the switch that fixes it, credited by a rerun, and it alone priced") {
  FakeSweep fake;
  fake.fixing = {{"threads", "1"}};
  fake.costs = {{"threads", 1.5}};
  const Config from = ra::parse_config("default", 2);
  InvarianceConfig first = kDefault;
  first.timing.calls = 100;  // a budget that holds every round
  const auto f = ra::invariance::search_invariance_fix(first, from, ra::Device::cpu(), std::ref(fake));
  // Each candidate alone; the rerun right after the first that came out invariant (sizes 1 and 4
  // are not the first sweep's); no combination; then kTimingRounds - 1 rounds of the rerun and the fix.
  using Calls = std::vector<std::vector<std::string>>;
  Calls want = {{"default+deterministic=on"}, {"default+threads=1"}, {"default"}, {"default+mkl_cbwr=COMPATIBLE"}};
  for (int r = 2; r <= ra::report::kTimingRounds; ++r) want.push_back({"default", "default+threads=1"});
  CHECK(fake.calls == want);
  CHECK(fake.sizes[0] == std::vector<int64_t>{1, 4});
  CHECK(fake.labels[0] == "fix search: candidate deterministic=on");
  CHECK(fake.labels[2] == "fix search: default again, to credit threads=1");
  CHECK(fake.labels[6] == "fix search: timing round 3 of 5, default");
  CHECK(fake.labels[7] == "fix search: timing round 3 of 5, candidate threads=1");
  CHECK(f.baseline_verdict == "variant");
  REQUIRE(f.baseline_forward_ms);
  CHECK(*f.baseline_forward_ms == doctest::Approx(10));
  for (const auto& c : f.candidates) {
    if (c.stage == "skipped") continue;
    CHECK_MESSAGE(c.fixes == (c.toggles == "threads=1"), c.toggles);
    CHECK(c.verdict == (c.fixes ? "invariant" : "variant"));
    CHECK(c.cost_ratio.has_value() == c.fixes);  // only a fix is priced
    CHECK(c.forward_ms.has_value() == c.fixes);
  }
  const auto& threads = named(f.candidates, "threads=1");
  REQUIRE(threads.cost_ratio);
  CHECK(*threads.cost_ratio == doctest::Approx(1.5));
  CHECK(ra::report::cost_measurable(threads.cost_low, threads.cost_high));  // 1.5x in every round is a price
  CHECK(f.conclusion == "threads=1 from default makes it invariant: every size swept again gives a row the same bits");
}

TEST_CASE("search_invariance_fix: at most kFixCallBudget times the first sweep's model calls") {
  // The first sweep made 5 calls (sizes 1, 2, 4, 8, 16); each sweep of the search makes 2.
  FakeSweep fake;
  fake.fixing = {{"threads", "1"}};
  const auto f = ra::invariance::search_invariance_fix(kDefault, ra::parse_config("default", 2), ra::Device::cpu(),
                                                       std::ref(fake));
  int64_t calls = 0;
  for (const auto& sweep : fake.calls) calls += 2 * static_cast<int64_t>(sweep.size());
  CHECK(calls <= ra::invariance::kFixCallBudget * kDefault.timing.calls);
  // Four singles' sweeps and one round of prices fit in 15 calls: 8, then 12; a third round would make 16.
  CHECK(fake.calls.size() == 5);
  // The first sweep swept sizes 1 and 4 itself: it credits a fix without a rerun.
  InvarianceConfig small = swept("default", {{1, "x"}, {4, "y"}});
  FakeSweep second;
  second.fixing = {{"threads", "1"}};
  const auto g =
      ra::invariance::search_invariance_fix(small, ra::parse_config("default", 2), ra::Device::cpu(), std::ref(second));
  CHECK(g.baseline_verdict == "not run");
  CHECK(second.calls.size() == 3);  // 6 calls: the budget of 3 x 2 holds the three singles, no round of prices
  CHECK(named(g.candidates, "threads=1").fixes);
  // One round: the fix's own sweep against the first sweep; one round cannot show a spread.
  CHECK(named(g.candidates, "threads=1").cost_ratio.has_value());
  CHECK_FALSE(named(g.candidates, "threads=1").cost_low.has_value());
  // A budget spent before a candidate: listed as not run, with why.
  InvarianceConfig tight = small;
  tight.timing.calls = 1;
  FakeSweep third;
  const auto h =
      ra::invariance::search_invariance_fix(tight, ra::parse_config("default", 2), ra::Device::cpu(), std::ref(third));
  CHECK(third.calls.size() == 1);
  const auto skipped = keys(h.candidates, "skipped");
  CHECK(std::count(skipped.begin(), skipped.end(),
                   "threads=1 (the search's budget was spent: at most 3 times the first sweep's 1 model calls)") == 1);
}

namespace {

// Two anchors: at sizes (block lengths) >= 4 both get other bits unless threads=1; a sweep of the
// first anchor alone makes half the calls. Its cells are the verify axis's ("block") or a batch's.
struct FakeTwo {
  std::string placement = "block";
  std::vector<std::pair<std::string, int>> calls;  // configuration, anchors asked
  std::vector<InvarianceConfig> operator()(const std::vector<ra::invariance::SweepStep>& steps,
                                           const std::vector<int64_t>& s, int anchors) {
    std::vector<InvarianceConfig> out;
    for (const auto& [c, label] : steps) {
      calls.emplace_back(c.name, anchors);
      const bool fixed = c.values.count("threads") && c.values.at("threads") == "1";
      InvarianceConfig r = swept(c.name, {{1, "x"}});
      r.cells.clear();
      for (const int64_t m : s) {
        InvarianceCell cell{m, placement, {}};
        for (int a = 0; a < (anchors == 0 ? 2 : anchors); ++a) {
          const std::string d = (m >= 4 && !fixed ? "y" : "x") + std::to_string(a);
          cell.rows.push_back({a, "output", a, d, d == "x" + std::to_string(a), 0, 0});
        }
        r.cells.push_back(cell);
      }
      r.verdict.clear();
      r.timing.calls = static_cast<int64_t>(s.size()) * (anchors == 0 ? 2 : anchors);
      ra::invariance::analyse(r);
      out.push_back(r);
    }
    return out;
  }
};

}  // namespace

TEST_CASE("search_invariance_fix: on the verify axis each candidate screened on the first anchor that moved") {
  FakeTwo fake;
  const std::vector<ra::invariance::SweepStep> first = {{ra::parse_config("default", 2), "first"}};
  InvarianceConfig from = fake(first, {1, 2, 4, 8}, 0).front();  // both anchors move at 4 and 8
  from.timing.calls = 100;
  fake.calls.clear();
  const auto f =
      ra::invariance::search_invariance_fix(from, ra::parse_config("default", 2), ra::Device::cpu(), std::ref(fake));
  using Calls = std::vector<std::pair<std::string, int>>;
  // deterministic=on: its screen shows the variance, so it stands; threads=1: its screen is invariant,
  // so every anchor decides (the first sweep, of the same block lengths, credits it).
  const Calls want = {{"default+deterministic=on", 1},
                      {"default+threads=1", 1},
                      {"default+threads=1", 0},
                      {"default+mkl_cbwr=COMPATIBLE", 1}};
  REQUIRE(fake.calls.size() >= want.size());
  CHECK(Calls(fake.calls.begin(), fake.calls.begin() + static_cast<long>(want.size())) == want);
  CHECK(named(f.candidates, "deterministic=on").anchors == 1);
  CHECK(named(f.candidates, "deterministic=on").verdict == "variant");
  CHECK(named(f.candidates, "threads=1").anchors == 0);
  CHECK(named(f.candidates, "threads=1").fixes);
  for (size_t i = want.size(); i < fake.calls.size(); ++i) CHECK(fake.calls[i].second == 0);  // prices: every anchor
  ra::report::Report r;
  auto& inv = r.body.emplace<ra::report::Invariance>();
  inv.configs = {from};
  inv.fix = f;
  ra::report::finalize(r);
  CHECK(ra::report::render_text(r).find("deterministic=on: variant on anchor 0: {1,2} | {4,8}") != std::string::npos);
  const auto back = ra::report::report_from_json(ra::report::to_json(r));
  CHECK(named(std::get<ra::report::Invariance>(back.body).fix->candidates, "deterministic=on").anchors == 1);
}

TEST_CASE("search_invariance_fix: a batch holds every anchor at once, so no screen: every sweep has them all") {
  FakeTwo fake;
  fake.placement = "start";
  const std::vector<ra::invariance::SweepStep> first = {{ra::parse_config("default", 2), "first"}};
  InvarianceConfig from = fake(first, {1, 2, 4, 8}, 0).front();
  from.timing.calls = 100;
  fake.calls.clear();
  const auto f =
      ra::invariance::search_invariance_fix(from, ra::parse_config("default", 2), ra::Device::cpu(), std::ref(fake));
  REQUIRE_FALSE(fake.calls.empty());
  for (const auto& [config, anchors] : fake.calls) CHECK(anchors == 0);
  for (const auto& c : f.candidates) CHECK(c.anchors == 0);
  CHECK(named(f.candidates, "threads=1").fixes);
}

TEST_CASE("search_invariance_fix: none alone, all together; then none at all: pad to the widest class") {
  FakeSweep together;
  together.fixing = {{"threads", "1"}, {"mkl_cbwr", "COMPATIBLE"}};
  const Config from = ra::parse_config("default", 2);
  InvarianceConfig first = kDefault;
  first.timing.calls = 100;
  auto f = ra::invariance::search_invariance_fix(first, from, ra::Device::cpu(), std::ref(together));
  REQUIRE(together.calls.size() == 5 + static_cast<size_t>(ra::report::kTimingRounds) - 1);
  CHECK(together.calls[3] ==
        std::vector<std::string>{"default+deterministic=on+threads=1+mkl_cbwr=COMPATIBLE"});  // after the three alone
  CHECK(together.calls[4] == std::vector<std::string>{"default"});  // the rerun that credits it
  CHECK(together.calls[5] ==
        std::vector<std::string>{"default", "default+deterministic=on+threads=1+mkl_cbwr=COMPATIBLE"});
  REQUIRE(f.candidates.back().stage == "combined");
  CHECK(f.candidates.back().fixes);
  CHECK(f.conclusion.find("deterministic=on+threads=1+mkl_cbwr=COMPATIBLE from default makes it invariant") == 0);

  FakeSweep never;
  f = ra::invariance::search_invariance_fix(first, from, ra::Device::cpu(), std::ref(never));
  CHECK(f.candidates.back().stage == "combined");
  CHECK_FALSE(f.candidates.back().fixes);
  CHECK(never.calls.size() == 4);  // nothing fixed: no rerun, nothing priced
  CHECK(f.baseline_verdict == "not run");
  for (const auto& c : f.candidates) CHECK_FALSE(c.cost_ratio.has_value());
  CHECK(f.conclusion ==
        "no switch tried (deterministic=on, threads=1, mkl_cbwr=COMPATIBLE, "
        "deterministic=on+threads=1+mkl_cbwr=COMPATIBLE) makes it invariant: padding or bucketing to one class is "
        "the fix: pad every batch to a size in {4,8,16} (sizes between them that were not tried are not advised: "
        "measure them with --sizes)");
}

namespace {

// A verify sweep of blocks 1…5 (one anchor): block b's tokens get the decode step's bits when b is
// at most `agree`; every switch of `helping` raises `agree` to `helped`.
InvarianceConfig verify_swept(const std::string& name, const std::vector<int64_t>& blocks, int64_t agree) {
  InvarianceConfig c = swept(name, {{1, "x"}});
  c.cells.clear();
  for (const int64_t b : blocks) {
    InvarianceCell cell{b, "block", {}, 10};  // each block at one place, from token 10 (tokens 11… counted from 1)
    for (int64_t j = 0; j < b; ++j) cell.rows.push_back({0, "output/logits", j, "d", b <= agree, 0, 0});
    c.cells.push_back(cell);
  }
  c.timing.calls = static_cast<int64_t>(blocks.size());
  c.verdict.clear();
  ra::invariance::analyse(c);
  return c;
}

struct FakeVerify {
  std::map<std::string, std::string> helping;
  std::vector<std::vector<int64_t>> sizes;
  std::vector<InvarianceConfig> operator()(const std::vector<ra::invariance::SweepStep>& steps,
                                           const std::vector<int64_t>& s, int /*anchors: one in this fake*/) {
    sizes.push_back(s);
    std::vector<InvarianceConfig> out;
    for (const auto& [c, label] : steps) {
      bool helped = false;
      for (const auto& [k, v] : helping) helped = helped || (c.values.count(k) && c.values.at(k) == v);
      out.push_back(verify_swept(c.name, s, helped ? 4 : 1));
    }
    return out;
  }
};

}  // namespace

TEST_CASE("search_invariance_fix on the verify axis: every block length, and the drafts a switch makes safe") {
  const InvarianceConfig from_cells = verify_swept("default", {1, 2, 3, 4, 5}, 1);
  REQUIRE(ra::report::verify_blocks(from_cells));
  CHECK(ra::invariance::fix_sizes(from_cells) == std::vector<int64_t>{1, 2, 3, 4, 5});
  FakeVerify fake;
  fake.helping = {{"mkl_cbwr", "COMPATIBLE"}};
  const auto f = ra::invariance::search_invariance_fix(from_cells, ra::parse_config("default", 2), ra::Device::cpu(),
                                                       std::ref(fake));
  CHECK(fake.sizes.front() == std::vector<int64_t>{1, 2, 3, 4, 5});
  for (const auto& c : f.candidates) CHECK_FALSE_MESSAGE(c.fixes, c.toggles);  // block 5 never agrees
  CHECK(f.conclusion.find("no verify block length tried is safe without a switch; under mkl_cbwr=COMPATIBLE, verify "
                          "blocks of 2…4 tokens get the decode step's bits (each measured at every place among "
                          "tokens 11…15), so drafts of at most 3 tokens are safe with it") != std::string::npos);
  // Each sweep of every block length costs what the first did: three fit the budget, the combination not.
  CHECK(fake.sizes.size() == 3);
  CHECK(keys(f.candidates, "skipped").back() ==
        "deterministic=on+threads=1+mkl_cbwr=COMPATIBLE (the search's budget was spent: at most 3 times the first "
        "sweep's 5 model calls)");
}

TEST_CASE("search_invariance_fix: a rerun that is invariant credits no switch") {
  FakeSweep fake;
  fake.fixing = {{"threads", "1"}};
  Config from = ra::parse_config("threads=1", 2);  // the fake machine is then invariant everywhere
  from.name = "default";
  const auto f = ra::invariance::search_invariance_fix(kDefault, from, ra::Device::cpu(), std::ref(fake));
  CHECK(f.baseline_verdict == "invariant");
  for (const auto& c : f.candidates) CHECK_FALSE(c.fixes);
  CHECK(f.conclusion.find("the variance did not come back") != std::string::npos);
}

TEST_CASE("the fix search in the report: JSON round trip and every format") {
  FakeSweep fake;
  fake.fixing = {{"threads", "1"}};
  ra::report::Report r;
  auto& inv = r.body.emplace<ra::report::Invariance>();
  inv.model = "m.pt";
  inv.configs = {kDefault};
  inv.fix = ra::invariance::search_invariance_fix(kDefault, ra::parse_config("default", 2), ra::Device::cpu(),
                                                  std::ref(fake));
  ra::report::finalize(r);
  const auto back = ra::report::report_from_json(ra::report::to_json(r));
  REQUIRE(std::holds_alternative<ra::report::Invariance>(back.body));
  REQUIRE(std::get<ra::report::Invariance>(back.body).fix);
  const auto& f = *std::get<ra::report::Invariance>(back.body).fix;
  CHECK(f.conclusion == inv.fix->conclusion);
  CHECK(f.sizes == std::vector<int64_t>{1, 4});
  REQUIRE(f.candidates.size() == inv.fix->candidates.size());
  for (size_t i = 0; i < f.candidates.size(); ++i) {
    CHECK(f.candidates[i].toggles == inv.fix->candidates[i].toggles);
    CHECK(f.candidates[i].fixes == inv.fix->candidates[i].fixes);
    CHECK(f.candidates[i].cost_ratio.has_value() == inv.fix->candidates[i].cost_ratio.has_value());
  }
  CHECK(ra::report::to_json(back).dump() == ra::report::to_json(r).dump());
  // The fake costs nothing in every round: a ratio of 1.0 prices nothing.
  CHECK(ra::report::render_text(r).find("threads=1: invariant: fixes it, cost not measurable on this machine now") !=
        std::string::npos);
  // The candidates that did not run share one line, in every format (issue 43, item 5).
  const std::string text = ra::report::render_text(r);
  const size_t not_run = text.find("\n  not run: ");
  REQUIRE(not_run != std::string::npos);
  const std::string not_run_line = text.substr(not_run + 1, text.find('\n', not_run + 1) - not_run - 1);
  CHECK(not_run_line.find("cublas.fp16_reduction=off") != std::string::npos);
  CHECK(not_run_line.find("(no effect on cpu)") != std::string::npos);
  CHECK(text.find("cublas.fp16_reduction=off: not run") == std::string::npos);
  CHECK(text.find("not run: ", not_run + std::string("\n  not run: ").size()) == std::string::npos);  // one line
  CHECK(ra::report::render_markdown(r).find("| threads=1 | invariant: fixes it | torch.set\\_num\\_threads(1) |") !=
        std::string::npos);
  CHECK(ra::report::render_markdown(r).find("| not run") == std::string::npos);
  CHECK(ra::report::render_markdown(r).find("\nNot run: ") != std::string::npos);
  const std::string html = ra::report::render_html(r);
  CHECK(html.find("data-toggles=\"threads=1\" data-verdict=\"invariant\" data-fixes=\"true\"") != std::string::npos);
  CHECK(html.find("<p class=\"fix-not-run\">Not run: ") != std::string::npos);
  CHECK(html.find("data-verdict=\"not run\"") == std::string::npos);
  // The costs sit in the timing block only.
  CHECK(html.find("Invariance fix costs") > html.find(ra::report::kTimingBegin));
  CHECK(ra::report::render_junit(r).find("name=\"fix search from default\"/>") != std::string::npos);
  // A report written before the fix search has none.
  auto old = ra::report::to_json(r);
  old["invariance"].erase("fix");
  CHECK_FALSE(std::get<ra::report::Invariance>(ra::report::report_from_json(old).body).fix);
}

TEST_CASE("an invariance report renders only what an invariance audit has (issue 43, item 5)") {
  FakeSweep fake;
  fake.fixing = {{"threads", "1"}};
  ra::report::Report r;
  auto& inv = r.body.emplace<ra::report::Invariance>();
  inv.model = "m.pt";
  inv.configs = {kDefault};
  inv.fix = ra::invariance::search_invariance_fix(kDefault, ra::parse_config("default", 2), ra::Device::cpu(),
                                                  std::ref(fake));
  inv.configs.front().advice.push_back("fix search: " + inv.fix->conclusion);  // as the audit adds it
  ra::report::finalize(r);
  // No section of a report with targets: no empty matrix, traces, fixes, census, details or trial times.
  const std::string html = ra::report::render_html(r);
  for (const char* absent : {"id=\"matrix\"", "id=\"root-causes\"", "No trace recorded", "id=\"fixes\"",
                             "No fix search", "id=\"census\"", "id=\"details\"", "Trial times", "href=\"#matrix\""})
    CHECK_MESSAGE(html.find(absent) == std::string::npos, absent);
  CHECK(html.find("id=\"invariance-fix\"") != std::string::npos);
  CHECK(html.find("<a href=\"#invariance\">") != std::string::npos);  // the nav names the sections there are
  CHECK(html.find("href=\"#verdict\"") == std::string::npos);
  CHECK(html.find("id=\"environment\"") != std::string::npos);
  // The fix search's conclusion once in Markdown (its section), though the advice repeats it.
  const std::string md = ra::report::render_markdown(r);
  CHECK(md.find("**default**: fix search: ") == std::string::npos);
  CHECK(md.find("### fix search from default") != std::string::npos);
}
