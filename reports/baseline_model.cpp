// SPDX-License-Identifier: Apache-2.0
// Baseline statuses by name (reports/baseline_model.h).
#include "reports/baseline_model.h"
#include "reports/enum_names.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace ra::report {

namespace {
constexpr detail::NameTable<BaselineStatus, 7> kBaselineStatuses = {
    {{BaselineStatus::Match, "match"},
     {BaselineStatus::Explained, "explained"},
     {BaselineStatus::Regression, "regression"},
     {BaselineStatus::Nondeterministic, "nondeterministic"},
     {BaselineStatus::Incomparable, "incomparable"},
     {BaselineStatus::Missing, "missing"},
     {BaselineStatus::Added, "added"}}};
}  // namespace

const char* to_string(BaselineStatus v) { return detail::name_of(kBaselineStatuses, v); }
std::optional<BaselineStatus> baseline_status_from_string(const std::string& s) {
  return detail::value_named(kBaselineStatuses, s);
}

BehaviourChanges behaviour_changes(const BaselineComparison& b) {
  BehaviourChanges out;
  for (const auto& r : b.results) {
    if (r.status == BaselineStatus::Match && r.tensors > 0) ++out.kept_bits;
    if (r.differing > 0 && r.status != BaselineStatus::Missing && r.status != BaselineStatus::Added) ++out.changed_bits;
    if (!r.baseline_verdict || !r.current_verdict || *r.baseline_verdict == *r.current_verdict) continue;
    const std::string name = r.target + " / " + r.config;
    const Verdict before = *r.baseline_verdict, now = *r.current_verdict;
    if (now == Verdict::Diverged && before == Verdict::Reproducible) out.newly_divergent.push_back(name);
    if (now == Verdict::Reproducible && before == Verdict::Diverged) {
      if (!r.baseline_repeats || !r.current_repeats) {
        out.newly_fixed.push_back(name);  // no rates (invariance, older reports): the verdicts alone
        continue;
      }
      const RepeatEvidence& b0 = *r.baseline_repeats;
      const RepeatEvidence& c0 = *r.current_repeats;
      const bool excluded = c0.completed >= 2 && c0.rate_high < b0.rate_low;
      (excluded ? out.newly_fixed : out.not_seen).push_back(name);
      out.repeats[name] =
          fmt::format("{}; before, {} of {} comparison{} diverged", no_divergence_text(c0.completed, c0.rate_high),
                      b0.diverging, b0.completed - 1, b0.completed == 2 ? "" : "s");
    }
    if (now == Verdict::Raised) out.newly_raising.push_back(name);
    if (before == Verdict::Raised && (now == Verdict::Reproducible || now == Verdict::Diverged))
      out.no_longer_raising.push_back(name);
  }
  return out;
}

namespace {

std::string tensors_text(int n) { return fmt::format("{} tensor{}", n, n == 1 ? "" : "s"); }

void add_group(DirectionGroup& into, const DirectionGroup& g) {
  if (g.count == 0) return;
  const auto gap = [](const DirectionGroup& x) {
    const double low = std::min(x.baseline_ulp, x.current_ulp), high = std::max(x.baseline_ulp, x.current_ulp);
    return low == 0 ? std::numeric_limits<double>::infinity() : high / low;
  };
  if (into.count == 0 || gap(g) > gap(into)) {
    into.tensor = g.tensor;
    into.baseline_ulp = g.baseline_ulp;
    into.current_ulp = g.current_ulp;
  }
  into.count += g.count;
}

// "3 tensors 40x further from float64 under torch 2.15.0 (output: 310 ULP where torch 2.11.0 had 8)"
std::string group_text(const DirectionGroup& g, const char* way, const SideNames& names) {
  const double low = std::min(g.baseline_ulp, g.current_ulp), high = std::max(g.baseline_ulp, g.current_ulp);
  const double ratio = low == 0 ? 0 : high / low;
  // "1.5x", "40x", "1304x": two digits below 10, else whole
  const std::string factor = low == 0     ? std::string("")
                             : ratio < 10 ? fmt::format("{:.2g}x ", ratio)
                                          : fmt::format("{:.0f}x ", ratio);
  const std::string base = g.baseline_ulp == 0 ? fmt::format("{} was exact", names.baseline)
                                               : fmt::format("{} had {}", names.baseline, ulp_figure(g.baseline_ulp));
  return fmt::format("{} {}{} float64 under {} ({}{}: {} ULP where {})", tensors_text(g.count), factor, way,
                     names.current, g.count > 1 ? "furthest apart, " : "", g.tensor, ulp_figure(g.current_ulp), base);
}

}  // namespace

void add_direction(BaselineDirection& into, const BaselineDirection& d) {
  if (into.note.empty()) into.note = d.note;
  into.reordering += d.reordering;
  into.baseline_max_ulp = std::max(into.baseline_max_ulp, d.baseline_max_ulp);
  into.current_max_ulp = std::max(into.current_max_ulp, d.current_max_ulp);
  add_group(into.further, d.further);
  add_group(into.closer, d.closer);
  if (into.unclassified_why.empty()) into.unclassified_why = d.unclassified_why;
  into.unclassified += d.unclassified;
}

SideNames side_names(const std::vector<StackVersion>& stack) {
  for (const auto& v : stack)
    if (v.name == "torch" && v.changed()) return {"torch " + v.baseline, "torch " + v.current};
  return {"the baseline", "the current results"};
}

std::string direction_line(const BaselineDirection& d, const SideNames& names) {
  if (d.classed() == 0)
    return fmt::format("direction vs float64: not known: {}", d.note.empty() ? "no tensor to class" : d.note);
  const bool releases = names.current.rfind("torch ", 0) == 0;
  const int n = d.classed();
  std::string line = fmt::format("direction vs float64: {} changed {}", names.current, tensors_text(n));
  const std::string both = releases ? "under both releases" : "on both sides";
  if (d.reordering == n)
    return line + fmt::format(", {}within {} ULP of float64 {}: reordering; neither is more right{}",
                              n == 1 ? "" : "all ", ulp_figure(std::max(d.baseline_max_ulp, d.current_max_ulp)), both,
                              d.note.empty() ? "" : fmt::format("; not known for the rest: {}", d.note));
  std::vector<std::string> parts;
  if (d.further.count > 0)
    parts.push_back(group_text(d.further, "further from", names) +
                    ": beyond reordering; investigate as a bug (a changed algorithm, a downgrade, an ignored mask)");
  if (d.closer.count > 0)
    parts.push_back(group_text(d.closer, "closer to", names) +
                    ": beyond reordering, an improvement or another algorithm");
  if (d.reordering > 0)
    parts.push_back(fmt::format("{} within {} ULP of float64 {}: reordering", d.reordering,
                                ulp_figure(std::max(d.baseline_max_ulp, d.current_max_ulp)), both));
  if (d.unclassified > 0) parts.push_back(fmt::format("{} unclassified ({})", d.unclassified, d.unclassified_why));
  line += ": ";
  for (size_t i = 0; i < parts.size(); ++i) line += (i == 0 ? "" : "; ") + parts[i];
  return line + (d.note.empty() ? "" : fmt::format("; not known for the rest: {}", d.note));
}

std::optional<BaselineDirection> comparison_direction(const BaselineComparison& b) {
  std::optional<BaselineDirection> out;
  for (const auto& r : b.results)
    if (r.direction) {
      if (!out) out.emplace();
      add_direction(*out, *r.direction);
    }
  return out;
}

}  // namespace ra::report
