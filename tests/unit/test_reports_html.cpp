// SPDX-License-Identifier: Apache-2.0
// render_html: sections, escaping, the timing markers, and counts that match the model. It also
// writes two pages (and their JSON) into RA_REPORT_DIR, where the html_chromium test loads them in
// a browser: every verdict, and a report whose names and messages try to inject markup.
#include "reports/render.h"
#include "tests/unit/report_samples.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

namespace {

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + needle.size())) ++n;
  return n;
}

constexpr const char* kBegin = "\n<!-- timing:begin -->\n";
constexpr const char* kEnd = "\n<!-- timing:end -->\n";

// The page without its timing block (markers included).
std::string without_timing(const std::string& page) {
  const size_t begin = page.find(kBegin);
  const size_t end = page.find(kEnd);
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  REQUIRE(begin < end);
  return page.substr(0, begin + 1) + page.substr(end + std::string(kEnd).size());
}

std::string timing_block(const std::string& page) {
  const size_t begin = page.find(kBegin);
  const size_t end = page.find(kEnd);
  REQUIRE(begin < end);
  return page.substr(begin, end - begin);
}

// Names and messages that would run script or break out of an attribute if written unescaped.
ra::report::Report hostile_report() {
  auto r = ra::test::every_verdict_report(10);
  auto& t = r.targets().front();
  t.name = "<script>console.log(\"injected\")</script><img src=x onerror=console.log(1)>'\"&.pt";
  t.configs[2].message = "</pre><script>console.log(2)</script>";
  t.configs[1].fix_search->candidates[0].cpp = "a < b && c > \"d\"; // </code></pre><script>console.log(3)</script>";
  t.configs[1].trace->root_causes[0].source = "model.py:5: x = y</td><td onclick=alert(1)>";
  r.command = {"repro-audit", "run", "it's <model>.pt"};
  r.allowlist_expired = {"entry 0 (<b>bold</b>) expired on 2020-01-01"};
  return r;
}

void write_pair(const std::string& stem, const ra::report::Report& r) {
  std::filesystem::create_directories(RA_REPORT_DIR);
  const std::string base = std::string(RA_REPORT_DIR) + "/" + stem;
  std::ofstream(base + ".json", std::ios::binary) << ra::report::render_json(r);
  std::ofstream(base + ".html", std::ios::binary) << ra::report::render_html(r);
}

}  // namespace

TEST_CASE("render_html: every section, in order, with its id") {
  const auto r = ra::test::every_verdict_report(10);
  const std::string h = ra::report::render_html(r);
  CHECK(h.rfind("<!DOCTYPE html>\n<html lang=\"en\">\n", 0) == 0);
  CHECK(h.find("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
               "script-src 'unsafe-inline'; img-src data:\">") != std::string::npos);
  size_t last = 0;
  for (const char* id : {"verdict", "environment", "matrix", "root-causes", "fixes", "census", "details", "timing"}) {
    CAPTURE(id);
    const size_t at = h.find(std::string("<section id=\"") + id + "\"");
    REQUIRE(at != std::string::npos);
    CHECK(at > last);
    CHECK(count(h, std::string("<section id=\"") + id + "\"") == 1);
    last = at;
  }
  CHECK(h.find("<section id=\"verdict\" class=\"banner v-diverged\" data-verdict=\"diverged\" data-exit-code=\"1\" "
               "data-targets=\"1\" data-cells=\"6\">") != std::string::npos);
  // One target of each verdict count, one cell of each verdict.
  CHECK(h.find("<li class=\"target-count\" data-verdict=\"diverged\" data-count=\"1\">") != std::string::npos);
  for (const char* v : {"reproducible", "diverged", "raised", "crashed", "timeout", "skipped"})
    CHECK(h.find(std::string("<li class=\"cell-count\" data-verdict=\"") + v + "\" data-count=\"1\">") !=
          std::string::npos);
  CHECK(h.find("<p class=\"conclusion\">Deterministic algorithms fix it.</p>") != std::string::npos);
  CHECK(h.find("<code class=\"python\">torch.use_deterministic_algorithms(True)</code>") != std::string::npos);
  CHECK(h.find("No alert census") != std::string::npos);
  // The page's own script and stylesheet are inlined, once each; nothing is loaded.
  CHECK(count(h, "<script") == 1);
  CHECK(count(h, "<style") == 1);
  CHECK(h.find("data-js") != std::string::npos);
  CHECK(h.find(" src=") == std::string::npos);
  CHECK(h.find("http://") == std::string::npos);
  CHECK(h.find("https://") == std::string::npos);
  write_pair("unit-every-verdict", r);
}

