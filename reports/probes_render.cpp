// SPDX-License-Identifier: Apache-2.0
// `probes`' report in every format: what a probe suite adds to the frame every kind with targets
// shares (reports/render_parts.h). Its text summary is its own: probes grouped by family (in suite
// order), one line per probe with each configuration's verdict and the cost of the configuration
// against the first one, the disagreements with the documentation under it, then the alert census
// and the suite's wall time. The other formats add each probe's family and facts, the alert census
// and the batch-invariance probes' classes of sizes. A probe read from a baseline file has no facts
// (ProbeFacts::known): it is counted, and shown where the frame shows every target, but has no
// family, no facts and no classes.
#include "reports/escape.h"
#include "reports/html.h"
#include "reports/render.h"
#include "reports/render_parts.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

namespace ra::report {
namespace {

// Every string from the model is one line here (reports/escape.h).
using escaped::ln;

// A determinism alert up to "... does not have a deterministic implementation"; other messages
// up to 160 characters.
std::string short_message(const std::string& m) {
  static const std::string kAlert = " does not have a deterministic implementation";
  if (const auto at = m.find(kAlert); at != std::string::npos) return ln(m.substr(0, at + kAlert.size()));
  if (m.size() <= 160) return ln(m);
  return ln(m.substr(0, 157)) + "...";
}

std::string config_cell(const Target& t, size_t i) {
  const ConfigResult& c = t.configs[i];
  std::string cell = fmt::format("{} {}", ln(c.name), to_string(c.verdict));
  if (c.verdict == Verdict::Diverged) cell += fmt::format(" {}/{}", c.diverging_repeats, c.completed - 1);
  if (i > 0)
    if (const auto ratio = cost_ratio(t, i)) cell += fmt::format(" x{:.2f}", *ratio);
  return cell;
}

std::string documented_cell(const ProbeFacts& p) {
  if (p.documented == "not-listed") return "not listed";
  if (p.documented == "undocumented") return fmt::format("undocumented ({})", ln(p.documented_device));
  return fmt::format("{} ({})", ln(p.documented), ln(p.documented_device));
}

void census_block(std::string& out, const Census& c) {
  out += fmt::format("alert census under {}:\n", ln(c.config));
  const auto row = [&](const char* label, const std::vector<std::string>& names, bool list) {
    out += fmt::format("  {:<22} {:>3}", label, names.size());
    std::vector<std::string> shown;
    for (const auto& n : names) shown.push_back(ln(n));
    if (list && !shown.empty()) out += fmt::format("  {}", fmt::join(shown, ", "));
    out += "\n";
  };
  row("alerted & diverged", c.alerted_diverged, true);
  row("alerted & stable", c.alerted_stable, false);
  row("silent & diverged", c.silent_diverged, true);
  row("stable", c.stable, false);
  if (!c.not_run.empty()) row("not run", c.not_run, false);
}

std::string probe_code(std::string_view s) { return escape::markdown_code(s); }

// The alert census (--census) and the batch-invariance probes' classes, as the text summary gives
// them under each probe.
void census_markdown(std::string& out, const ProbesBody& probes) {
  using escaped::md;
  if (probes.census) {
    const Census& c = *probes.census;
    out += fmt::format("\n**Alert census under {}**\n\n", md(c.config));
    out += "| alerted & diverged | alerted & stable | silent & diverged | stable | not run |\n|---|---|---|---|---|\n";
    out += fmt::format("| {} | {} | {} | {} | {} |\n", c.alerted_diverged.size(), c.alerted_stable.size(),
                       c.silent_diverged.size(), c.stable.size(), c.not_run.size());
    if (!c.silent_diverged.empty()) {
      std::vector<std::string> names;
      for (const auto& n : c.silent_diverged) names.push_back(probe_code(n));
      out += fmt::format("\nDiverged without an alert: {}\n", fmt::join(names, ", "));
    }
  }
  std::string rows;
  for (const auto& probe : probes.targets)
    for (const auto& b : probe.facts.batch_classes)
      rows += fmt::format("| {} | {} | {} | {} |\n", md(probe.common.name), md(b.config),
                          md(batch_classes_text(b.classes)), b.classes.size() == 1 ? "invariant" : "**variant**");
  if (rows.empty()) return;
  out += "\n**Batch invariance** (sizes whose anchor row has identical bits, one class per group)\n\n";
  out += "| probe | configuration | classes of batch sizes | verdict |\n|---|---|---|---|\n" + rows;
}

std::string documented_text(const ProbeFacts& p) {
  if (p.documented == "not-listed" || p.documented.empty()) return "not listed";
  return p.documented_device.empty() ? p.documented : fmt::format("{} ({})", p.documented, p.documented_device);
}

// Under the census: each probe's facts and its disagreements with the documentation.
void probe_facts_html(std::string& out, const ProbesBody& body) {
  using html::code;
  using html::esc;
  using html::target_id;
  std::vector<size_t> disagreeing;
  size_t probes = 0;
  for (size_t i = 0; i < body.targets.size(); ++i)
    if (body.targets[i].facts.known()) {
      ++probes;
      if (!body.targets[i].facts.disagreements.empty()) disagreeing.push_back(i);
    }
  if (probes == 0) return;
  out += fmt::format(
      "<h3>Measurement against the documentation</h3>\n<p>{} of {} disagree{} with what PyTorch documents.</p>\n",
      disagreeing.size(), plural(probes, "probe", "probes"), disagreeing.size() == 1 ? "s" : "");
  if (!disagreeing.empty()) {
    out += "<ul class=\"disagreements\">\n";
    for (const size_t i : disagreeing)
      for (const auto& d : body.targets[i].facts.disagreements)
        out += fmt::format("<li class=\"disagreement\"><a href=\"#{}\">{}</a>: {}</li>\n", target_id(i),
                           esc(body.targets[i].common.name), esc(d));
    out += "</ul>\n";
  }
  out += fmt::format("<details class=\"probe-facts\"><summary>What each probe runs ({})</summary>\n", probes);
  out +=
      "<table><thead><tr><th>probe</th><th>family</th><th>op and "
      "form</th><th>direction</th><th>role</th><th>documented</th>"
      "<th>census</th><th>advice</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < body.targets.size(); ++i) {
    const ProbeFacts& p = body.targets[i].facts;
    if (!p.known()) continue;
    std::string census = p.census.empty() ? "-" : esc(p.census);
    if (!p.alerts.empty())
      census +=
          fmt::format("<div class=\"sub\">{}</div>", esc(p.alerts.front().substr(0, p.alerts.front().find('\n'))));
    std::string form = esc(p.form);
    for (const auto& line : batch_classes_lines(p))
      form += fmt::format("<div class=\"batch-classes\">{}</div>", esc(line));
    out += fmt::format(
        "<tr class=\"probe-fact\"><td><a href=\"#{}\">{}</a></td><td>{}</td><td>{}<div class=\"sub\">{}</div></td>"
        "<td>{}</td><td>{}</td><td title=\"{}\">{}</td><td>{}</td><td>{}</td></tr>\n",
        target_id(i), esc(body.targets[i].common.name), esc(p.family), code(p.op), form, esc(p.direction), esc(p.role),
        esc(p.doc_row), esc(documented_text(p)), census, esc(p.advice));
  }
  out += "</tbody></table>\n</details>\n";
}

}  // namespace

