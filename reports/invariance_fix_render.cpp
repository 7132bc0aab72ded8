// SPDX-License-Identifier: Apache-2.0
// The invariance fix search in words, for every format: the conclusion, then one line (row) per
// candidate switch that ran: what it gave over the sizes swept again, and for a fix how a program
// sets it; the candidates that did not run (a switch with no effect on the device) share one line.
// Costs are clock figures: in text as `cost 1.05x` (render.h allows cost ratios there), in
// Markdown and HTML only inside the timing block (the *_timing parts), in JUnit nowhere.
#include "reports/escape.h"
#include "reports/invariance_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>

namespace ra::report {
namespace {

using escaped::esc;
using escaped::ln;
using escaped::md;
using escaped::xml;

// "invariant: fixes it", "variant: {1} | {2}", "variant on anchor 0: {1} | {2}" (its screen), "not run:
// no effect on cpu", "crashed: ...".
std::string outcome(const InvarianceFixCandidate& c) {
  if (c.verdict == "not run" || c.verdict == "crashed") return fmt::format("{}: {}", c.verdict, c.message);
  // With the float64 referee, a fix says what it did to the rows' error (issue 53): a downgrade is
  // never called a fix without that word.
  if (c.fixes && c.downgrade) return "invariant, but " + c.accuracy;
  if (c.fixes) return c.accuracy.empty() ? "invariant: fixes it" : "invariant: fixes it, " + c.accuracy;
  const std::string on = c.anchors == 1  ? " on anchor 0"
                         : c.anchors > 1 ? fmt::format(" on anchors 0…{}", c.anchors - 1)
                                         : "";
  return fmt::format("{}{}: {}", c.verdict, on, classes_text(c.classes));
}

std::string head(const Invariance& inv, const InvarianceFix& f) {
  const bool covered = !inv.configs.empty() && tried_sizes(inv.configs.front()) == f.sizes;
  return fmt::format("fix search from {} over {} {} ({})", f.from, inv.axis == "verify" ? "block lengths" : "sizes",
                     fmt::join(f.sizes, ","),
                     f.baseline_verdict != "not run" ? "rerun there: " + f.baseline_verdict
                     : covered                       ? "its first sweep covered them"
                                                     : "not swept again: no switch came out invariant");
}

// "fix search: 41.2 s, 1.74 times the first sweep's worker (23.7 s)"; "" without the figures.
std::string search_time_text(const InvarianceFix& f) {
  if (!f.search_ms) return "";
  std::string out = fmt::format("fix search: {:.1f} s", *f.search_ms / 1000);
  if (f.first_sweep_ms && *f.first_sweep_ms > 0)
    out += fmt::format(", {:.2f}x the first sweep's worker ({:.1f} s)", *f.search_ms / *f.first_sweep_ms,
                       *f.first_sweep_ms / 1000);
  return out;
}

std::string cost(const InvarianceFixCandidate& c) {
  return c.cost_ratio ? round_cost_text(c.cost_ratio, c.cost_low, c.cost_high) : std::string("-");
}

bool candidate_ran(const InvarianceFixCandidate& c) { return c.verdict != "not run"; }

// The snippet columns (C++, Python) only where some switch fixes it: they say how a program sets a
// fix, and were empty in every row when none did (issue 54).
bool any_fix(const InvarianceFix& f) {
  return std::any_of(f.candidates.begin(), f.candidates.end(), [](const auto& c) { return c.fixes; });
}

// The candidates that did not run, by reason, in one line: "cublas.fp16_reduction=off,
// cudnn.benchmark=off (no effect on cpu)"; "" when every candidate ran.
std::string not_run_text(const InvarianceFix& f) {
  std::vector<std::pair<std::string, std::vector<std::string>>> by_reason;  // in candidate order
  for (const auto& c : f.candidates) {
    if (candidate_ran(c)) continue;
    auto it = std::find_if(by_reason.begin(), by_reason.end(), [&](const auto& g) { return g.first == c.message; });
    if (it == by_reason.end()) it = by_reason.insert(by_reason.end(), {c.message, {}});
    it->second.push_back(c.toggles);
  }
  std::vector<std::string> parts;
  for (const auto& [reason, toggles] : by_reason)
    parts.push_back(fmt::format("{} ({})", fmt::join(toggles, ", "), reason));
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace

std::string invariance_fix_text(const Invariance& inv) {
  if (!inv.fix) return "";
  const InvarianceFix& f = *inv.fix;
  std::string out = fmt::format("{}\n  {}\n", ln(head(inv, f)), ln(f.conclusion));
  for (const auto& c : f.candidates) {
    if (!candidate_ran(c)) continue;
    out += fmt::format("  {}: {}{}\n", ln(c.toggles), ln(outcome(c)), c.cost_ratio ? ", cost " + cost(c) : "");
    if (c.fixes) out += fmt::format("    C++: {}\n    Python: {}\n", ln(c.cpp), ln(c.python));
  }
  if (const std::string skipped = not_run_text(f); !skipped.empty()) out += fmt::format("  not run: {}\n", ln(skipped));
  return out;
}

std::string invariance_fix_markdown(const Invariance& inv) {
  if (!inv.fix) return "";
  const InvarianceFix& f = *inv.fix;
  const bool snippets = any_fix(f);
  std::string out = fmt::format("\n\n### {}\n\n{}\n\n| switch | outcome |{}\n|---|---|{}\n", md(head(inv, f)),
                                md(f.conclusion), snippets ? " Python |" : "", snippets ? "---|" : "");
  for (const auto& c : f.candidates)
    if (candidate_ran(c))
      out += fmt::format("| {} | {} |{}\n", md(c.toggles), md(outcome(c)),
                         !snippets ? ""
                         : c.fixes ? " " + md(c.python) + " |"
                                   : " - |");
  if (const std::string skipped = not_run_text(f); !skipped.empty()) out += fmt::format("\nNot run: {}\n", md(skipped));
  return out;
}

std::string invariance_fix_markdown_timing(const Invariance& inv) {
  if (!inv.fix) return "";
  std::string out;
  if (inv.fix->baseline_forward_ms)
    out += fmt::format("\n- fix search: forward pass {:.3f} ms under {}", *inv.fix->baseline_forward_ms,
                       md(inv.fix->from));
  for (const auto& c : inv.fix->candidates)
    if (c.forward_ms)
      out += fmt::format("\n- fix search: {}: forward pass {:.3f} ms, cost {}", md(c.toggles), *c.forward_ms, cost(c));
  if (const std::string t = search_time_text(*inv.fix); !t.empty()) out += "\n- " + md(t);
  return out;
}

std::string invariance_fix_text_timing(const Invariance& inv) {
  if (!inv.fix) return "";
  const std::string t = search_time_text(*inv.fix);
  return t.empty() ? "" : "timing (" + t + ")\n";
}

std::string invariance_fix_html(const Invariance& inv) {
  if (!inv.fix) return "";
  const InvarianceFix& f = *inv.fix;
  std::string out = fmt::format("<section id=\"invariance-fix\">\n<h2>{}</h2>\n<p class=\"conclusion\">{}</p>\n",
                                esc(head(inv, f)), esc(f.conclusion));
  const bool snippets = any_fix(f);
  out +=
      fmt::format("<table class=\"invariance-fix\"><thead><tr><th>switch</th><th>outcome</th>{}</tr></thead><tbody>\n",
                  snippets ? "<th>C++</th><th>Python</th>" : "");
  for (const auto& c : f.candidates)
    if (candidate_ran(c))
      out += fmt::format(
          "<tr data-toggles=\"{}\" data-verdict=\"{}\"{}><td>{}</td><td>{}</td>{}</tr>\n", esc(c.toggles),
          esc(c.verdict), c.fixes ? " data-fixes=\"true\"" : "", esc(c.toggles), esc(outcome(c)),
          !snippets ? ""
          : c.fixes ? fmt::format("<td><code>{}</code></td><td><code>{}</code></td>", esc(c.cpp), esc(c.python))
                    : std::string("<td>-</td><td>-</td>"));
  out += "</tbody></table>\n";
  if (const std::string skipped = not_run_text(f); !skipped.empty())
    out += fmt::format("<p class=\"fix-not-run\">Not run: {}.</p>\n", esc(skipped));
  return out + "</section>\n";
}

std::string invariance_fix_html_timing(const Invariance& inv) {
  if (!inv.fix) return "";
  std::string out = fmt::format(
      "<h3>Invariance fix costs (forward passes against {})</h3>\n<table class=\"fix-costs\"><thead><tr>"
      "<th>candidate</th><th>forward pass</th><th>cost</th></tr></thead><tbody>\n",
      esc(inv.fix->from));
  // The configuration's own forward pass first: what each cost is measured against (issue 54).
  if (inv.fix->baseline_forward_ms)
    out += fmt::format(
        "<tr data-toggles=\"\" class=\"reference\"><td>{} (itself)</td><td>{:.3f} ms</td><td>1x</td></tr>\n",
        esc(inv.fix->from), *inv.fix->baseline_forward_ms);
  for (const auto& c : inv.fix->candidates)
    if (c.forward_ms)
      out += fmt::format("<tr data-toggles=\"{}\"><td>{}</td><td>{:.3f} ms</td><td>{}</td></tr>\n", esc(c.toggles),
                         esc(c.toggles), *c.forward_ms, esc(cost(c)));
  out += "</tbody></table>\n";
  if (const std::string t = search_time_text(*inv.fix); !t.empty()) out += fmt::format("<p>{}.</p>\n", esc(t));
  return out;
}

std::string invariance_fix_junit_case(const Invariance& inv, int& tests, int& failures) {
  if (!inv.fix) return "";
  const InvarianceFix& f = *inv.fix;
  bool fixed = false;
  for (const auto& c : f.candidates) fixed = fixed || c.fixes;
  ++tests;
  // A failure when no switch fixes it (the rows still diverge across batches): the message says
  // which class to pad or bucket to.
  if (!fixed) ++failures;
  const std::string name = xml("fix search from " + f.from);
  if (fixed) return fmt::format("    <testcase classname=\"invariance.{}\" name=\"{}\"/>\n", xml(inv.model), name);
  return fmt::format(
      "    <testcase classname=\"invariance.{}\" name=\"{}\">\n      <failure type=\"diverged\" message=\"{}\"/>\n"
      "    </testcase>\n",
      xml(inv.model), name, xml(f.conclusion));
}

}  // namespace ra::report
