// SPDX-License-Identifier: Apache-2.0
// The determinism contract across renderers, on a report with every verdict, root causes, a fix
// search, a replay and timing figures: changing only the timing figures changes only the timing
// sections (JSON "timing", the HTML and Markdown timing blocks) and leaves JUnit alone.
#include "reports/json_read.h"
#include "reports/render.h"
#include "tests/unit/report_samples.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

namespace {

std::string without_block(const std::string& s) {
  const size_t b = s.find(ra::report::kTimingBegin);
  const size_t e = s.find(ra::report::kTimingEnd);
  REQUIRE(b != std::string::npos);
  REQUIRE(e > b);
  return s.substr(0, b) + s.substr(e);
}

// The fix search of the sample report's diverged configuration.
ra::report::FixSearch* sample_fix_search(ra::report::Report& r) {
  for (auto& c : r.targets().front().configs)
    if (c.fix_search) return &*c.fix_search;
  return nullptr;
}

}  // namespace

TEST_CASE("renderers: timing figures stay in the timing sections") {
  const ra::report::Report a = ra::test::every_verdict_report(10);
  const ra::report::Report b = ra::test::every_verdict_report(20);
  auto ja = ra::report::to_json(a), jb = ra::report::to_json(b);
  CHECK(ja != jb);
  ja.erase("timing");
  jb.erase("timing");
  constexpr auto replace = nlohmann::json::error_handler_t::replace;  // the sample holds bytes that are not UTF-8
  CHECK(ja.dump(-1, ' ', false, replace) == jb.dump(-1, ' ', false, replace));
  CHECK(ra::report::render_junit(a) == ra::report::render_junit(b));
  for (const auto render : {&ra::report::render_html, &ra::report::render_markdown}) {
    const std::string ra = render(a), rb = render(b);
    CHECK(ra != rb);
    CHECK(without_block(ra) == without_block(rb));
  }
}

TEST_CASE("renderers: every format names the same cheapest fix, by cost, not by candidate order") {
  // Two minimal fixes, the first in candidate order costing 1.52x and the second 0.29x: the HTML
  // once named the first while text and Markdown named the second.
  ra::report::Report r = ra::test::every_verdict_report(10);
  ra::report::FixSearch* f = sample_fix_search(r);
  REQUIRE(f != nullptr);
  REQUIRE(f->candidates.size() == 2);
  f->candidates[0].cost_ratio = 1.52, f->candidates[0].cost_low = 1.41, f->candidates[0].cost_high = 1.63;
  f->candidates[1].verdict = ra::report::Verdict::Reproducible;
  f->candidates[1].fixes_all = f->candidates[1].minimal = true;
  f->candidates[1].cost_ratio = 0.29, f->candidates[1].cost_low = 0.25, f->candidates[1].cost_high = 0.33;
  f->best = {0, 1};
  REQUIRE(ra::report::cheapest_fix(*f) == &f->candidates[1]);
  const std::string text = ra::report::render_text(r), md = ra::report::render_markdown(r);
  const std::string html = ra::report::render_html(r);
  // Named by what it changes in the failing configuration, then as --configs spells it.
  const std::string change = ra::report::fix_change_text(f->candidates[1], r.targets().front().configs[1].switches);
  CHECK(change.rfind("threads ", 0) == 0);
  CHECK(change.find(" -> 1") != std::string::npos);
  CHECK(text.find("cheapest: " + change + " (default+threads=1) at 0.29x (0.25-0.33) the run time of") !=
        std::string::npos);
  const auto with = [&](std::string arrow) {  // Markdown and HTML escape the ">" of "->"
    std::string s = change;
    s.replace(s.find("->"), 2, arrow);
    return s;
  };
  CHECK(md.find("cheapest fix " + with("-\\>") + " (`default+threads=1`)") != std::string::npos);
  CHECK(html.find("Cheapest minimal fix: " + with("-&gt;") + " (<code>default+threads=1</code>) at 0.29x") !=
        std::string::npos);
  for (const std::string* s : {&text, &md, &html}) CHECK(s->find("deterministic=on at 1.52") == std::string::npos);
  // JUnit keeps timing out of its bytes: it names every minimal fix, none as the cheapest.
  const std::string junit = ra::report::render_junit(r);
  CHECK(junit.find("minimal fixes: " + f->candidates[0].config + ", " + f->candidates[1].config) != std::string::npos);
  CHECK(junit.find("cheapest") == std::string::npos);
  // Rounds that straddle 1.0 or disagree by more than 2x price nothing (issue 43): every format says
  // so instead of a number, and no fix is called the cheapest.
  f->candidates[1].cost_low = 0.2, f->candidates[1].cost_high = 3.1;
  f->candidates[0].cost_low = 0.9;
  for (const auto render : {&ra::report::render_text, &ra::report::render_markdown, &ra::report::render_html}) {
    const std::string out = render(r);
    CHECK(out.find("not measurable on this machine now") != std::string::npos);
    CHECK(out.find("0.29x") == std::string::npos);
    CHECK(out.find("1.52x") == std::string::npos);
    CHECK(out.find("heapest fix") == std::string::npos);
    CHECK(out.find("cheapest:") == std::string::npos);
    CHECK(out.find("Cheapest minimal fix") == std::string::npos);
  }
  constexpr auto replace = nlohmann::json::error_handler_t::replace;  // the sample holds bytes that are not UTF-8
  CHECK(ra::report::to_json(r).dump(-1, ' ', false, replace).find("\"cost_measurable\":false") != std::string::npos);
  f->candidates[1].cost_low = 0.25, f->candidates[1].cost_high = 0.33;
  // Unmeasured fixes come after measured ones; among unmeasured, candidate order.
  f->candidates[1].cost_ratio.reset(), f->candidates[1].cost_low.reset(), f->candidates[1].cost_high.reset();
  CHECK(ra::report::cheapest_fix(*f) == &f->candidates[0]);
  f->candidates[0].cost_ratio.reset(), f->candidates[0].cost_low.reset(), f->candidates[0].cost_high.reset();
  CHECK(ra::report::cheapest_fix(*f) == &f->candidates[0]);
  f->best.clear();
  CHECK(ra::report::cheapest_fix(*f) == nullptr);
}

