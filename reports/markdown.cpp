// SPDX-License-Identifier: Apache-2.0
// A compact Markdown summary for CI job pages (GitHub's $GITHUB_STEP_SUMMARY): the verdict and
// exit code, a table of target x configuration, then for each diverged configuration its root
// causes and minimal fixes, the configuration dependence and restart-replay of each target, and
// the alert census of a probe suite.
//
// Determinism: everything above the final "Timing" section is a function of the results alone
// (minimal fixes are listed in candidate order). The measured figures - the audit's wall time and
// each fix's cost, hence which fix is cheapest - sit between the kTimingBegin and kTimingEnd
// comment lines at the end, invisible when rendered, so two audits with the same results differ
// only there.
#include "reports/escape.h"
#include "reports/referee_model.h"
#include "reports/render.h"
#include "reports/render_parts.h"
#include "reports/utf8.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace ra::report {
namespace {

// Inline text and code spans, escaped by the shared layer (reports/escape.h).
using escaped::md;
std::string code(std::string_view s) { return escape::markdown_code(s); }

std::string rate_cell(const ConfigResult& c) {
  if (c.completed < 2) return "-";
  return fmt::format("{}/{} ({:.2f})", c.diverging_repeats, c.completed - 1, c.divergence_rate);
}

std::string root_cause_md(const RootCause& r) {
  std::string s = fmt::format("{} ({}", code(r.op), md(r.direction));
  if (r.step > 0) s += fmt::format(", step {}", r.step);
  if (!r.node.empty()) s += ", in " + code(r.node) + (r.forward_op.empty() ? "" : " of " + code(r.forward_op));
  s += ")";
  if (!r.source.empty()) s += " at " + code(r.source);
  if (!r.module.empty()) s += " in " + code(r.module);
  return s;
}

std::string cost_cell(const FixCandidate& c) { return c.cost_ratio ? cost_text(c) : "-"; }

void fence(std::string& out, const char* lang, const std::string& text) {
  out += escape::markdown_block(text, lang, "  ");
}

// run --calls K: each configuration's warm-up lines, as a list after the table.
void warm_up_items(std::string& out, const Report& r) {
  std::string items;
  for (const auto& t : r.targets())
    for (const auto& c : t.configs)
      if (c.warm_up)
        for (const auto& line : warm_up_lines(*c.warm_up))
          items += fmt::format("- {} · {}: {}\n", md(t.name), md(c.name), md(line));
  if (!items.empty()) out += "\n" + items;
}

// The float64 referee (reports/referee_model.h): why it did not run, or each configuration's error and
// classes, as a list after the table.
void referee_items(std::string& out, const Report& r) {
  std::string items;
  for (const auto& t : r.targets()) {
    if (t.referee && !t.referee->ran) items += fmt::format("- {}: {}\n", md(t.name), md(referee_note_line(*t.referee)));
    for (const auto& c : t.configs)
      for (const auto& line : config_referee_lines(t.referee, c.referee))
        items += fmt::format("- {} · {}: {}\n", md(t.name), md(c.name), md(line));
  }
  if (!items.empty()) out += "\n" + items;
}

void details(std::string& out, const Target& t, const ConfigResult& c) {
  out += fmt::format("\n**{} · {}: {}**", md(t.name), md(c.name), to_string(c.verdict));
  if (c.verdict == Verdict::Diverged)
    out += fmt::format(" - divergence rate {:.2f} (95% CI {:.2f}-{:.2f})", c.divergence_rate, c.rate_ci_low,
                       c.rate_ci_high);
  out += "\n\n";
  if (c.allowed_by)
    out += fmt::format("- allowed: {} (allowlist entry {})\n", md(c.allowed_by->reason), c.allowed_by->entry);
  if (c.within_tolerance) out += fmt::format("- {}\n", md(tolerance_verdict(c)));
  if (c.verdict != Verdict::Diverged) {
    if (!c.message.empty()) out += fmt::format("- {}\n", md(c.message.substr(0, c.message.find('\n'))));
    return;
  }
  constexpr size_t kLimit = 5;
  std::vector<std::string> names;
  for (size_t i = 0; i < c.diverged_tensors.size() && i < kLimit; ++i)
    names.push_back(code(c.diverged_tensors[i].name));
  if (c.diverged_tensors.size() > kLimit)
    names.push_back(fmt::format("and {} more", c.diverged_tensors.size() - kLimit));
  if (!names.empty()) out += fmt::format("- diverged {}: {}\n", findings_word(c, 2), fmt::join(names, ", "));
  if (c.trace) {
    for (const auto& r : c.trace->root_causes)
      out += fmt::format("- root cause: {}; {}/{} runs{}\n", root_cause_md(r), r.runs_diverged, r.runs_compared,
                         r.referee ? "; " + md(classified_line(*r.referee)) : "");
    if (c.trace->root_causes.empty()) out += "- root cause: none in the trace\n";
  }
  if (!c.fix_search) return;
  const FixSearch& f = *c.fix_search;
  std::vector<size_t> best = f.best;  // the fixes that are no downgrade first
  std::stable_partition(best.begin(), best.end(), [&f](size_t i) { return !f.candidates[i].downgrade(); });
  for (const size_t i : best) {
    const FixCandidate& fix = f.candidates[i];
    out += fmt::format("- minimal fix: {}{}\n", code(fix.config),
                       fix.accuracy ? ": " + md(fix_accuracy_text(*fix.accuracy, f.from)) : "");
    fence(out, "cpp", fix.cpp);
    fence(out, "python", fix.python);
  }
  out += fmt::format("- {}\n", md(f.conclusion));
  for (const auto& n : f.no_deterministic)
    out += fmt::format("- {} has no deterministic implementation here{}\n", code(n.op),
                       n.advice.empty() ? "" : ": " + md(n.advice));
}

// The measured part: the audit's wall time, then per diverged configuration with a fix search the
// cheapest minimal fix and the cost of every candidate that was timed.
void timing(std::string& out, const Report& r) {
  out += fmt::format("\n{}\n### Timing\n\nAudit wall time: {:.1f} s\n", kTimingBegin, r.wall_ms / 1000);
  if (!r.contention.empty()) out += fmt::format("\n{}\n", md(r.contention));
  for (const auto& t : r.targets())
    for (const auto& c : t.configs) {
      if (!c.fix_search) continue;
      const FixSearch& f = *c.fix_search;
      out += fmt::format("\n**{} · {}**", md(t.name), md(c.name));
      if (const FixCandidate* fix = cheapest_fix(f))
        out += fmt::format(": {}{} {} ({}){}{}", cheapest_known(f) ? "cheapest fix" : "a minimal fix",
                           downgrades_passed_over(f).empty() ? "" : " without a downgrade",
                           md(fix_change_text(*fix, c.switches)), code(fix->config),
                           fix->cost_ratio ? cost_clause(*fix, md(f.from)) : " (not measured)",
                           md(accuracy_clause(*fix, f.from)));
      for (const FixCandidate* other : fixes_costing_the_same(f))
        out += fmt::format("; the same cost within noise: {} ({}){}", code(other->config), cost_text(*other),
                           md(accuracy_clause(*other, f.from)));
      for (const FixCandidate* down : downgrades_passed_over(f))
        out += fmt::format("; not {}: {}", code(down->config), md(fix_accuracy_text(*down->accuracy, f.from)));
      out += "\n\n| candidate | verdict | median | cost |\n|---|---|---|---|\n";
      for (const auto& cand : f.candidates)
        out += fmt::format("| {}{} | {} | {} | {} |\n", code(cand.config), cand.downgrade() ? " (a downgrade)" : "",
                           to_string(cand.verdict), cand.median_ms ? fmt::format("{:.1f} ms", *cand.median_ms) : "-",
                           cost_cell(cand));
    }
  out += fmt::format("{}\n", kTimingEnd);
}

std::string tensors_cell(const BaselineResult& b) {
  if (b.status == BaselineStatus::Missing || b.status == BaselineStatus::Added ||
      b.status == BaselineStatus::Incomparable)
    return "-";
  return b.differing == 0 ? fmt::format("{} match", b.tensors) : fmt::format("{}/{} differ", b.differing, b.tensors);
}

// The comparison with a baseline: the environment changes, a table of the results that are not
// matches (all of them when few), and details for those that differ.
void baseline_section(std::string& out, const Report& r) {
  const BaselineComparison& b = *r.baseline;
  out += fmt::format("\n### Baseline {}: {}\n\n", code(b.source), md(baseline_counts(b)));
  std::vector<std::string> ignored;
  for (const auto& c : b.ignored) ignored.push_back(code(c.key));
  if (b.changes.empty()) {
    out += "Environment unchanged since the baseline";
    if (!ignored.empty())
      out += fmt::format(" (ignored differences, which cannot change results: {})", fmt::join(ignored, ", "));
    out += ".\n\n";
  } else {
    out += "| environment change | baseline | current | can affect |\n|---|---|---|---|\n";
    for (const auto& c : b.changes)
      out += fmt::format("| {} | {} | {} | {} |\n", code(c.key), md(c.baseline), md(c.current),
                         md(affects_text(c.affects)));
    if (!ignored.empty())
      out += fmt::format("\nAlso differ, ignored (cannot change results): {}\n", fmt::join(ignored, ", "));
    out += "\n";
  }
  if (const std::string up = upgrade_text(b); !up.empty())
    out += fmt::format("**{}:** {}.\n\n", capitalized(upgrade_label(b)), md(up));
  if (const auto lines = behaviour_lines(b); !lines.empty()) {
    for (const auto& line : lines) out += fmt::format("- {}\n", md(line));
    out += "\n";
  }
  if (const std::string d = direction_summary(b); !d.empty()) out += fmt::format("{}\n\n", md(d));
  for (const auto& m : b.models) out += fmt::format("**Model:** {}.\n\n", md(m.reason));
  out += "| target | configuration | against the baseline | tensors |\n|---|---|---|---|\n";
  size_t unlisted = 0;
  for (const auto& res : b.results) {
    if (!baseline_listed(b, res)) {
      ++unlisted;
      continue;
    }
    const bool bad = baseline_failure(r, res) || res.status == BaselineStatus::Explained;
    out += fmt::format("| {} | {} | {} | {} |\n", md(res.target), md(res.config),
                       bad ? fmt::format("**{}**", to_string(res.status)) : to_string(res.status), tensors_cell(res));
  }
  if (unlisted > 0)
    out += fmt::format(
        "\n{} more (matches, and configurations skipped or raised alike on both sides) are counted above, not "
        "listed.\n",
        unlisted);
  bool explained = false;
  for (const auto& res : b.results) {
    if (!baseline_noteworthy(res)) continue;
    explained = explained || res.status == BaselineStatus::Explained;
    out += fmt::format("\n- **{} · {}: {}** - {}\n", md(res.target), md(res.config), to_string(res.status),
                       md(res.reason));
    std::vector<std::string> names;
    for (const auto& t : res.differing_tensors)
      names.push_back(t.stats ? fmt::format("{} ({})", code(t.name), md(stats_text(*t.stats))) : code(t.name));
    if (res.differing > res.differing_tensors.size())
      names.push_back(fmt::format("and {} more", res.differing - res.differing_tensors.size()));
    if (!names.empty()) out += fmt::format("  - differing tensors: {}\n", fmt::join(names, ", "));
    if (const std::string op = changed_op_text(res); !op.empty()) out += fmt::format("  - {}\n", md(op));
    if (const std::string d = result_direction_text(b, res); !d.empty()) out += fmt::format("  - {}\n", md(d));
  }
  if (explained)
    out += fmt::format(
        "\n> **Explained differences** do not fail the run: the results changed together with {}. "
        "If the new results are the right ones, {}{}{}.\n",
        explained_cause(b), md(resave_advice(b).before), code(resave_advice(b).code), md(resave_advice(b).after));
}

}  // namespace

