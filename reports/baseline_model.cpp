// SPDX-License-Identifier: Apache-2.0
// Baseline statuses by name (reports/baseline_model.h).
#include "reports/baseline_model.h"
#include "reports/enum_names.h"

#include <fmt/format.h>

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

}  // namespace ra::report
