// SPDX-License-Identifier: Apache-2.0
// The invariance report in words: the text summary, Markdown, the HTML section and JUnit suites.
// Every renderer says the same things from the same helpers: the classes of sizes, position and
// warm-up dependence apart from size dependence, the largest difference from batch 1, the advice,
// and the negative control. Clock figures come last (text) or inside the timing block.
#include "reports/escape.h"
#include "reports/invariance_model.h"
#include "reports/render.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace ra::report {
namespace {

using escaped::esc;
using escaped::ln;
using escaped::md;
using escaped::xml;

// "tokens 31…32" (from 1) for the block of `size` tokens that starts at token `start` (from 0).
std::string block_place(int64_t start, int64_t size) {
  return size == 1 ? fmt::format("token {}", start + 1) : fmt::format("tokens {}…{}", start + 1, start + size);
}

// The largest difference from the reference over every cell but the warm-up's, in words.
std::string worst_text(const InvarianceConfig& c) {
  const RowComparison* worst = nullptr;
  int64_t at = 0, start = -1;
  std::string placement;
  for (const auto& cell : c.cells) {
    if (cell.placement == std::string("second-call")) continue;
    for (const auto& r : cell.rows)
      if (!r.equal && (worst == nullptr || (std::isfinite(r.max_abs) && !(r.max_abs <= worst->max_abs))))
        worst = &r, at = cell.size, start = cell.start, placement = cell.placement;
  }
  if (worst == nullptr) return "";
  const std::string ulp =
      std::isfinite(worst->max_ulp) ? fmt::format("{:.0f} ULP", worst->max_ulp) : "ULP not measurable";
  if (placement == "block")
    return fmt::format("max abs {:.3g}, {} (block of {} tokens{}, its token {}, anchor {}, {})", worst->max_abs, ulp,
                       at, start >= 0 ? " at " + block_place(start, at) : "", worst->position, worst->anchor,
                       worst->output);
  return fmt::format("max abs {:.3g}, {} (size {}, {}, anchor {}, {})", worst->max_abs, ulp, at, placement,
                     worst->anchor, worst->output);
}

std::string position_text(const InvarianceConfig& c) {
  if (c.position_dependent.empty()) return "a row's bits do not depend on its place in the batch at any size tried";
  return fmt::format("a row's bits depend on its place in the batch at size{} {}",
                     c.position_dependent.size() == 1 ? "" : "s", sizes_text(c.position_dependent));
}

std::string warmup_text(const InvarianceConfig& c) {
  const bool blocks = verify_blocks(c);
  if (c.warmup_dependent.empty())
    return blocks ? "a second call of the same block gives the same bits at every block length tried"
                  : "a second call of the same batch gives the same bits at every size tried";
  return fmt::format("the second call of a {} differs from its first at {}{} {}", blocks ? "block" : "batch",
                     blocks ? "block length" : "size", c.warmup_dependent.size() == 1 ? "" : "s",
                     sizes_text(c.warmup_dependent));
}

bool verify_axis(const Invariance& inv) { return inv.axis == "verify"; }

// The anchors, then the axis: what was varied around them.
std::string head_line(const Invariance& inv) {
  const std::string anchors = fmt::format("{} anchor row{}", inv.rows, inv.rows == 1 ? "" : "s");
  if (verify_axis(inv))
    return fmt::format(
        "{}, axis verify: each token at its decode step and inside verify blocks of 2…{} tokens, each block at every "
        "place in the rows' last {} tokens (draft {}, positions {})",
        anchors, inv.draft + 1, inv.draft + inv.positions, inv.draft, inv.positions);
  const std::string padded = inv.axis == "pad-right"  ? ", axis pad: the other rows padded on the right"
                             : inv.axis == "pad-left" ? ", axis pad: the other rows padded on the left"
                                                      : "";
  return fmt::format("{}, filler {}{}, sizes {}{}", anchors, inv.filler, padded, inv.sizes,
                     inv.sizes == "auto" ? fmt::format(" up to {}", inv.budget) : "");
}

// The verdict, then what the allowlist and the baseline added (--allowlist, --baseline, compare).
std::string exit_words(const Report& r, const Invariance& inv) {
  bool variant = false, allowed = false;
  bool nondeterministic = false;
  for (const auto& c : inv.configs) {
    (c.allowed_by ? allowed : variant) |= c.verdict == "variant";
    nondeterministic |= c.verdict == "nondeterministic";
  }
  std::string words = r.exit_code == 3   ? "stopped: the model failed at a batch size"
                      : nondeterministic ? "nondeterministic"
                      : variant          ? "variant"
                      : r.exit_code == 4 ? "incomplete: a worker crashed"
                      : allowed          ? "variant, allowed by the allowlist"
                                         : "invariant";
  if (!r.allowlist_expired.empty()) words += ", an allowlist entry expired";
  return words + baseline_verdict_text(r);
}

// What ran the model: its kind, and a torch.export archive's runtime, as run's report names it.
std::string kind_text(const Invariance& inv) {
  return inv.runtime.empty() ? inv.kind : fmt::format("{}, runtime {}", inv.kind, inv.runtime);
}

// "largest difference from batch 1" (the decode step on the verify axis); "" when nothing differed.
std::string worst_line(const InvarianceConfig& c, const Invariance& inv) {
  const std::string w = worst_text(c);
  return w.empty() ? ""
                   : fmt::format("largest difference from {}: {}", verify_axis(inv) ? "the decode step" : "batch 1", w);
}

// --trace: the op's tensors at batch 1, "aten::linear inputs float32[1x64] -> outputs ... (anchor 0
// alone vs row 3 of a batch of 4)"; "" when no op was found.
std::string trace_shapes(const RowTrace& t) {
  if (t.outcome != "found" && t.outcome != "stopped") return "";
  return fmt::format("{} inputs {} -> outputs {} (anchor {} alone vs row {} of a batch of {})", t.op,
                     fmt::join(t.inputs, ", "), fmt::join(t.outputs, ", "), t.anchor, t.position, t.size);
}

// --trace: the answer in one sentence, then the op's tensors at batch 1.
std::string trace_text(const RowTrace& t) {
  std::string out = fmt::format("  trace: {}\n", ln(t.message));
  if (const std::string shapes = trace_shapes(t); !shapes.empty()) out += fmt::format("    {}\n", ln(shapes));
  return out;
}

// A configuration's advice without the fix search's conclusion, which the first configuration's
// advice repeats and the fix search's own section says (every format says it once).
std::vector<std::string> advice_of(const InvarianceConfig& c, const Invariance& inv) {
  std::vector<std::string> out;
  for (const auto& a : c.advice)
    if (!inv.fix || a != "fix search: " + inv.fix->conclusion) out.push_back(a);
  return out;
}

// The float64 referee's lines of a configuration (issue 53): each class's error against float64
// ("{4…9}: error vs float64: output 3 ULP (...)"), then the class of the differences between classes.
std::vector<std::string> referee_lines(const InvarianceConfig& c, const Invariance& inv) {
  std::vector<std::string> out;
  if (!inv.referee) return out;
  if (inv.referee->ran)
    for (const auto& k : c.classes)
      if (!k.errors.empty()) out.push_back(fmt::format("{{{}}}: {}", sizes_text(k.sizes), errors_line(k.errors)));
  if (c.referee) out.push_back("between classes, " + class_summary_line(*c.referee));
  return out;
}

void config_text(std::string& out, const InvarianceConfig& c, const Invariance& inv) {
  out += fmt::format("{}: {}\n", ln(c.config), ln(invariance_summary(c)));
  if (c.verdict == "crashed") {
    out += fmt::format("  {}\n", ln(c.message));
    return;
  }
  if (c.verdict == "nondeterministic") {
    for (const auto& a : c.advice) out += fmt::format("  advice: {}\n", ln(a));
    return;
  }
  const std::vector<int64_t> tried = tried_sizes(c);
  if (verify_axis(inv)) {
    out += fmt::format("  block lengths tried: {}\n", fmt::join(tried, ","));
    out += fmt::format("  classes (the decode step's bits first): {}\n", classes_text(c.classes));
  } else {
    out += fmt::format("  sizes tried: {}\n", fmt::join(tried, ","));
    out += fmt::format("  classes of identical bits: {}\n", classes_text(c.classes));
    out += fmt::format("  position: {}\n", position_text(c));
  }
  out += fmt::format("  warm-up: {}\n", warmup_text(c));
  if (const std::string w = worst_line(c, inv); !w.empty()) out += fmt::format("  {}\n", ln(w));
  for (const auto& line : referee_lines(c, inv)) out += fmt::format("  {}\n", ln(line));
  for (const auto& a : advice_of(c, inv)) out += fmt::format("  advice: {}\n", ln(a));
  if (c.trace) out += trace_text(*c.trace);
}

}  // namespace

