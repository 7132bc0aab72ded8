// SPDX-License-Identifier: Apache-2.0
#include "reports/referee_model.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace ra::report {

int significand_bits(const std::string& dtype) {
  if (dtype == "float64" || dtype == "complex128") return 53;
  if (dtype == "float32" || dtype == "complex64") return 24;
  if (dtype == "float16" || dtype == "complex32") return 11;
  if (dtype == "bfloat16") return 8;
  if (dtype.rfind("float8_e4m3", 0) == 0) return 4;
  if (dtype.rfind("float8_e5m2", 0) == 0) return 3;
  return 0;
}

double referee_own_ulp(const std::string& dtype, double ulp) {
  const int p = significand_bits(dtype);
  if (p == 0 || !std::isfinite(ulp)) return std::numeric_limits<double>::quiet_NaN();
  return ulp * std::ldexp(1.0, p - 53);
}

std::string ulp_figure(double ulp) { return ulp < 1e6 ? fmt::format("{:.0f}", ulp) : fmt::format("{:.3g}", ulp); }

std::string referee_bound_text(const std::string& dtype, double ulp) {
  const double own = referee_own_ulp(dtype, ulp);
  if (!std::isfinite(own)) return "";
  if (own < 0.01) return "float64's own error here < 0.01 ULP";
  return fmt::format("float64's own error here is at most ~{:.2g} ULP", own);
}

const char* to_string(DifferenceClass c) {
  switch (c) {
    case DifferenceClass::BeyondReordering:
      return "beyond-reordering";
    case DifferenceClass::WriteRace:
      return "write-race";
    case DifferenceClass::Uninitialized:
      return "uninitialized";
    case DifferenceClass::Unclassified:
      return "unclassified";
    case DifferenceClass::Reordering:
      return "reordering";
  }
  return "unclassified";
}

std::optional<DifferenceClass> difference_class_from_string(const std::string& s) {
  for (int i = 0; i < kDifferenceClasses; ++i)
    if (s == to_string(static_cast<DifferenceClass>(i))) return static_cast<DifferenceClass>(i);
  return std::nullopt;
}

std::optional<ClassSummary> summarise_classes(const std::vector<std::pair<std::string, Classified>>& classes) {
  if (classes.empty()) return std::nullopt;
  ClassSummary s;
  s.cls = classes.front().second.cls;
  s.tensor = classes.front().first;
  s.why = classes.front().second.why;
  for (const auto& [tensor, c] : classes) {
    ++s.counts[static_cast<size_t>(c.cls)];
    if (c.cls < s.cls) {  // more severe (the enum lists the most severe first)
      s.cls = c.cls;
      s.tensor = tensor;
      s.why = c.why;
    }
  }
  return s;
}

std::string classified_line(const Classified& c) { return fmt::format("class: {} - {}", to_string(c.cls), c.why); }

std::string class_summary_line(const ClassSummary& s) {
  int total = 0;
  for (const int n : s.counts) total += n;
  const int mine = s.counts[static_cast<size_t>(s.cls)];
  std::string counts;
  if (mine < total) {
    std::vector<std::string> others;
    for (int i = 0; i < kDifferenceClasses; ++i)
      if (i != static_cast<int>(s.cls) && s.counts[static_cast<size_t>(i)] > 0)
        others.push_back(
            fmt::format("{} {}", s.counts[static_cast<size_t>(i)], to_string(static_cast<DifferenceClass>(i))));
    std::string rest;
    for (size_t i = 0; i < others.size(); ++i) rest += (i == 0 ? "" : ", ") + others[i];
    counts = fmt::format(" ({} of {} tensors; {})", mine, total, rest);
  }
  return fmt::format("class: {}{} - {}: {}", to_string(s.cls), counts, s.tensor, s.why);
}