std::string batch_classes_text(const std::vector<std::vector<int64_t>>& classes) {
  std::vector<int64_t> all;
  for (const auto& c : classes) all.insert(all.end(), c.begin(), c.end());
  std::sort(all.begin(), all.end());
  const auto rank = [&](int64_t m) { return std::lower_bound(all.begin(), all.end(), m) - all.begin(); };
  std::vector<std::string> parts;
  for (const auto& c : classes) {
    std::vector<std::string> items;
    for (size_t i = 0; i < c.size();) {
      size_t j = i;
      while (j + 1 < c.size() && rank(c[j + 1]) == rank(c[j]) + 1) ++j;
      if (j >= i + 3)
        items.push_back(fmt::format("{}…{}", c[i], c[j]));
      else
        for (size_t k = i; k <= j; ++k) items.push_back(std::to_string(c[k]));
      i = j + 1;
    }
    parts.push_back(fmt::format("{{{}}}", fmt::join(items, ",")));
  }
  return fmt::format("{}", fmt::join(parts, " | "));
}

std::vector<std::string> batch_classes_lines(const ProbeFacts& p) {
  std::vector<std::string> out;
  for (const auto& b : p.batch_classes)
    out.push_back(fmt::format("batch classes under {}: {}: {}", ln(b.config), batch_classes_text(b.classes),
                              b.classes.size() == 1 ? "invariant" : "variant"));
  return out;
}

