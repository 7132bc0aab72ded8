// SPDX-License-Identifier: Apache-2.0
// Verdict and trial-status names, the median, and tolerances (reports/core_model.h).
#include "reports/core_model.h"
#include "reports/enum_names.h"

#include <fmt/format.h>

#include <algorithm>

namespace ra::report {

namespace {

constexpr detail::NameTable<Verdict, 6> kVerdicts = {{{Verdict::Reproducible, "reproducible"},
                                                      {Verdict::Diverged, "diverged"},
                                                      {Verdict::Raised, "raised"},
                                                      {Verdict::Crashed, "crashed"},
                                                      {Verdict::Timeout, "timeout"},
                                                      {Verdict::Skipped, "skipped"}}};

constexpr detail::NameTable<TrialStatus, 7> kStatuses = {{{TrialStatus::Ok, "ok"},
                                                          {TrialStatus::Raised, "raised"},
                                                          {TrialStatus::Error, "error"},
                                                          {TrialStatus::ConfigError, "config_error"},
                                                          {TrialStatus::Crashed, "crashed"},
                                                          {TrialStatus::Timeout, "timeout"},
                                                          {TrialStatus::Skipped, "skipped"}}};

}  // namespace

const char* to_string(Verdict v) { return detail::name_of(kVerdicts, v); }
std::optional<Verdict> verdict_from_string(const std::string& s) { return detail::value_named(kVerdicts, s); }
const char* to_string(TrialStatus v) { return detail::name_of(kStatuses, v); }
std::optional<TrialStatus> trial_status_from_string(const std::string& s) { return detail::value_named(kStatuses, s); }

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

RoundCost round_cost(const std::vector<double>& ratios) {
  RoundCost c;
  c.ratio = median(ratios);
  if (ratios.size() >= 2) {  // one round cannot show whether rounds agree
    c.low = *std::min_element(ratios.begin(), ratios.end());
    c.high = *std::max_element(ratios.begin(), ratios.end());
  }
  return c;
}

bool cost_measurable(const std::optional<double>& low, const std::optional<double>& high) {
  if (!low || !high || !(*low > 0)) return false;
  const bool straddles = *low <= 1.0 && *high >= 1.0;
  return !straddles && *high <= 2.0 * *low;
}

std::string round_cost_text(const std::optional<double>& ratio, const std::optional<double>& low,
                            const std::optional<double>& high) {
  if (!ratio) return "";
  if (!cost_measurable(low, high)) return kCostNotMeasurable;
  return fmt::format("{:.2f}x ({:.2f}-{:.2f})", *ratio, *low, *high);
}

Tolerance default_tolerance(const std::string& dtype) {
  if (dtype == "float16" || dtype == "complex32") return {1e-5, 1e-3};
  if (dtype == "bfloat16") return {1e-5, 1.6e-2};
  if (dtype == "float32" || dtype == "complex64") return {1e-5, 1.3e-6};
  if (dtype == "float64" || dtype == "complex128") return {1e-7, 1e-7};
  return {};
}

bool within_tolerance(const DivergenceStats& s) { return s.note.empty() && s.differing > 0 && s.beyond_tolerance == 0; }

std::string no_divergence_text(int completed, double rate_high) {
  const int n = completed - 1;
  return fmt::format(
      "no divergence in {} comparison{} ({} runs); a divergence rate above {:.0f}% would have shown "
      "(95% confidence)",
      n, n == 1 ? "" : "s", completed, 100 * rate_high);
}

}  // namespace ra::report
