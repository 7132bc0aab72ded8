// SPDX-License-Identifier: Apache-2.0
// What is computed over one target or configuration: costs, tolerance, warm-up (reports/target_model.h).
#include "reports/target_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>

namespace ra::report {

std::optional<double> median_wall_ms(const ConfigResult& config) {
  std::vector<double> ms;
  for (const auto& t : config.trials)
    if (t.status == TrialStatus::Ok) ms.push_back(t.wall_ms);
  return median(std::move(ms));
}

std::optional<double> cost_ratio(const Target& target, size_t i) {
  if (target.configs.empty() || i >= target.configs.size()) return std::nullopt;
  const auto base = median_wall_ms(target.configs.front());
  const auto mine = median_wall_ms(target.configs[i]);
  if (!base || !mine || *base < kMinComparableMs || *mine < kMinComparableMs) return std::nullopt;
  return *mine / *base;
}
bool all_within_tolerance(const ConfigResult& config) {
  if (config.verdict != Verdict::Diverged || config.diverged_tensors.empty()) return false;
  for (const auto& f : config.diverged_tensors)
    if (!f.stats || !within_tolerance(*f.stats)) return false;
  return true;
}

std::string tolerance_verdict(const ConfigResult& config) {
  return std::string("every differing element is within tolerance") +
         (config.tolerated ? "; accepted by --tolerant" : "");
}

bool warm_up_dependent(const WarmUp& w) { return w.mutated.empty() && w.trials_differing > 0; }

namespace {

// --trace: where call 1 and the first differing call part: the first op that turned matching inputs
// into different outputs, else the first place where their op streams split.
std::string warm_up_trace_line(const WarmUp& w) {
  const TraceSummary& t = *w.trace;
  if (!t.root_causes.empty()) {
    const RootCause& r = t.root_causes.front();
    return fmt::format("first op whose output differs between call 1 and call {}: {} (#{}, {}{}), inputs matched",
                       w.first_call, r.op, r.position, r.direction, r.module.empty() ? "" : " in " + r.module);
  }
  if (!t.splits.empty()) {
    const StructuralSplit& s = t.splits.front();
    return fmt::format("op streams of call 1 and call {} split at #{}: call 1 runs {}, call {} runs {}", w.first_call,
                       s.reference_position, s.reference_op.empty() ? "nothing" : s.reference_op, w.first_call,
                       s.other_op.empty() ? "nothing" : s.other_op);
  }
  return fmt::format("the traces of call 1 and call {} show no op whose output differs", w.first_call);
}

}  // namespace

std::vector<std::string> warm_up_lines(const WarmUp& w) {
  const std::string later = w.calls == 2 ? "call 2" : fmt::format("calls 2-{}", w.calls);
  if (!w.mutated.empty())
    return {fmt::format("calls are not comparable: forward mutates {}", fmt::join(w.mutated, ", "))};
  if (w.trials_differing == 0)
    return {fmt::format("no warm-up dependence: {} equal call 1 bitwise in {} trial{}", later, w.trials_compared,
                        w.trials_compared == 1 ? "" : "s")};
  constexpr size_t kNamed = 3;
  std::vector<std::string> names(w.tensors.begin(),
                                 w.tensors.begin() + static_cast<std::ptrdiff_t>(std::min(w.tensors.size(), kNamed)));
  if (w.tensors.size() > kNamed) names.push_back(fmt::format("{} more", w.tensors.size() - kNamed));
  std::vector<std::string> lines = {
      fmt::format("warm-up dependence: call {} differs from call 1 in the same process in {}/{} trials ({})",
                  w.first_call, w.trials_differing, w.trials_compared, fmt::join(names, ", "))};
  if (w.trace) lines.push_back(warm_up_trace_line(w));
  return lines;
}

}  // namespace ra::report