std::string probes_text(const Report& r, const ProbesBody& body) {
  std::string out;
  std::vector<std::string> families;
  for (const auto& probe : body.targets)
    if (probe.facts.known() && std::find(families.begin(), families.end(), probe.facts.family) == families.end())
      families.push_back(probe.facts.family);
  size_t width = 0;
  for (const auto& probe : body.targets) width = std::max(width, ln(probe.common.name).size() + 1);
  size_t skipped = 0, disagreeing = 0;
  for (const auto& family : families) {
    std::map<Verdict, int> counts;
    for (const auto& probe : body.targets)
      if (probe.facts.known() && probe.facts.family == family) ++counts[probe.common.verdict];
    std::vector<std::string> parts;
    for (const auto& [v, n] : counts) parts.push_back(fmt::format("{} {}", n, to_string(v)));
    out += fmt::format("== {} ({})\n", ln(family), fmt::join(parts, ", "));
    for (const auto& probe : body.targets) {
      if (!probe.facts.known() || probe.facts.family != family) continue;
      const Target& t = probe.common;
      const ProbeFacts& p = probe.facts;
      if (t.verdict == Verdict::Skipped) {
        ++skipped;
        out += fmt::format("  {:<{}} skipped: {}\n", ln(t.name), width,
                           t.configs.empty() ? "" : ln(t.configs.front().message));
        continue;
      }
      std::vector<std::string> cells;
      for (size_t i = 0; i < t.configs.size(); ++i) cells.push_back(config_cell(t, i));
      out += fmt::format("  {:<{}} {:<8} {:<28} {}{}\n", ln(t.name), width, ln(p.direction), documented_cell(p),
                         fmt::join(cells, " | "), t.dependence ? " | configuration-dependent" : "");
      for (const auto& c : t.configs)
        if (c.verdict == Verdict::Raised || c.verdict == Verdict::Crashed || c.verdict == Verdict::Timeout)
          out += fmt::format("      {}: {}\n", ln(c.name), short_message(c.message));
      for (const auto& c : t.configs)
        if (c.allowed_by)
          out += fmt::format("      {}: allowed: {} (allowlist entry {})\n", ln(c.name), ln(c.allowed_by->reason),
                             c.allowed_by->entry);
      for (const auto& line : batch_classes_lines(p)) out += fmt::format("      {}\n", line);
      if (!p.alerts.empty()) out += fmt::format("      alert in warn_only mode: {}\n", short_message(p.alerts.front()));
      for (const auto& d : p.disagreements) out += fmt::format("      ! {}\n", ln(d));
      disagreeing += !p.disagreements.empty();
    }
  }
  if (body.census) census_block(out, *body.census);
  out += fmt::format("probes: {} ({} run, {} skipped); {} disagree with the documentation\n", body.targets.size(),
                     body.targets.size() - skipped, skipped, disagreeing);
  if (const std::string rule = auto_repeats_text(r); !rule.empty()) out += rule + "\n";
  for (const auto& e : r.allowlist_expired) out += fmt::format("{}\n", ln(e));
  for (const auto& e : r.allowlist_notes) out += fmt::format("note: {}\n", ln(e));
  out += render_baseline_text(r);
  out += shard_text(r) + fleet_text(r);
  out += fmt::format("verdict: {}{} (exit {})\n", verdict_text(r), baseline_verdict_text(r), r.exit_code);
  out += fmt::format("suite wall time: {:.1f} s\n", r.wall_ms / 1000);
  if (!r.contention.empty()) out += fmt::format("note: {}\n", r.contention);
  return out;
}

std::string probes_markdown(const Report& r, const ProbesBody& body) {
  std::string out = markdown::head(r, false);
  markdown::rules(out, r);
  for (const auto& probe : body.targets) markdown::findings(out, probe.common);
  census_markdown(out, body);
  markdown::tail(out, r);
  return out;
}

html::Page html::probes_page(const Report& r, const ProbesBody& body) {
  TargetParts parts;
  parts.column = "family";
  parts.cell = [&body](size_t i) {
    return fmt::format("<td class=\"family\">{}</td>", esc(body.targets[i].facts.family));
  };
  parts.notes = [&body](std::vector<std::string>& notes, size_t i) {
    const auto& disagreements = body.targets[i].facts.disagreements;
    if (!disagreements.empty())
      notes.push_back(fmt::format("{} disagreement{} with the documentation", disagreements.size(),
                                  disagreements.size() == 1 ? "" : "s"));
  };
  parts.census = body.census;
  parts.census_tail = [&body](std::string& out) { probe_facts_html(out, body); };
  const TargetSections s = target_sections(r, std::move(parts));
  return targets_page(r, fmt::format("probe suite, {} probes", body.targets.size()), s.in_order());
}

std::string probes_junit(const Report& r, const ProbesBody& body, junit::Counts& all) {
  std::string suites;
  for (const auto& probe : body.targets) {
    junit::Counts counts;
    const std::string cases = junit::target_cases(probe.common, counts);
    all.add(counts);
    std::string props;
    if (probe.facts.known()) {
      props += junit::property("family", probe.facts.family) + junit::property("op", probe.facts.op);
      // a batch-invariance probe's classes of sizes, one property per configuration
      for (const auto& b : probe.facts.batch_classes)
        props += junit::property("batch-classes " + b.config, batch_classes_text(b.classes));
    }
    suites += junit::target_suite(r, probe.common, kind_row<ProbesBody>().target, props, counts, cases);
  }
  return suites;
}

}  // namespace ra::report