TEST_CASE("render_html: names, messages, snippets and stderr are escaped") {
  const auto r = hostile_report();
  const std::string h = ra::report::render_html(r);
  // Only the page's own <script> element; no injected tags or attributes.
  CHECK(count(h, "<script") == 1);
  CHECK(h.find("<img") == std::string::npos);
  CHECK(h.find("<td onclick") == std::string::npos);
  CHECK(h.find("<b>bold") == std::string::npos);
  const std::string name =
      "&lt;script&gt;console.log(&quot;injected&quot;)&lt;/script&gt;&lt;img src=x "
      "onerror=console.log(1)&gt;&#39;&quot;&amp;.pt";
  CHECK(h.find("data-target=\"" + name + "\"") != std::string::npos);
  CHECK(h.find("<strong>" + name + "</strong>") != std::string::npos);
  CHECK(h.find("<p class=\"message\">&lt;/pre&gt;&lt;script&gt;console.log(2)&lt;/script&gt;</p>") !=
        std::string::npos);
  CHECK(h.find("a &lt; b &amp;&amp; c &gt; &quot;d&quot;; // &lt;/code&gt;&lt;/pre&gt;") != std::string::npos);
  CHECK(h.find("$ repro-audit run &#39;it&#39;\\&#39;&#39;s &lt;model&gt;.pt&#39;") != std::string::npos);
  // stderr: a control character and a byte that is not UTF-8 become U+FFFD; tab and newline stay.
  // A control character is U+FFFD; a byte that is not UTF-8 shows as \xNN, as in every format.
  CHECK(h.find("<pre>bell\xEF\xBF\xBD"
               "bad\\xff"
               "byte\nsegfault\tin child\n</pre>") != std::string::npos);
  // No timing marker can be forged through model text.
  auto forged = r;
  forged.targets().front().name = "<!-- timing:begin -->";
  CHECK(count(ra::report::render_html(forged), "<!-- timing:begin -->") == 1);
  write_pair("unit-hostile", r);
}

TEST_CASE("render_html: every clock figure is inside the timing markers") {
  const std::string a = ra::report::render_html(ra::test::every_verdict_report(10));
  const std::string b = ra::report::render_html(ra::test::every_verdict_report(20));
  CHECK(count(a, "<!-- timing:begin -->") == 1);
  CHECK(count(a, "<!-- timing:end -->") == 1);
  CHECK(a != b);
  CHECK(without_timing(a) == without_timing(b));
  CHECK(timing_block(a) != timing_block(b));
  const std::string t = timing_block(a);
  CHECK(t.find("<section id=\"timing\">") != std::string::npos);
  CHECK(t.find("</section>") != std::string::npos);
  // wall_ms 10: the trial times, the fix's median (12.5 ms) and cost (1.25x) and the cheapest fix.
  CHECK(t.find("Audit wall time: <strong>10.0 ms</strong>") != std::string::npos);
  CHECK(t.find("<tr class=\"fix-cost\" data-fix=\"t0-c1-f0\" data-cost=\"1.25\">") != std::string::npos);
  CHECK(t.find("<td>12.5 ms</td><td>1.25x (1.15-1.35)</td>") != std::string::npos);
  CHECK(t.find("Cheapest minimal fix: deterministic -&gt; on (<code>default+deterministic=on</code>) at 1.25x "
               "(1.15-1.35) the run time of default.") != std::string::npos);
  // Outside: the body up to the script (the stylesheet has sizes like 12.5px).
  std::string outside = without_timing(a);
  outside = outside.substr(outside.find("<body"));
  outside = outside.substr(0, outside.find("<script>"));
  CHECK(outside.find("1.25") == std::string::npos);
  CHECK(outside.find("12.5") == std::string::npos);
  CHECK(outside.find("Cheapest") == std::string::npos);
  // The fix table outside keeps an empty cost cell per candidate, for the script to fill.
  CHECK(outside.find("<td class=\"cost\" data-fix=\"t0-c1-f0\"></td>") != std::string::npos);
}