std::string sizes_text(const std::vector<int64_t>& sizes) {
  // A run first…last only where every size from first to last was measured (issue 54: {2…5} for
  // the sizes 2, 4, 5 read as if 3 had been); three or more make a run.
  std::vector<std::string> parts;
  for (size_t i = 0, j = 0; i < sizes.size(); i = j + 1) {
    for (j = i; j + 1 < sizes.size() && sizes[j + 1] == sizes[j] + 1;) ++j;
    if (j - i >= 2)
      parts.push_back(fmt::format("{}…{}", sizes[i], sizes[j]));
    else
      for (size_t k = i; k <= j; ++k) parts.push_back(fmt::format("{}", sizes[k]));
  }
  return fmt::format("{}", fmt::join(parts, ","));
}

std::string classes_text(const std::vector<SizeClass>& classes) {
  std::vector<std::string> parts;
  for (const auto& k : classes) parts.push_back("{" + sizes_text(k.sizes) + "}");
  return fmt::format("{}", fmt::join(parts, " | "));
}

bool verify_blocks(const InvarianceConfig& c) {
  return std::any_of(c.cells.begin(), c.cells.end(), [](const auto& cell) { return cell.placement == "block"; });
}

std::string verify_window_text(const InvarianceConfig& c) {
  int64_t first = -1, last = -1;
  for (const auto& cell : c.cells)
    if (cell.placement == std::string("block") && cell.start >= 0) {
      first = first < 0 ? cell.start : std::min(first, cell.start);
      last = std::max(last, cell.start + cell.size - 1);
    }
  return first < 0 ? "the tokens measured" : block_place(first, last - first + 1);
}

