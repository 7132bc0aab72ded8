// SPDX-License-Identifier: Apache-2.0
// Verdict and trial-status names, the median, and tolerances (reports/core_model.h).
#include "reports/core_model.h"

#include <algorithm>
#include <array>
#include <utility>

namespace ra::report {

namespace {

constexpr std::array<std::pair<Verdict, const char*>, 6> kVerdicts = {{{Verdict::Reproducible, "reproducible"},
                                                                       {Verdict::Diverged, "diverged"},
                                                                       {Verdict::Raised, "raised"},
                                                                       {Verdict::Crashed, "crashed"},
                                                                       {Verdict::Timeout, "timeout"},
                                                                       {Verdict::Skipped, "skipped"}}};

constexpr std::array<std::pair<TrialStatus, const char*>, 7> kStatuses = {{{TrialStatus::Ok, "ok"},
                                                                           {TrialStatus::Raised, "raised"},
                                                                           {TrialStatus::Error, "error"},
                                                                           {TrialStatus::ConfigError, "config_error"},
                                                                           {TrialStatus::Crashed, "crashed"},
                                                                           {TrialStatus::Timeout, "timeout"},
                                                                           {TrialStatus::Skipped, "skipped"}}};

}  // namespace

const char* to_string(Verdict v) {
  for (const auto& [k, s] : kVerdicts)
    if (k == v) return s;
  return "?";
}
std::optional<Verdict> verdict_from_string(const std::string& s) {
  for (const auto& [k, name] : kVerdicts)
    if (s == name) return k;
  return std::nullopt;
}
const char* to_string(TrialStatus v) {
  for (const auto& [k, s] : kStatuses)
    if (k == v) return s;
  return "?";
}
std::optional<TrialStatus> trial_status_from_string(const std::string& s) {
  for (const auto& [k, name] : kStatuses)
    if (s == name) return k;
  return std::nullopt;
}
std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

Tolerance default_tolerance(const std::string& dtype) {
  if (dtype == "float16" || dtype == "complex32") return {1e-5, 1e-3};
  if (dtype == "bfloat16") return {1e-5, 1.6e-2};
  if (dtype == "float32" || dtype == "complex64") return {1e-5, 1.3e-6};
  if (dtype == "float64" || dtype == "complex128") return {1e-7, 1e-7};
  return {};
}

bool within_tolerance(const DivergenceStats& s) { return s.note.empty() && s.differing > 0 && s.beyond_tolerance == 0; }

}  // namespace ra::report
