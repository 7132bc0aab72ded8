// SPDX-License-Identifier: Apache-2.0
// Baseline statuses by name (reports/baseline_model.h).
#include "reports/baseline_model.h"

#include <array>
#include <utility>

namespace ra::report {

namespace {
constexpr std::array<std::pair<BaselineStatus, const char*>, 7> kBaselineStatuses = {
    {{BaselineStatus::Match, "match"},
     {BaselineStatus::Explained, "explained"},
     {BaselineStatus::Regression, "regression"},
     {BaselineStatus::Nondeterministic, "nondeterministic"},
     {BaselineStatus::Incomparable, "incomparable"},
     {BaselineStatus::Missing, "missing"},
     {BaselineStatus::Added, "added"}}};
}  // namespace

const char* to_string(BaselineStatus v) {
  for (const auto& [k, s] : kBaselineStatuses)
    if (k == v) return s;
  return "?";
}
std::optional<BaselineStatus> baseline_status_from_string(const std::string& s) {
  for (const auto& [k, name] : kBaselineStatuses)
    if (s == name) return k;
  return std::nullopt;
}

}  // namespace ra::report
