// SPDX-License-Identifier: Apache-2.0
// `exec`'s report in every format: what a command adds to the frame every kind with targets shares
// (reports/render_parts.h): what each run is compared by, the seeding checklist (often the answer,
// so it comes first), the switches the program set itself, torchrun's ranks, and a fix search that
// runs the command, untraced.
#include "reports/escape.h"
#include "reports/html.h"
#include "reports/render.h"
#include "reports/render_parts.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ra::report {
namespace {

using escaped::ln;
using escaped::md;

std::string md_code(std::string_view s) { return escape::markdown_code(s); }

// The command, what is compared, how the switches reached it.
void command_lines(std::string& out, const ExecTarget& x) {
  const ExecFacts& e = x.facts;
  out += fmt::format("exec: {}\n", ln(x.common.name));
  std::vector<std::string> what;
  for (const auto& a : e.artifacts) what.push_back(fmt::format("{} ({})", ln(a.name), ln(a.kind)));
  for (const auto& m : e.metrics) what.push_back(fmt::format("metric {} ({} per run)", ln(m.name), m.occurrences));
  out +=
      fmt::format("  compared: {}\n", what.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(what, ", ")));
  for (const auto& a : e.artifacts)
    if (!a.note.empty()) out += fmt::format("  note: {}: {}\n", ln(a.name), ln(a.note));
  if (!e.hook_note.empty()) out += fmt::format("  note: {}\n", ln(e.hook_note));
  if (e.world_size > 0) {
    std::vector<std::string> set;
    for (const auto& [k, v] : e.launcher_set) set.push_back(ln(k) + "=" + ln(v));
    out += fmt::format("  torchrun: world size {}{}{}\n", e.world_size,
                       e.backend.empty() ? "" : ", backend " + ln(e.backend),
                       set.empty() ? "" : fmt::format("; set by the launcher in every rank: {}", fmt::join(set, ", ")));
  }
}

// Switches the program set itself, in one configuration.
void switches_set_lines(std::string& out, const ConfigResult& c) {
  for (const auto& s : c.switches) {
    if (s.set_at.empty()) continue;
    const bool overridden = !s.requested.empty() && s.requested != s.effective;
    out += fmt::format("    {} by the program at {}: {}={}{}\n", overridden ? "overridden" : "set", ln(s.set_at),
                       ln(s.key), ln(s.effective),
                       overridden ? fmt::format(" (this configuration asked for {})", ln(s.requested)) : "");
  }
}

// The seeding checklist.
void checklist_lines(std::string& out, const ExecFacts& e) {
  if (!e.checklist.empty()) out += "  seeding checklist (checked while the program ran):\n";
  for (const auto& item : e.checklist) {
    std::string line = fmt::format("    {:<14} {}", ln(item.status), ln(item.text));
    if (!item.where.empty()) line += fmt::format(" ({})", ln(item.where));
    if (!item.ranks.empty())
      line += fmt::format(" [rank{} {}]", item.ranks.size() == 1 ? "" : "s", fmt::join(item.ranks, ","));
    if (!item.artifact.empty()) line += fmt::format(" -> diverged: {}", ln(item.artifact));
    out += line + "\n";
  }
}

// The ranks' comparison.
void ranks_lines(std::string& out, const ExecFacts& e) {
  if (!e.ranks_equal) return;
  const RanksEqual& r = *e.ranks_equal;
  if (r.equal)
    out += fmt::format("  ranks equal: every rank's artifacts equal rank 0's ({} comparisons)\n", r.compared);
  else
    out += fmt::format("  ranks differ: rank {} differs from rank 0 in {} of {} ({} repeat {})\n", r.rank, ln(r.tensor),
                       ln(r.artifact), ln(r.config), r.repeat);
}

void checklist_markdown(std::string& out, const ExecTarget& x) {
  if (x.facts.checklist.empty()) return;
  out += fmt::format(
      "\n**{}: seeding checklist** (checked while the program ran)\n\n| status | what | where | diverged "
      "|\n|---|---|---|---|\n",
      md(x.common.name));
  for (const auto& item : x.facts.checklist)
    out +=
        fmt::format("| {} | {} | {} | {} |\n", md(item.status), md(item.text),
                    item.where.empty() ? "" : md_code(item.where), item.artifact.empty() ? "" : md_code(item.artifact));
}

