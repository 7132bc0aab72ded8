// SPDX-License-Identifier: Apache-2.0
// The text summary of a probe suite: probes grouped by family (in suite order), one line per probe
// with each configuration's verdict and the cost of the configuration against the first one, the
// disagreements with the documentation under it, then the alert census and the suite's wall time.
#include "reports/escape.h"
#include "reports/render.h"

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

std::string render_probes_text(const Report& r, const ProbesBody& body) {
  std::string out;
  std::vector<std::string> families;
  for (const auto& t : body.targets)
    if (t.probe && std::find(families.begin(), families.end(), t.probe->family) == families.end())
      families.push_back(t.probe->family);
  size_t width = 0;
  for (const auto& t : body.targets) width = std::max(width, ln(t.name).size() + 1);
  size_t skipped = 0, disagreeing = 0;
  for (const auto& family : families) {
    std::map<Verdict, int> counts;
    for (const auto& t : body.targets)
      if (t.probe && t.probe->family == family) ++counts[t.verdict];
    std::vector<std::string> parts;
    for (const auto& [v, n] : counts) parts.push_back(fmt::format("{} {}", n, to_string(v)));
    out += fmt::format("== {} ({})\n", ln(family), fmt::join(parts, ", "));
    for (const auto& t : body.targets) {
      if (!t.probe || t.probe->family != family) continue;
      const ProbeFacts& p = *t.probe;
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

}  // namespace ra::report
