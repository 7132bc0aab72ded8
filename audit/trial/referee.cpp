// SPDX-License-Identifier: Apache-2.0
#include "audit/trial/referee.h"

#include "audit/common/errors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace ra {
namespace {

using report::Classified;
using report::DifferenceClass;
using report::ReferenceError;

// An error in ULP as the lines print it: a count ("3"), or three digits once it is large ("4.19e+06").
std::string ulp_figure(double ulp) { return ulp < 1e6 ? fmt::format("{:.0f}", ulp) : fmt::format("{:.3g}", ulp); }

const ReferenceError* error_named(const std::vector<ReferenceError>& errors, const std::string& name) {
  for (const auto& e : errors)
    if (e.name == name) return &e;
  return nullptr;
}

Classified unclassified(std::string why) {
  Classified c;
  c.cls = DifferenceClass::Unclassified;
  c.why = std::move(why);
  return c;
}

// The one thing that keeps a measured error from a class, or "".
std::string unusable(const ReferenceError& e, const std::string& run) {
  if (!e.note.empty()) return fmt::format("{}: {}", run, e.note);
  if (e.nan_reference > 0) return "NaN in the reference";
  if (e.nan_result > 0) return fmt::format("NaN in {}", run);
  if (e.nonfinite > 0)
    return fmt::format("{} has {} infinit{} where the reference differs", run, e.nonfinite,
                       e.nonfinite == 1 ? "y" : "ies");
  if (!std::isfinite(e.max_ulp)) return fmt::format("{} has no element finite in both it and the reference", run);
  return "";
}

void summarise(report::ConfigResult& c) {
  std::vector<std::pair<std::string, Classified>> classes;
  for (const auto& f : c.diverged_tensors)
    if (f.referee) classes.emplace_back(f.name, *f.referee);
  c.referee->summary = report::summarise_classes(classes);
}

}  // namespace

const char* to_string(RefereeMode m) {
  switch (m) {
    case RefereeMode::Cpu:
      return "cpu";
    case RefereeMode::Device:
      return "device";
    case RefereeMode::Off:
      return "off";
  }
  return "off";
}

RefereeMode parse_referee_mode(const std::string& s) {
  for (const RefereeMode m : {RefereeMode::Cpu, RefereeMode::Device, RefereeMode::Off})
    if (s == to_string(m)) return m;
  throw UsageError(fmt::format("--referee '{}': use cpu, device or off", excerpt(s)));
}

Config referee_config(const Device& where) {
  Config c{"referee", {{"deterministic", "warn"}}};
  if (!where.is_cuda())
    c.values["threads"] = "1";
  else
    c.values["cublas_workspace"] = ":4096:8";
  return c;
}

report::Referee referee_refused(RefereeMode mode, const Device& where, const std::string& why) {
  return {to_string(mode), where.to_string(), false, why};
}

report::Referee referee_outcome(RefereeMode mode, const Device& where, const report::Trial& summary,
                                const std::optional<TrialResult>& result) {
  report::Referee r{to_string(mode), where.to_string(), false, ""};
  if (summary.status == report::TrialStatus::Ok && result && result->dump_error.empty()) {
    r.ran = true;
    return r;
  }
  std::string message = excerpt(summary.message, 300);  // one line: a raised message may hold several
  std::replace(message.begin(), message.end(), '\n', ' ');
  if (summary.status == report::TrialStatus::Ok && result)
    r.note = fmt::format("its tensors could not be written ({})", result->dump_error);
  else if (result && result->error_kind == "precision")
    r.note = message;  // "not float64 throughout: ..."
  else if (summary.message.find("for 'Double'") != std::string::npos ||
           summary.message.find("for 'ComplexDouble'") != std::string::npos)
    r.note = fmt::format("an op has no float64 kernel: {}", message);
  else if (summary.status == report::TrialStatus::Crashed || summary.status == report::TrialStatus::Timeout)
    r.note = fmt::format("its float64 run {}: {}",
                         summary.status == report::TrialStatus::Timeout ? "timed out" : "did not finish", message);
  else
    r.note = fmt::format("its float64 run raised: {}", message);
  return r;
}