// The switches the program set itself, the hook's note, the ranks.
void program_markdown(std::string& out, const ExecTarget& x) {
  const ExecFacts& e = x.facts;
  std::vector<std::string> set;
  for (const auto& c : x.common.configs)
    for (const auto& sw : c.switches)
      if (!sw.set_at.empty())
        set.push_back(fmt::format(
            "- {}: the program set {} at {}{}", md(c.name), md_code(sw.key + "=" + sw.effective), md_code(sw.set_at),
            !sw.requested.empty() && sw.requested != sw.effective ? " (overriding " + md(sw.requested) + ")" : ""));
  if (!set.empty())
    out += fmt::format("\n**{}: switches the program set itself**\n\n{}\n", md(x.common.name), fmt::join(set, "\n"));
  if (!e.hook_note.empty()) out += fmt::format("\nNote: {}\n", md(e.hook_note));
  if (e.ranks_equal)
    out += e.ranks_equal->equal
               ? fmt::format("\nRanks equal: every rank's artifacts equal rank 0's ({} comparisons)\n",
                             e.ranks_equal->compared)
               : fmt::format("\n**Ranks differ**: rank {} differs from rank 0 in {} of {}\n", e.ranks_equal->rank,
                             md_code(e.ranks_equal->tensor), md_code(e.ranks_equal->artifact));
}

// What each run is compared by, the switches the program set itself, the ranks (the checklist has
// its own section).
void program_block(std::string& out, const ExecTarget& x) {
  using html::code;
  using html::esc;
  const ExecFacts& e = x.facts;
  std::vector<std::string> what;
  for (const auto& a : e.artifacts)
    what.push_back(code(a.name) + " (" + esc(a.kind) + (a.note.empty() ? "" : ": " + esc(a.note)) + ")");
  for (const auto& m : e.metrics) what.push_back(fmt::format("metric {} ({} per run)", code(m.name), m.occurrences));
  out += "<div class=\"exec\">\n<h4>What the program did</h4>\n";
  out += fmt::format("<p class=\"compared\">Compared: {}.</p>\n",
                     what.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(what, ", ")));
  if (!e.hook_note.empty()) out += fmt::format("<p>{}</p>\n", esc(e.hook_note));
  for (const auto& c : x.common.configs)
    for (const auto& sw : c.switches)
      if (!sw.set_at.empty())
        out += fmt::format(
            "<p class=\"switch-set\">{}: the program set <code>{}={}</code> at <code>{}</code>{}</p>\n", esc(c.name),
            esc(sw.key), esc(sw.effective), esc(sw.set_at),
            !sw.requested.empty() && sw.requested != sw.effective ? " (overriding " + esc(sw.requested) + ")" : "");
  if (e.ranks_equal)
    out +=
        e.ranks_equal->equal
            ? fmt::format("<p>Ranks equal: every rank's artifacts equal rank 0's ({} comparisons).</p>\n",
                          e.ranks_equal->compared)
            : fmt::format(
                  "<p class=\"ranks-differ\">Rank {} differs from rank 0 in <code>{}</code> of <code>{}</code>.</p>\n",
                  e.ranks_equal->rank, esc(e.ranks_equal->tensor), esc(e.ranks_equal->artifact));
  out += "</div>\n";
}

void checklist_section(std::string& out, const ExecBody& body) {
  using html::esc;
  out += "<section id=\"checklist\">\n<h2>Seeding checklist</h2>\n";
  bool any = false;
  for (const auto& x : body.targets) {
    if (x.facts.checklist.empty()) continue;
    any = true;
    out +=
        "<p class=\"hint\">Checked while the program ran: what it seeded, where, and the diverged artifact or metric "
        "each missing line may explain.</p>\n";
    out +=
        "<table class=\"checklist\"><thead><tr><th>status</th><th>seeding "
        "checklist</th><th>where</th><th>diverged</th></tr>"
        "</thead><tbody>\n";
    for (const auto& item : x.facts.checklist)
      out += fmt::format(
          "<tr class=\"checklist-item\" "
          "data-status=\"{}\"><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td></tr>\n",
          esc(item.status), esc(item.status), esc(item.text), esc(item.where), esc(item.artifact));
    out += "</tbody></table>\n";
  }
  if (!any)
    out +=
        "<p class=\"empty\">No checklist: the start-up hook did not report (not a Python program that imported "
        "torch, or one started with -S or -I).</p>\n";
  out += "</section>\n";
}

}  // namespace