std::string errors_line(const std::vector<ReferenceError>& errors) {
  if (errors.empty())
    return "error vs float64: no floating tensor (integer and bool tensors are compared bit for bit only)";
  const ReferenceError* worst = nullptr;
  std::vector<const ReferenceError*> unmeasured;
  for (const auto& e : errors) {
    if (!e.note.empty() || e.nan_result > 0 || e.nan_reference > 0 || e.nonfinite > 0 || !std::isfinite(e.max_ulp))
      unmeasured.push_back(&e);
    else if (worst == nullptr || e.max_ulp > worst->max_ulp)
      worst = &e;
  }
  std::string line = "error vs float64:";
  if (worst != nullptr) {
    const std::string own = referee_bound_text(worst->dtype, worst->max_ulp);
    line += fmt::format(" {} {:.0f} ULP (abs {:.3g}, rel {:.3g}{}{})", worst->name, worst->max_ulp, worst->max_abs,
                        worst->max_rel, own.empty() ? "" : "; ", own);
    if (errors.size() > 1) line += fmt::format(", the furthest of {} floating tensors", errors.size());
  }
  if (!unmeasured.empty()) {
    const ReferenceError& e = *unmeasured.front();
    const std::string why = !e.note.empty()       ? e.note
                            : e.nan_reference > 0 ? "NaN in the reference"
                            : e.nan_result > 0    ? "NaN in the result"
                            : e.nonfinite > 0     ? "an infinity where the reference differs"
                                                  : "no element finite in both";
    line += fmt::format("{} {} without figures ({}: {})", worst != nullptr ? ";" : "",
                        unmeasured.size() == 1 ? std::string("1 tensor") : fmt::format("{} tensors", unmeasured.size()),
                        e.name, why);
  }
  return line;
}

std::vector<std::string> config_referee_lines(const std::optional<Referee>& target,
                                              const std::optional<ConfigReferee>& config) {
  std::vector<std::string> lines;
  if (!config) return lines;
  if (target && target->ran) lines.push_back(errors_line(config->errors));
  if (config->summary) lines.push_back(class_summary_line(*config->summary));
  return lines;
}

std::string referee_note_line(const Referee& r) {
  if (r.ran) return "";
  return fmt::format("float64 referee: did not run ({}); the bitwise verdict stands, and differences are unclassified",
                     r.note);
}

const char* to_string(AccuracyChange c) {
  switch (c) {
    case AccuracyChange::Unchanged:
      return "unchanged";
    case AccuracyChange::SameOrder:
      return "same-order";
    case AccuracyChange::Closer:
      return "closer";
    case AccuracyChange::Downgrade:
      return "downgrade";
  }
  return "unchanged";
}

std::optional<AccuracyChange> accuracy_change_from_string(const std::string& s) {
  for (const AccuracyChange c :
       {AccuracyChange::Unchanged, AccuracyChange::SameOrder, AccuracyChange::Closer, AccuracyChange::Downgrade})
    if (s == to_string(c)) return c;
  return std::nullopt;
}

std::string fix_accuracy_text(const FixAccuracy& a, const std::string& from) {
  const std::string tensor = a.errors.size() > 1 ? fmt::format(" in {}", a.tensor) : "";
  switch (a.change) {
    case AccuracyChange::Unchanged:
      return fmt::format("error vs float64 unchanged (max {} ULP{})", ulp_figure(a.max_ulp), tensor);
    case AccuracyChange::SameOrder:
      return fmt::format("error vs float64 of the same order (max {} ULP{} where {} had {})", ulp_figure(a.max_ulp),
                         tensor, from, ulp_figure(a.from_ulp));
    case AccuracyChange::Closer:
      return fmt::format("closer to float64 (max {} ULP{} where {} had {})", ulp_figure(a.max_ulp), tensor, from,
                         ulp_figure(a.from_ulp));
    case AccuracyChange::Downgrade:
      return fmt::format("max {} ULP from float64{} where {} had {}: a downgrade", ulp_figure(a.max_ulp), tensor, from,
                         ulp_figure(a.from_ulp));
  }
  return "";
}

}  // namespace ra::report
