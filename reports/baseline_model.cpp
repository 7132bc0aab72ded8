// SPDX-License-Identifier: Apache-2.0
// Baseline statuses by name (reports/baseline_model.h).
#include "reports/baseline_model.h"
#include "reports/enum_names.h"

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
    if (now == Verdict::Reproducible && before == Verdict::Diverged) out.newly_fixed.push_back(name);
    if (now == Verdict::Raised) out.newly_raising.push_back(name);
    if (before == Verdict::Raised && (now == Verdict::Reproducible || now == Verdict::Diverged))
      out.no_longer_raising.push_back(name);
  }
  return out;
}

}  // namespace ra::report