std::string exec_text(const Report& r, const ExecBody& body) {
  std::string out;
  for (const auto& x : body.targets) {
    command_lines(out, x);
    text::target_lines(out, x.common);
    // The checklist first, as it often holds the answer; the table's column counts files and metrics
    // per run (compared_text), not the digests, whose number grows when a file is read entry by entry.
    checklist_lines(out, x.facts);
    text::config_lines(out, x.common, {"compared per run", true, switches_set_lines});
    text::outcome_lines(out, x.common);
    ranks_lines(out, x.facts);
  }
  return out + text::report_tail(r, !body.targets.empty() && body.targets.front().common.dependence);
}

std::string exec_markdown(const Report& r, const ExecBody& body) {
  std::string out = markdown::head(r, true);
  markdown::rules(out, r);
  for (const auto& x : body.targets) {
    checklist_markdown(out, x);  // first: it often holds the answer
    markdown::findings(out, x.common);
    program_markdown(out, x);
  }
  markdown::tail(out, r);
  return out;
}

// The page leads with what answers exec's question: the verdict, the seeding checklist (often the
// answer), what diverged, the fixes, then the details and the environment; it has no trace (root
// causes) and no probe census.
html::Page html::exec_page(const Report& r, const ExecBody& body) {
  TargetParts parts;
  parts.matrix_label = "Runs";
  parts.command = true;
  parts.details_hint =
      "<p class=\"hint\">Per configuration: the divergence rate, each entry that differs (a tensor or value of "
      "a file read because its bytes differed, a file compared by bytes, or a metric: elements differing, "
      "first index, largest absolute and ULP difference), failed runs with their messages; then what the "
      "program set itself.</p>\n";
  parts.details = [&body](std::string& out, size_t i) { program_block(out, body.targets[i]); };
  const TargetSections s = target_sections(r, std::move(parts));
  const Section checklist{"checklist", "Checklist", [&body](std::string& o) { checklist_section(o, body); }};
  return targets_page(r, fmt::format("{} targets", body.targets.size()),
                      {s.verdict, checklist, s.matrix, s.baseline, s.fixes, s.details, s.environment});
}

std::string exec_junit(const Report& r, const ExecBody& body, junit::Counts& all) {
  std::string suites;
  for (const auto& x : body.targets) {
    junit::Counts counts;
    std::string cases = junit::target_cases(x.common, counts);
    if (const auto& q = x.facts.ranks_equal) {
      const junit::Outcome o =
          q->equal ? junit::Outcome{}
                   : junit::Outcome{
                         "failure", "ranks-differ",
                         fmt::format("rank {} differs from rank 0 in {} of {}", q->rank, q->tensor, q->artifact), ""};
      counts.add(o);
      cases += junit::testcase(x.common.name, "ranks-equal", o);
    }
    if (!x.facts.checklist.empty()) {
      // The seeding checklist rides along as the output of a passing case: it explains, it does not judge.
      std::string text;
      for (const auto& item : x.facts.checklist)
        text += fmt::format("{}: {}{}{}\n", item.status, item.text, item.where.empty() ? "" : " (" + item.where + ")",
                            item.artifact.empty() ? "" : " -> diverged: " + item.artifact);
      counts.add(junit::Outcome{});
      cases += junit::testcase(x.common.name, "seeding-checklist", junit::Outcome{}, text);
    }
    all.add(counts);
    suites += junit::target_suite(r, x.common, kind_row<ExecBody>().target, "", counts, cases);
  }
  return suites;
}

}  // namespace ra::report