std::string first_differing_block_text(const InvarianceConfig& c) {
  const InvarianceCell* first = nullptr;
  const RowComparison* row = nullptr;
  for (const auto& cell : c.cells) {
    if (cell.placement != std::string("block")) continue;
    const auto differs = std::find_if(cell.rows.begin(), cell.rows.end(), [](const auto& r) { return !r.equal; });
    if (differs == cell.rows.end()) continue;
    if (first == nullptr || std::pair{cell.size, cell.start} < std::pair{first->size, first->start})
      first = &cell, row = &*differs;
  }
  if (first == nullptr) return "";
  return fmt::format("first: blocks of {} tokens{}, anchor {}'s {}", first->size,
                     first->start >= 0 ? " at " + block_place(first->start, first->size) : "", row->anchor,
                     row->output);
}

std::vector<int64_t> tried_sizes(const InvarianceConfig& c) {
  std::set<int64_t> s;
  for (const auto& cell : c.cells) s.insert(cell.size);
  return {s.begin(), s.end()};
}

std::string invariance_summary(const InvarianceConfig& c) {
  if (c.verdict == "crashed") return "crashed";
  if (c.verdict == "nondeterministic") return "nondeterministic: " + c.message;
  // The model failed at one size: the sweep stopped there, and the verdict is that of the sizes before.
  const std::string stopped = c.message.empty() ? "" : "; stopped where " + c.message;
  if (c.verdict == "invariant") return "invariant over every size and placement tried" + stopped;
  std::vector<std::string> why;
  if (c.classes.size() > 1)
    why.push_back(fmt::format("{} classes of {}", c.classes.size(), verify_blocks(c) ? "block lengths" : "sizes"));
  if (!c.position_dependent.empty())
    why.push_back(fmt::format("position-dependent at {} size{}", c.position_dependent.size(),
                              c.position_dependent.size() == 1 ? "" : "s"));
  if (!c.warmup_dependent.empty())
    why.push_back(fmt::format("warm-up-dependent at {} size{}", c.warmup_dependent.size(),
                              c.warmup_dependent.size() == 1 ? "" : "s"));
  const std::string allowed = c.allowed_by ? fmt::format(" (allowed: {})", c.allowed_by->reason) : "";
  return fmt::format("variant: {}{}{}", fmt::join(why, ", "), allowed, stopped);
}

