// SPDX-License-Identifier: Apache-2.0
// The invariance report in each format (reports/invariance_render.cpp, invariance_fix_render.cpp):
// what a reviewer reads (issue 54 item 7): the runtime that ran an export archive, the advice as
// separate pieces, the fix table's snippet columns, the configuration's own forward pass beside
// the fixes' costs, and the lines the text has (largest difference, the trace's shapes) in
// Markdown and HTML too.
#include "reports/json_read.h"
#include "reports/render.h"

#include <doctest/doctest.h>

#include <string>

namespace {

using ra::report::Invariance;
using ra::report::InvarianceConfig;
using ra::report::InvarianceFixCandidate;

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

// A variant configuration of two classes: anchor 0 differs at size 4 (max abs 0.25, 3 ULP), its
// advice two sentences, its trace found in aten::linear.
InvarianceConfig variant() {
  InvarianceConfig c;
  c.config = "default";
  c.verdict = "variant";
  c.cells = {{1, "start", {{0, "output/logits", 0, "a", true, 0, 0}}},
             {4, "start", {{0, "output/logits", 0, "b", false, 0.25, 3}}}};
  c.classes = {{{1}, true, {}, {}}, {{4}, false, {}, {}}};
  c.advice = {"batch 1 is the odd one: never compare unbatched with batched results",
              "or bucket batches so that results you compare come from one class: {1} | {4}"};
  ra::report::RowTrace t;
  t.outcome = "found";
  t.size = 4;
  t.op = "aten::linear";
  t.inputs = {"float32[1x64]", "float32[32x64]"};
  t.outputs = {"float32[1x32]"};
  t.message = "the first op whose row differs: aten::linear at model.py:3";
  c.trace = t;
  return c;
}

ra::report::Report report(Invariance inv) {
  ra::report::Report r;
  inv.model = "m.pt2";
  inv.kind = "a torch.export archive";
  inv.device = "cpu";
  inv.sizes = "1,4";
  inv.outputs = {"output/logits"};
  inv.control = {true, "passed"};
  r.body.emplace<Invariance>(std::move(inv));
  ra::report::finalize(r);
  return r;
}

InvarianceFixCandidate candidate(const std::string& toggles, bool fixes) {
  InvarianceFixCandidate c;
  c.toggles = toggles;
  c.config = "default+" + toggles;
  c.stage = "single";
  c.verdict = fixes ? "invariant" : "variant";
  c.classes = fixes ? std::vector<ra::report::SizeClass>{{{1, 4}, true, {}, {}}}
                    : std::vector<ra::report::SizeClass>{{{1}, true, {}, {}}, {{4}, false, {}, {}}};
  c.fixes = fixes;
  c.cpp = "at::set_num_threads(1); // " + toggles;
  c.python = "torch.set_num_threads(1)  # " + toggles;
  return c;
}

}  // namespace

TEST_CASE("invariance_text: names the runtime that ran an export archive in every format, as run does") {
  Invariance inv;
  inv.runtime = "interpreter";
  inv.configs = {variant()};
  const auto r = report(inv);
  CHECK(ra::report::render_text(r).find("m.pt2 (a torch.export archive, runtime interpreter, cpu)") !=
        std::string::npos);
  CHECK(ra::report::render_markdown(r).find("(a torch.export archive, runtime interpreter, cpu)") != std::string::npos);
  CHECK(ra::report::render_html(r).find("(a torch.export archive, runtime interpreter, cpu)") != std::string::npos);
  const auto j = ra::report::to_json(r);
  CHECK(j["invariance"]["runtime"] == "interpreter");
  CHECK(std::get<Invariance>(ra::report::report_from_json(j).body).runtime == "interpreter");
  // Another kind has no runtime: no key, no words.
  Invariance script;
  script.configs = {variant()};
  const auto s = report(script);
  CHECK_FALSE(ra::report::to_json(s)["invariance"].contains("runtime"));
  CHECK(ra::report::render_text(s).find("runtime") == std::string::npos);
}