// The frame of every kind with targets; each kind's own parts are in its file (reports/render_parts.h).

std::string markdown::head(const Report& r, bool compared_column) {
  const ConstTargets targets = r.targets();
  std::string out =
      fmt::format("## repro-audit: {}{}{}{} (exit {})\n\n", md(verdict_text(r)),
                  std::any_of(targets.begin(), targets.end(), [](const Target& t) { return t.dependence.has_value(); })
                      ? ", configuration-dependent"
                      : "",
                  std::any_of(targets.begin(), targets.end(),
                              [](const Target& t) {
                                return std::any_of(t.configs.begin(), t.configs.end(), [](const ConfigResult& c) {
                                  return c.warm_up && warm_up_dependent(*c.warm_up);
                                });
                              })
                      ? ", warm-up-dependent"
                      : "",
                  md(baseline_verdict_text(r)), r.exit_code);
  // exec: a column of what each run is compared by (compared_text), the same figure as in the other formats.
  out +=
      compared_column
          ? "| target | configuration | verdict | diverged repeats (rate) | compared per run |\n|---|---|---|---|---|\n"
          : "| target | configuration | verdict | diverged repeats (rate) |\n|---|---|---|---|\n";
  for (const auto& t : targets)
    for (const auto& c : t.configs) {
      const bool bad = c.verdict != Verdict::Reproducible && c.verdict != Verdict::Skipped;
      out += fmt::format("| {} | {} | {} | {} |{}\n", md(t.name), md(c.name),
                         bad ? fmt::format("**{}**", to_string(c.verdict)) : to_string(c.verdict), rate_cell(c),
                         compared_column ? " " + md(compared_text(c)) + " |" : "");
    }
  return out;
}