TEST_CASE("fix_change_text: a fix named by what it changes, never 'threads=4+threads=1'") {
  ra::report::FixCandidate fix;
  fix.config = "threads=4+threads=1";
  fix.toggles = {{"threads", "1"}};
  const std::vector<ra::report::SwitchValue> failing = {{"threads", "4", "4"}, {"deterministic", "", "off"}};
  CHECK(ra::report::fix_change_text(fix, failing) == "threads 4 -> 1");
  fix.toggles = {{"deterministic", "on"}, {"threads", "1"}};
  CHECK(ra::report::fix_change_text(fix, failing) == "deterministic off -> on, threads 4 -> 1");
  fix.toggles = {{"mkl_cbwr", "COMPATIBLE"}};
  CHECK(ra::report::fix_change_text(fix, failing) == "mkl_cbwr -> COMPATIBLE");
}

TEST_CASE("renderers: every format gives the same verdict and the same first root cause") {
  ra::report::Report r = ra::test::every_verdict_report(10);
  r.auto_repeats = ra::report::AutoRepeats{};
  const ra::report::Target& t = r.targets().front();
  const ra::report::RootCause* cause = nullptr;
  for (const auto& c : t.configs)
    if (c.trace && !c.trace->root_causes.empty() && cause == nullptr) cause = &c.trace->root_causes.front();
  REQUIRE(cause != nullptr);
  REQUIRE(!cause->source.empty());
  const std::string verdict = ra::report::verdict_text(r);
  const std::string text = ra::report::render_text(r), md = ra::report::render_markdown(r),
                    html = ra::report::render_html(r), junit = ra::report::render_junit(r),
                    json = ra::report::render_json(r);
  CHECK(text.find(fmt::format("verdict: {}", verdict)) != std::string::npos);
  CHECK(md.find(fmt::format("## repro-audit: {}", verdict)) != std::string::npos);
  CHECK(html.find(fmt::format("repro-audit: {} (exit {})", verdict, r.exit_code)) != std::string::npos);
  CHECK(junit.find(fmt::format("<property name=\"verdict\" value=\"{}\"/>", ra::report::verdict_text(t))) !=
        std::string::npos);
  CHECK(json.find(fmt::format("\"verdict\": \"{}\"", ra::report::to_string(r.verdict))) != std::string::npos);
  // The op and its source line, in every format (Markdown and HTML wrap the op in code).
  for (const std::string* s : {&text, &md, &html, &junit, &json}) {
    CHECK(s->find(cause->op) != std::string::npos);
    CHECK(s->find(cause->source) != std::string::npos);
  }
  // --repeats auto's rule is stated wherever the run is described.
  for (const std::string* s : {&text, &md, &html, &junit})
    CHECK(s->find("repeats: auto, 3 to 20 runs per configuration") != std::string::npos);
}

TEST_CASE("renderers: a fix search that found no fix says nothing about costs, which were not measured") {
  ra::report::Report r = ra::test::every_verdict_report(10);
  ra::report::FixSearch* f = sample_fix_search(r);
  REQUIRE(f != nullptr);
  for (auto& c : f->candidates) {
    c.verdict = ra::report::Verdict::Diverged;
    c.fixes_all = c.minimal = false;
    c.cost_ratio.reset();
    c.cost_low.reset();
    c.cost_high.reset();
    c.median_ms.reset();
  }
  f->best.clear();
  f->baseline_median_ms.reset();
  f->conclusion = "no combination of the candidate switches makes it reproducible";
  const std::string text = ra::report::render_text(r);
  CHECK(text.find("fix search from default (3 traced repeats per candidate):\n") != std::string::npos);
  CHECK(text.find("costs:") == std::string::npos);
  const size_t from = text.find("fix search from default");
  const std::string candidates = text.substr(from, text.find("=>", from) - from);
  CHECK(candidates.find(" \n") == std::string::npos);  // no padding left at the end of a candidate's line
  const std::string html = ra::report::render_html(r);
  CHECK(html.find("Nothing was timed: no candidate fixed it.") != std::string::npos);
  CHECK(html.find("not timed") == std::string::npos);
}