TEST_CASE("render_html: one heat-map cell per target x configuration, coloured by verdict") {
  auto r = ra::test::every_verdict_report(10);
  auto& models = std::get<ra::report::RunBody>(r.body).targets;
  auto second = models.front();
  second.common.name = "second.pt";
  models.push_back(second);
  auto third = second;
  third.common.name = "third.pt";
  third.common.configs.resize(2);  // det, default: a shorter row
  models.push_back(third);
  const std::string h = ra::report::render_html(r);
  CHECK(count(h, "<tr class=\"hm-row\"") == 3);
  CHECK(count(h, "<td class=\"hm-cell") == 6 + 6 + 2);
  CHECK(count(h, "<td class=\"hm-none\"></td>") == 4);
  CHECK(count(h, "<td class=\"hm-cell\" data-verdict=\"diverged\"") == 3);
  CHECK(count(h, "<td class=\"hm-cell\" data-verdict=\"skipped\"") == 2);
  // Each cell: a tooltip and a link to its configuration's details, which exist.
  CHECK(count(h, "role=\"img\"><title>") == 14);
  CHECK(h.find("<a href=\"#t2-c1\">") != std::string::npos);
  CHECK(h.find("<div class=\"config\" id=\"t2-c1\" data-verdict=\"diverged\">") != std::string::npos);
  // A diverged cell's intensity follows its rate (0.35 + 0.65 x 0.5) and its label is the repeats.
  CHECK(h.find("fill=\"#c0392b\" fill-opacity=\"0.68\"/><text x=\"32\" y=\"13\" text-anchor=\"middle\" "
               "fill=\"#ffffff\">1/2</text>") != std::string::npos);
  CHECK(h.find("<th scope=\"col\" class=\"cfg\">cudnn-det</th>") != std::string::npos);
}

TEST_CASE("render_html: root causes, fix candidates, tensors and failures as many as in the model") {
  auto r = ra::test::every_verdict_report(10);
  r.targets()[0].configs[1].trace->root_causes[0].fixed_by = {0};
  const std::string h = ra::report::render_html(r);
  CHECK(count(h, "<tr class=\"root-cause\"") == 2);  // the diverged configuration's, and where strict parts from det
  CHECK(count(h, "<div class=\"trace config-cause\"") == 2);
  CHECK(h.find("<tr class=\"root-cause\" data-direction=\"forward\" data-op=\"aten::sum\"><td class=\"num\">#3</td>") !=
        std::string::npos);
  CHECK(h.find("What separates them: deterministic off -&gt; on.") != std::string::npos);
  CHECK(h.find("<p class=\"note\">no op can be named: other has no traced repeat.</p>") != std::string::npos);
  CHECK(h.find("<tr class=\"root-cause\" data-direction=\"backward\" data-op=\"aten::index_add\"><td "
               "class=\"num\">#77</td>") != std::string::npos);
  CHECK(h.find("module <code>enc</code><br>source <code>model.py:5</code><br>in <code>IndexAddBackward0</code> of "
               "<code>aten::index_add</code>") != std::string::npos);
  CHECK(h.find("<td><a href=\"#t0-c1-f0\"><code>default+deterministic=on</code></a></td></tr>") != std::string::npos);
  CHECK(count(h, "<tr class=\"split\">") == 1);
  CHECK(count(h, "<tr class=\"fix-candidate") == 2);
  CHECK(count(h, "<tr class=\"fix-candidate minimal\"") == 1);
  CHECK(count(h, "<div class=\"snippet\"") == 1);
  CHECK(count(h, "<tr class=\"tensor diverged-tensor\">") == 1);
  CHECK(count(h, "<tr class=\"tensor dependence-tensor\">") == 1);
  CHECK(count(h, "<tr class=\"tensor replay-tensor\">") == 1);
  CHECK(h.find("<td class=\"num\">3/8</td><td>[2]</td><td class=\"num\">1e-06</td><td class=\"num\">3e-07</td><td "
               "class=\"num\">2</td>"
               "<td class=\"num\">0</td><td class=\"num\"><span title=\"rtol 1.3e-06, atol 1e-05\">1</span></td>") !=
        std::string::npos);
  CHECK(count(h, "<div class=\"trial-failure\"") == 1);
  CHECK(count(h, "<details class=\"target\"") == 1);
  CHECK(h.find("<div class=\"replay\" data-verdict=\"diverged\">") != std::string::npos);
}