void finalize_invariance(Report& report, const Invariance& inv) {
  bool variant = false, crashed = false, failed = false;
  for (const auto& c : inv.configs) {
    variant |= (c.verdict == "variant" && !c.allowed_by) || c.verdict == "nondeterministic";
    crashed |= c.verdict == "crashed";
    failed |= c.verdict != "crashed" && c.verdict != "nondeterministic" && !c.message.empty();
  }
  report.verdict = variant ? Verdict::Diverged : crashed ? Verdict::Crashed : Verdict::Reproducible;
  // The model's own failure at one size is an input error (exit 3), which wins: the sizes measured
  // before it are in the report, and the size and message in the configuration's summary.
  report.exit_code = failed ? 3 : variant ? 1 : crashed ? 4 : 0;
  // An audit whose comparison could not see a one-bit change proves nothing: incomplete.
  if (report.exit_code == 0 && !inv.control.detected) report.exit_code = 4;
}

std::string invariance_incomplete_reason(const Invariance& inv) {
  for (const auto& c : inv.configs)
    if (c.verdict == "crashed")
      return fmt::format("configuration {} crashed: {}", c.config,
                         c.message.empty() ? "no reason recorded" : c.message);
  if (!inv.control.detected)
    return fmt::format("the negative control did not see a one-bit change, so the comparison proves nothing: {}",
                       inv.control.evidence);
  return "";
}

std::string invariance_text(const Report& r, const Invariance& inv) {
  std::string out =
      fmt::format("repro-audit invariance: {} ({}, {})\n", ln(inv.model), ln(kind_text(inv)), ln(inv.device));
  out += fmt::format("  {}\n", ln(head_line(inv)));
  for (const auto& i : inv.inputs) out += fmt::format("  input: {}\n", ln(i));
  out += fmt::format("  outputs compared: {}\n", ln(fmt::format("{}", fmt::join(inv.outputs, ", "))));
  for (const auto& e : inv.excluded) out += fmt::format("  left out: {}\n", ln(e));
  for (const auto& n : inv.notes) out += fmt::format("  note: {}\n", ln(n));
  out += fmt::format("  negative control: {}\n", ln(inv.control.evidence));
  if (inv.referee && !inv.referee->ran) out += fmt::format("  {}\n", ln(referee_note_line(*inv.referee)));
  for (const auto& c : inv.configs) config_text(out, c, inv);
  out += invariance_fix_text(inv);
  for (const auto& c : inv.configs)
    if (c.timing.calls > 0)
      out += fmt::format("timing ({}): {} calls, forward {:.0f} ms, sweep {:.0f} ms, worker {:.0f} ms\n", ln(c.config),
                         c.timing.calls, c.timing.forward_ms, c.timing.sweep_ms, c.timing.worker_ms);
  out += invariance_fix_text_timing(inv);
  out += render_baseline_text(r);
  for (const auto& e : r.allowlist_expired) out += fmt::format("allowlist: {}\n", ln(e));
  out += fmt::format("invariance: {} (exit {})\n", exit_words(r, inv), r.exit_code);
  return out;
}