TEST_CASE("renderers: a downgrade is never the cheapest fix while another fix is not one, nor named without the word") {
  // deterministic=on is the cheaper fix (0.29x) but 310 ULP from float64 where default had 3;
  // threads=1 costs 1.52x and leaves the error as it was.
  ra::report::Report r = ra::test::every_verdict_report(10);
  ra::report::FixSearch* f = sample_fix_search(r);
  REQUIRE(f != nullptr);
  REQUIRE(f->candidates.size() == 2);
  REQUIRE(f->candidates[0].config == "default+deterministic=on");
  for (auto& c : f->candidates) c.verdict = ra::report::Verdict::Reproducible, c.fixes_all = c.minimal = true;
  f->candidates[0].cost_ratio = 0.29, f->candidates[0].cost_low = 0.25, f->candidates[0].cost_high = 0.33;
  f->candidates[1].cost_ratio = 1.52, f->candidates[1].cost_low = 1.41, f->candidates[1].cost_high = 1.63;
  f->best = {0, 1};
  f->conclusion = "threads=1 or deterministic=on (a downgrade) from default make it reproducible";
  ra::report::ReferenceError e;
  e.name = "output", e.dtype = "float32", e.numel = 64, e.max_ulp = 310;
  f->candidates[0].accuracy = ra::report::FixAccuracy{{e}, ra::report::AccuracyChange::Downgrade, "output", 310, 3};
  e.max_ulp = 3;
  f->candidates[1].accuracy = ra::report::FixAccuracy{{e}, ra::report::AccuracyChange::Unchanged, "output", 3, 3};
  REQUIRE(ra::report::cheapest_fix(*f) == &f->candidates[1]);
  CHECK(ra::report::cheapest_known(*f));  // the only fix that is no downgrade
  CHECK(ra::report::downgrades_passed_over(*f) == std::vector<const ra::report::FixCandidate*>{&f->candidates[0]});
  const std::string down = "max 310 ULP from float64 where default had 3: a downgrade";
  const std::string text = ra::report::render_text(r), md = ra::report::render_markdown(r),
                    html = ra::report::render_html(r), junit = ra::report::render_junit(r);
  CHECK(text.find("cheapest without a downgrade: threads ") != std::string::npos);
  CHECK(text.find("; error vs float64 unchanged (max 3 ULP)\n") != std::string::npos);
  const std::string det = ra::report::fix_change_text(f->candidates[0], r.targets().front().configs[1].switches);
  CHECK(text.find("not " + det + " (default+deterministic=on): " + down) != std::string::npos);
  CHECK(md.find("cheapest fix without a downgrade threads ") != std::string::npos);
  CHECK(md.find("not `default+deterministic=on`: " + down) != std::string::npos);
  CHECK(html.find("Cheapest minimal fix without a downgrade: threads ") != std::string::npos);
  CHECK(html.find("Not <code>default+deterministic=on</code>: " + down) != std::string::npos);
  CHECK(junit.find("minimal fixes: default+threads=1, default+deterministic=on (a downgrade)") != std::string::npos);
  // Every line that names deterministic=on as a fix says downgrade.
  for (const std::string* s : {&text, &md, &junit}) {
    size_t at = 0, named = 0;
    while ((at = s->find("deterministic=on", at)) != std::string::npos) {
      const size_t begin = s->rfind('\n', at) + 1, end = s->find('\n', at);
      const std::string line = s->substr(begin, end - begin);
      if (line.find("Python:") == std::string::npos && line.find("C++:") == std::string::npos) {
        ++named;
        CHECK_MESSAGE(line.find("downgrade") != std::string::npos, line);
      }
      at = end;
    }
    CHECK(named > 0);
  }
  // The JSON carries it, and reads back to the same lines.
  const auto j = ra::report::to_json(r);
  const ra::report::Report back = ra::report::report_from_json(j);
  CHECK(ra::report::render_text(back) == text);
  const ra::report::FixSearch* g = nullptr;
  for (const auto& c : back.targets().front().configs)
    if (c.fix_search) g = &*c.fix_search;
  REQUIRE(g != nullptr);
  REQUIRE(g->candidates[0].accuracy);
  CHECK(g->candidates[0].downgrade());
  CHECK(g->candidates[0].accuracy->errors.size() == 1);
  // All fixes downgrades: the cheapest is named, with the word.
  f->candidates[1].accuracy->change = ra::report::AccuracyChange::Downgrade;
  REQUIRE(ra::report::cheapest_fix(*f) == &f->candidates[0]);
  CHECK(ra::report::downgrades_passed_over(*f).empty());
  const std::string all = ra::report::render_text(r);
  const size_t cheapest = all.find("cheapest: " + det + " (default+deterministic=on)");
  REQUIRE(cheapest != std::string::npos);
  CHECK(all.substr(cheapest, all.find('\n', cheapest) - cheapest).find(down) != std::string::npos);
}