TEST_CASE("render_html: the alert census and the probes' disagreements") {
  ra::report::Report r;
  ra::report::ProbesBody probes;
  for (const char* name : {"index_add", "scatter|reduce", "mm", "conv"}) {
    ra::report::Target t;
    t.name = name;
    ra::report::ProbeFacts facts;
    facts.family = "fam";
    t.configs.resize(1);
    t.configs[0].name = "default";
    probes.targets.push_back({t, facts});
  }
  probes.targets[1].facts.disagreements = {"diverged without an alert", "not documented"};
  ra::report::Census c;
  c.config = "det-warn";
  c.alerted_diverged = {"index_add"};
  c.silent_diverged = {"scatter|reduce"};
  c.stable = {"mm", "conv"};
  probes.census = c;
  r.body = probes;
  const std::string h = ra::report::render_html(r);
  CHECK(h.find("<td class=\"census-class\" data-class=\"alerted_diverged\" data-count=\"1\">") != std::string::npos);
  CHECK(h.find("<td class=\"census-class\" data-class=\"alerted_stable\" data-count=\"0\">") != std::string::npos);
  CHECK(h.find("<td class=\"census-class\" data-class=\"silent_diverged\" data-count=\"1\">") != std::string::npos);
  CHECK(h.find("<td class=\"census-class\" data-class=\"stable\" data-count=\"2\">") != std::string::npos);
  CHECK(h.find("<td class=\"census-class\" data-class=\"not_run\" data-count=\"0\">") != std::string::npos);
  CHECK(h.find("<a class=\"census-name\" href=\"#t1\">scatter|reduce</a>") != std::string::npos);
  CHECK(count(h, "<li class=\"disagreement\">") == 2);
  CHECK(count(h, "<tr class=\"probe-fact\">") == 4);
  CHECK(h.find("<th scope=\"col\">family</th>") != std::string::npos);
}

TEST_CASE("render_html: the environment as nested tables, in key order") {
  ra::report::Report r;
  r.environment = nlohmann::ordered_json::parse(R"({
    "version": "x<y",
    "torch": {"version": "2.11.0", "cuda_compiled": true},
    "cuda": {"devices": [{"name": "H100", "sm_count": 132}, {"name": "A100", "sm_count": 108}], "driver": null},
    "env_vars": {"Z_LAST": null, "A_FIRST": "1"}
  })");
  const std::string h = ra::report::render_html(r);
  CHECK(h.find("<div class=\"env-group\"><h3>general</h3><table class=\"env\"><tbody><tr><th scope=\"row\">version</th>"
               "<td>x&lt;y</td></tr></tbody></table></div>") != std::string::npos);
  CHECK(h.find("<th scope=\"row\">cuda_compiled</th><td>true</td>") != std::string::npos);
  CHECK(
      h.find("<table class=\"env-list\"><thead><tr><th>name</th><th>sm_count</th></tr></thead><tbody><tr><td>H100</td>"
             "<td>132</td></tr><tr><td>A100</td><td>108</td></tr></tbody></table>") != std::string::npos);
  CHECK(h.find("<th scope=\"row\">driver</th><td><span class=\"none\">not set</span></td>") != std::string::npos);
  CHECK(h.find("Z_LAST") < h.find("A_FIRST"));
  CHECK(h.find("data-key=\"torch\"") < h.find("data-key=\"cuda\""));
}