Classified classify_difference(const report::TensorFinding& f, const report::Referee& referee, const std::string& a_run,
                               const ReferenceError* a, const std::string& b_run, const ReferenceError* b) {
  if (!referee.ran) return unclassified(fmt::format("no float64 referee: {}", referee.note));
  if (report::significand_bits(f.dtype) == 0)
    return unclassified(fmt::format("a {} tensor: compared bit for bit only, without error figures", f.dtype));
  if (a == nullptr || b == nullptr)
    return unclassified(fmt::format("{} has no error against the referee", a == nullptr ? a_run : b_run));
  Classified c;
  c.a_run = a_run;
  c.b_run = b_run;
  c.a = *a;
  c.b = *b;
  c.cls = DifferenceClass::Unclassified;
  if (std::string why = unusable(*a, a_run); !why.empty()) {
    c.why = std::move(why);
    return c;
  }
  if (std::string why = unusable(*b, b_run); !why.empty()) {
    c.why = std::move(why);
    return c;
  }
  const double ea = a->max_ulp, eb = b->max_ulp;
  const double low = std::min(ea, eb), high = std::max(ea, eb);
  const double bound = std::max(kFloorUlp, kFactor * low);
  const std::string own = report::referee_bound_text(f.dtype, high);
  if (high <= bound) {
    c.cls = DifferenceClass::Reordering;
    c.why = fmt::format("both within {} and {} ULP of float64; neither is more right ({})", ulp_figure(ea),
                        ulp_figure(eb), own);
    return c;
  }
  const bool a_far = ea > eb;
  const std::string far = a_far ? a_run : b_run, near = a_far ? b_run : a_run;
  c.cls = DifferenceClass::BeyondReordering;
  c.why = fmt::format(
      "{} is {} ULP from float64 where {} is {}: investigate as a bug (an ignored mask, a changed "
      "algorithm, a downgrade) ({})",
      far, ulp_figure(high), near,
      low == 0 ? std::string("exact") : fmt::format("{} ({:.3g}x further)", ulp_figure(low), high / low), own);
  return c;
}

void attach_referee(report::ConfigResult& c, const std::vector<TrialRun>& runs, const report::Referee& referee) {
  c.referee.emplace();
  const int ref = reference_index(runs);
  if (ref < 0) return;
  const TrialRun& reference = runs[static_cast<size_t>(ref)];
  c.referee->errors = reference.result->errors;
  if (c.diverged_tensors.empty()) return;
  for (auto& f : c.diverged_tensors) {
    // The repeat that differs from the reference in this tensor and lies furthest from float64 (the
    // first such when none was measured).
    const TrialRun* other = nullptr;
    const ReferenceError* other_error = nullptr;
    for (size_t i = 0; i < runs.size(); ++i) {
      if (static_cast<int>(i) == ref || !runs[i].result || runs[i].result->status != report::TrialStatus::Ok) continue;
      bool differs = true;
      for (const auto& t : runs[i].result->tensors)
        if (t.name == f.name) differs = t.digest != f.reference_digest;
      if (!differs) continue;
      const ReferenceError* e = error_named(runs[i].result->errors, f.name);
      const bool further = e != nullptr && (other_error == nullptr || e->max_ulp > other_error->max_ulp ||
                                            (std::isnan(e->max_ulp) && !std::isnan(other_error->max_ulp)));
      if (other == nullptr || further) {
        other = &runs[i];
        other_error = e;
      }
    }
    if (other == nullptr) continue;
    f.referee = classify_difference(f, referee, fmt::format("repeat {}", reference.repeat),
                                    error_named(reference.result->errors, f.name),
                                    fmt::format("repeat {}", other->repeat), other_error);
  }
  summarise(c);
}

void classify_dependence(report::ConfigDependence& d, const std::vector<report::ConfigResult>& configs,
                         const report::Referee& referee) {
  if (d.groups.size() < 2 || d.groups[0].empty() || d.groups[1].empty()) return;
  const auto find = [&](const std::string& name) -> const report::ConfigResult* {
    for (const auto& c : configs)
      if (c.name == name) return &c;
    return nullptr;
  };
  const report::ConfigResult* a = find(d.groups[0].front());
  const report::ConfigResult* b = find(d.groups[1].front());
  if (a == nullptr || b == nullptr) return;
  static const std::vector<ReferenceError> none;
  const auto& ea = a->referee ? a->referee->errors : none;
  const auto& eb = b->referee ? b->referee->errors : none;
  std::vector<std::pair<std::string, Classified>> classes;
  for (auto& f : d.differing) {
    f.referee = classify_difference(f, referee, a->name, error_named(ea, f.name), b->name, error_named(eb, f.name));
    classes.emplace_back(f.name, *f.referee);
  }
  d.referee = report::summarise_classes(classes);
}

}  // namespace ra