std::string invariance_markdown(const Report& r, const Invariance& inv) {
  std::string out = fmt::format("## repro-audit invariance: {} (exit {})\n\n", exit_words(r, inv), r.exit_code);
  out += fmt::format("{} ({}, {}): {}\n\n", md(inv.model), md(kind_text(inv)), md(inv.device), md(head_line(inv)));
  out += fmt::format("Negative control: {}\n\n", md(inv.control.evidence));
  for (const auto& e : inv.excluded) out += fmt::format("- left out: {}\n", md(e));
  for (const auto& n : inv.notes) out += fmt::format("- note: {}\n", md(n));
  out += "| configuration | verdict | classes of identical bits | position | warm-up |\n|---|---|---|---|---|\n";
  for (const auto& c : inv.configs) {
    out += fmt::format("| {} | {} | {} | {} | {} |\n", md(c.config), md(invariance_summary(c)),
                       md(classes_text(c.classes)),
                       c.position_dependent.empty() ? "-" : md(sizes_text(c.position_dependent)),
                       c.warmup_dependent.empty() ? "-" : md(sizes_text(c.warmup_dependent)));
  }
  // The fix search's conclusion, which the first configuration's advice repeats, is said once: in
  // the fix search's section below.
  for (const auto& c : inv.configs)
    if (const std::string w = worst_line(c, inv); !w.empty()) out += fmt::format("\n- **{}** {}", md(c.config), md(w));
  if (inv.referee && !inv.referee->ran) out += fmt::format("\n- {}", md(referee_note_line(*inv.referee)));
  for (const auto& c : inv.configs)
    for (const auto& line : referee_lines(c, inv)) out += fmt::format("\n- **{}** {}", md(c.config), md(line));
  for (const auto& c : inv.configs)
    for (const auto& a : advice_of(c, inv)) out += fmt::format("\n- **{}**: {}", md(c.config), md(a));
  for (const auto& c : inv.configs)
    if (c.trace) {
      out += fmt::format("\n- **{}** trace ({}): {}", md(c.config), md(c.trace->outcome), md(c.trace->message));
      if (const std::string shapes = trace_shapes(*c.trace); !shapes.empty()) out += fmt::format(": {}", md(shapes));
    }
  out += invariance_fix_markdown(inv);
  out += fmt::format("\n\n{}\n### Timing\n\nAudit wall time: {:.1f} s\n", kTimingBegin, r.wall_ms / 1000);
  for (const auto& c : inv.configs)
    out += fmt::format("\n- {}: {} calls, forward {:.0f} ms, sweep {:.0f} ms", md(c.config), c.timing.calls,
                       c.timing.forward_ms, c.timing.sweep_ms);
  out += invariance_fix_markdown_timing(inv);
  out += fmt::format("\n{}\n", kTimingEnd);
  return out;
}