TEST_CASE("invariance_html_section: each piece of advice its own item, as the Markdown's bullets") {
  Invariance inv;
  inv.configs = {variant()};
  const auto r = report(inv);
  const std::string html = ra::report::render_html(r);
  CHECK(html.find("<ul class=\"advice\"><li>batch 1 is the odd one: never compare unbatched with batched "
                  "results</li><li>or bucket batches") != std::string::npos);
  CHECK(count(ra::report::render_markdown(r), "\n- **default**: ") == 2);
}

TEST_CASE("invariance_markdown and html: the largest difference from batch 1 and the trace's shapes, as the text") {
  Invariance inv;
  inv.configs = {variant()};
  const auto r = report(inv);
  const std::string worst =
      "largest difference from batch 1: max abs 0.25, 3 ULP (size 4, start, anchor 0, "
      "output/logits)";
  const std::string shapes =
      "aten::linear inputs float32[1x64], float32[32x64] -&gt; outputs float32[1x32] (anchor 0 alone vs row 0 of a "
      "batch of 4)";
  CHECK(ra::report::render_text(r).find(worst) != std::string::npos);
  const std::string md = ra::report::render_markdown(r);
  CHECK(md.find(worst) != std::string::npos);
  CHECK(md.find("aten::linear inputs float32\\[1x64\\], float32\\[32x64\\] -\\> outputs float32\\[1x32\\]") !=
        std::string::npos);
  const std::string html = ra::report::render_html(r);
  CHECK(html.find(worst) != std::string::npos);
  CHECK(html.find(shapes) != std::string::npos);
}

TEST_CASE("invariance_fix_html and markdown: the snippet columns only where a switch fixes it, filled for it") {
  Invariance inv;
  inv.configs = {variant()};
  ra::report::InvarianceFix f;
  f.from = "default";
  f.sizes = {1, 4};
  f.baseline_verdict = "not run";
  f.candidates = {candidate("deterministic=on", false), candidate("mkl_cbwr=COMPATIBLE", false)};
  f.conclusion = "no switch tried makes it invariant";
  inv.fix = f;
  {
    const auto r = report(inv);
    const std::string html = ra::report::render_html(r), md = ra::report::render_markdown(r);
    CHECK(html.find("<th>C++</th>") == std::string::npos);
    CHECK(html.find("<th>Python</th>") == std::string::npos);
    CHECK(md.find("| switch | outcome |\n|---|---|\n") != std::string::npos);
    CHECK(md.find("| deterministic=on | variant: {1} \\| {4} |\n") != std::string::npos);
  }
  inv.fix->candidates.push_back(candidate("threads=1", true));
  inv.fix->candidates.back().forward_ms = 2.5;
  inv.fix->candidates.back().cost_ratio = 1.25;
  inv.fix->baseline_forward_ms = 2.0;
  inv.fix->conclusion = "threads=1 makes it invariant";
  const auto r = report(inv);
  const std::string html = ra::report::render_html(r), md = ra::report::render_markdown(r);
  CHECK(html.find("<th>C++</th><th>Python</th>") != std::string::npos);
  CHECK(html.find("<td><code>at::set_num_threads(1); // threads=1</code></td>") != std::string::npos);
  CHECK(count(html, "<td>-</td><td>-</td>") == 2);  // the two that do not fix it
  CHECK(md.find("| switch | outcome | Python |") != std::string::npos);
  CHECK(md.find("| threads=1 | invariant: fixes it | torch.set\\_num\\_threads(1)  \\# threads=1 |") !=
        std::string::npos);
  // The fix-cost table: the configuration's own forward pass beside the fix's.
  CHECK(html.find("<td>default (itself)</td><td>2.000 ms</td>") != std::string::npos);
  CHECK(html.find("<td>threads=1</td><td>2.500 ms</td>") != std::string::npos);
  CHECK(md.find("- fix search: forward pass 2.000 ms under default") != std::string::npos);
  CHECK(md.find("- fix search: threads=1: forward pass 2.500 ms, cost") != std::string::npos);
}