void markdown::rules(std::string& out, const Report& r) {
  if (const std::string rule = auto_repeats_text(r); !rule.empty()) {
    out += fmt::format("\n{}\n", md(rule));
    for (const auto& t : r.targets())
      for (const auto& c : t.configs)
        if (const std::string u = undecided_text(c); !u.empty())
          out += fmt::format("- {} · {}: {}\n", md(t.name), md(c.name), md(u));
  }
  warm_up_items(out, r);
  referee_items(out, r);
}

void markdown::findings(std::string& out, const Target& t) {
  for (const auto& c : t.configs)
    if (c.verdict != Verdict::Reproducible && c.verdict != Verdict::Skipped) details(out, t, c);
  if (!t.dependence) return;
  std::vector<std::string> groups;
  for (const auto& g : t.dependence->groups) {
    std::vector<std::string> names;
    for (const auto& n : g) names.push_back(md(n));
    groups.push_back(fmt::format("{{{}}}", fmt::join(names, ", ")));
  }
  out += fmt::format(
      "\n**{}: configuration-dependent** - each configuration is reproducible, but results differ between {}\n",
      md(t.name), fmt::join(groups, " and "));
  if (!t.dependence->causes.empty()) out += "\n";
  for (const auto& cause : t.dependence->causes) out += fmt::format("- {}\n", md(config_cause_text(cause)));
}

void markdown::tail(std::string& out, const Report& r) {
  if (r.baseline) baseline_section(out, r);
  // Where a shard or a merged report's shards ran: as the text summary says it.
  // The fence is longer than any backtick run in it: a host named "```" cannot close it.
  if (const std::string where = shard_text(r) + fleet_text(r); !where.empty())
    out += "\n" + escape::markdown_block(where);
  timing(out, r);
}

namespace {

std::string render_markdown_raw(const Report& r) {
  return std::visit(overloaded{[&](const RunBody& b) { return run_markdown(r, b); },
                               [&](const ExecBody& b) { return exec_markdown(r, b); },
                               [&](const ProbesBody& b) { return probes_markdown(r, b); },
                               [&](const Invariance& inv) { return invariance_markdown(r, inv); },
                               [&](const SelfTest& self) { return selftest_markdown(r, self); }},
                    r.body);
}

}  // namespace

// Names and messages may hold control characters and bytes that are not UTF-8: shown as \xNN.
std::string render_markdown(const Report& r) {
  const std::string untested = untested_torch_text(r);
  return printable((untested.empty() ? "" : "> **warning:** " + md(untested) + "\n\n") + render_markdown_raw(r), true);
}

}  // namespace ra::report
