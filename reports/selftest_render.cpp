// SPDX-License-Identifier: Apache-2.0
// A self-test's report in words (reports/selftest_model.h): the text summary, the Markdown summary,
// the HTML section that stands in place of the verdict banner (its report has no targets), and its
// JUnit suite, one test case per check.
#include "reports/escape.h"
#include "reports/render.h"
#include "reports/render_parts.h"
#include "reports/selftest_model.h"

#include <fmt/format.h>

namespace ra::report {
namespace {

using escaped::esc;
using escaped::ln;
using escaped::md;

}  // namespace

std::string selftest_text(const Report& r, const SelfTest& self) {
  std::string out = fmt::format("repro-audit selftest on {}\n", ln(self.device));
  for (const auto& c : self.checks)
    out += fmt::format("  {:<4}  {:<11}  {}\n", c.passed ? "pass" : "FAIL", ln(c.name), ln(c.evidence));
  out += render_baseline_text(r);  // `compare` of two self-tests: how their environments differ
  out += fmt::format("selftest: {} (exit {})\n", ln(selftest_summary(self)), r.exit_code);
  return out;
}

std::string selftest_markdown(const Report& r, const SelfTest& self) {
  std::string out = fmt::format("## repro-audit selftest on {}: {} (exit {})\n\n", md(self.device),
                                md(selftest_summary(self)), r.exit_code);
  out += "| check | result | evidence |\n|---|---|---|\n";
  for (const auto& c : self.checks)
    out += fmt::format("| {} | {} | {} |\n", md(c.name), c.passed ? "pass" : "**FAIL**", md(c.evidence));
  return out;
}

// A self-test's checks, in place of the verdict banner (its report has no targets).
std::string selftest_html_section(const Report& r, const SelfTest& self) {
  std::string out;
  const bool passed = r.exit_code == 0;
  out += fmt::format(
      "<section id=\"verdict\" class=\"banner v-{}\" data-verdict=\"{}\" data-selftest=\"{}\" "
      "data-exit-code=\"{}\" data-targets=\"0\" data-cells=\"0\">\n",
      passed ? "reproducible" : "diverged", to_string(r.verdict), passed ? "passed" : "failed", r.exit_code);
  out += fmt::format("<h1>selftest on {} <span class=\"exit\">exit {}: {}</span></h1>\n", esc(self.device), r.exit_code,
                     esc(selftest_summary(self)));
  out += "<table class=\"selftest\"><thead><tr><th>check</th><th>result</th><th>evidence</th></tr></thead><tbody>\n";
  for (const auto& c : self.checks)
    out += fmt::format("<tr data-check=\"{0}\" data-passed=\"{1}\"><td>{0}</td><td>{2}</td><td>{3}</td></tr>\n",
                       esc(c.name), c.passed ? "true" : "false", c.passed ? "pass" : "<strong>FAIL</strong>",
                       esc(c.evidence));
  return out + "</tbody></table>\n</section>\n";
}

std::string selftest_junit(const SelfTest& self, junit::Counts& all) {
  junit::Counts counts;
  std::string cases;
  for (const auto& c : self.checks) {
    const junit::Outcome o = c.passed ? junit::Outcome{} : junit::Outcome{"failure", "selftest", c.evidence, ""};
    counts.add(o);
    cases += junit::testcase("selftest", c.name, o, c.passed ? c.evidence : "");
  }
  all.add(counts);
  std::string suite = fmt::format("  <testsuite name=\"selftest\" {}>\n    <properties>\n", counts.attributes());
  suite += junit::property("device", self.device);
  return suite + "    </properties>\n" + cases + "  </testsuite>\n";
}

}  // namespace ra::report
