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

}  // namespace ra::report