std::string invariance_html_section(const Report& r, const Invariance& inv) {
  std::string out =
      fmt::format("<section id=\"invariance\" class=\"banner v-{}\" data-verdict=\"{}\" data-exit-code=\"{}\">\n",
                  r.exit_code == 0 ? "reproducible" : "diverged", to_string(r.verdict), r.exit_code);
  out += fmt::format("<h1>invariance of {} <span class=\"exit\">exit {}: {}</span></h1>\n", esc(inv.model), r.exit_code,
                     esc(exit_words(r, inv)));
  out += fmt::format("<p>{} ({}, {}): {}</p>\n<p>Negative control: {}</p>\n", esc(inv.model), esc(kind_text(inv)),
                     esc(inv.device), esc(head_line(inv)), esc(inv.control.evidence));
  for (const auto& e : inv.excluded) out += fmt::format("<p>left out: {}</p>\n", esc(e));
  out +=
      "<table class=\"invariance\"><thead><tr><th>configuration</th><th>verdict</th><th>classes of identical bits</th>"
      "<th>position</th><th>warm-up</th><th>advice</th></tr></thead><tbody>\n";
  for (const auto& c : inv.configs) {
    // Each piece of advice its own item, as the Markdown's bullets (issue 54: four ran into one sentence).
    std::string advice;
    for (const auto& a : advice_of(c, inv)) advice += fmt::format("<li>{}</li>", esc(a));
    out += fmt::format(
        "<tr data-config=\"{}\" "
        "data-verdict=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        esc(c.config), esc(c.verdict), esc(c.config), esc(invariance_summary(c)), esc(classes_text(c.classes)),
        esc(verify_axis(inv) ? "-" : position_text(c)), esc(warmup_text(c)),
        advice.empty() ? "-" : "<ul class=\"advice\">" + advice + "</ul>");
  }
  out += "</tbody></table>\n";
  for (const auto& c : inv.configs)
    if (const std::string w = worst_line(c, inv); !w.empty())
      out += fmt::format("<p class=\"largest-difference\" data-config=\"{}\">{} {}</p>\n", esc(c.config), esc(c.config),
                         esc(w));
  if (inv.referee && !inv.referee->ran)
    out += fmt::format("<p class=\"referee\">{}</p>\n", esc(referee_note_line(*inv.referee)));
  for (const auto& c : inv.configs)
    for (const auto& line : referee_lines(c, inv))
      out +=
          fmt::format("<p class=\"referee\" data-config=\"{}\">{} {}</p>\n", esc(c.config), esc(c.config), esc(line));
  for (const auto& c : inv.configs)
    if (c.trace) {
      const std::string shapes = trace_shapes(*c.trace);
      out += fmt::format("<p class=\"row-trace\" data-config=\"{}\" data-outcome=\"{}\">{} trace: {}{}</p>\n",
                         esc(c.config), esc(c.trace->outcome), esc(c.config), esc(c.trace->message),
                         shapes.empty() ? "" : ": <code>" + esc(shapes) + "</code>");
    }
  return out + invariance_fix_html(inv) + "</section>\n";
}

std::string invariance_junit_suites(const Invariance& inv, int& tests, int& failures, int& errors) {
  std::string cases;
  int t = 0, f = 0, e = 0;
  for (const auto& c : inv.configs) {
    ++t;
    std::string body;
    if (c.verdict == "nondeterministic") {
      ++f;
      body = fmt::format("      <failure type=\"nondeterministic\" message=\"{}\"/>\n", xml(invariance_summary(c)));
    } else if (c.verdict == "variant" && !c.allowed_by) {
      ++f;
      body = fmt::format("      <failure type=\"diverged\" message=\"{}\"/>\n",
                         xml(invariance_summary(c) + ": " + classes_text(c.classes) +
                             (c.referee ? "; between classes, " + class_summary_line(*c.referee) : "") +
                             (c.trace ? "; " + c.trace->message : "")));
    } else if (c.verdict == "crashed") {
      ++e;
      body = fmt::format("      <error type=\"crashed\" message=\"{}\"/>\n", xml(c.message));
    }
    cases += fmt::format("    <testcase classname=\"invariance.{}\" name=\"{}\"{}", xml(inv.model), xml(c.config),
                         body.empty() ? "/>\n" : ">\n" + body + "    </testcase>\n");
  }
  cases += invariance_fix_junit_case(inv, t, f);
  tests += t, failures += f, errors += e;
  return fmt::format(
      "  <testsuite name=\"invariance\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\">\n    <properties>\n"
      "      <property name=\"device\" value=\"{}\"/>\n      <property name=\"negative_control\" value=\"{}\"/>\n"
      "    </properties>\n{}  </testsuite>\n",
      t, f, e, xml(inv.device), xml(inv.control.evidence), cases);
}

}  // namespace ra::report
