// SPDX-License-Identifier: Apache-2.0
#include "reports/model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

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

int severity(Verdict v) {
  switch (v) {
    case Verdict::Reproducible:
      return 0;
    case Verdict::Skipped:
      return 0;
    case Verdict::Crashed:
      return 1;
    case Verdict::Timeout:
      return 1;
    case Verdict::Raised:
      return 2;
    case Verdict::Diverged:
      return 3;
  }
  return 0;
}

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

const char* to_string(ReplayVerdict v) {
  switch (v) {
    case ReplayVerdict::Reproducible:
      return "reproducible";
    case ReplayVerdict::Diverged:
      return "diverged";
    case ReplayVerdict::Inconclusive:
      return "inconclusive";
    case ReplayVerdict::Crashed:
      return "crashed";
  }
  return "?";
}

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

bool baseline_failure(const Report& report, const BaselineResult& result) {
  if (result.status == BaselineStatus::Regression) return true;
  if (result.status == BaselineStatus::Explained) return report.baseline && report.baseline->fail_on_explained;
  if (result.status != BaselineStatus::Nondeterministic) return false;
  for (const auto& t : report.targets)
    if (t.name == result.target)
      for (const auto& c : t.configs)
        if (c.name == result.config && c.allowed_by) return false;
  return true;
}

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

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

bool fix_costs_measured(const FixSearch& f) {
  return f.baseline_median_ms.has_value() || std::any_of(f.candidates.begin(), f.candidates.end(),
                                                         [](const FixCandidate& c) { return c.median_ms.has_value(); });
}

const FixCandidate* cheapest_fix(const FixSearch& f) {
  const FixCandidate* best = nullptr;
  for (const size_t i : f.best) {
    if (i >= f.candidates.size()) continue;
    const FixCandidate& c = f.candidates[i];
    if (!best || (c.cost_ratio && (!best->cost_ratio || *c.cost_ratio < *best->cost_ratio))) best = &c;
  }
  return best;
}

bool same_cost(const FixCandidate& a, const FixCandidate& b) {
  if (!a.cost_low || !a.cost_high || !b.cost_low || !b.cost_high) return false;
  return *a.cost_low <= *b.cost_high && *b.cost_low <= *a.cost_high;
}

std::vector<const FixCandidate*> fixes_costing_the_same(const FixSearch& f) {
  std::vector<const FixCandidate*> out;
  const FixCandidate* cheapest = cheapest_fix(f);
  if (!cheapest) return out;
  for (const size_t i : f.best)
    if (i < f.candidates.size() && &f.candidates[i] != cheapest && same_cost(f.candidates[i], *cheapest))
      out.push_back(&f.candidates[i]);
  return out;
}

uint64_t OpStream::records() const {
  uint64_t n = 0;
  for (const auto& t : threads) n += t.records;
  return n;
}

uint64_t OpStream::packed_bytes() const {
  uint64_t n = 0;
  for (const auto& t : threads) n += t.packed.size();
  return n;
}

OpStream OpStream::without_names() const {
  OpStream out;
  for (const auto& t : threads) out.threads.push_back({t.thread, t.records, t.packed, ""});
  return out;
}

Tolerance default_tolerance(const std::string& dtype) {
  if (dtype == "float16" || dtype == "complex32") return {1e-5, 1e-3};
  if (dtype == "bfloat16") return {1e-5, 1.6e-2};
  if (dtype == "float32" || dtype == "complex64") return {1e-5, 1.3e-6};
  if (dtype == "float64" || dtype == "complex128") return {1e-7, 1e-7};
  return {};
}

bool within_tolerance(const DivergenceStats& s) { return s.note.empty() && s.differing > 0 && s.beyond_tolerance == 0; }

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

namespace {

// What the exit code accepted among `targets`' configurations, as verdict_text says it.
std::string accepted_text(Verdict shown, const std::vector<const Target*>& targets) {
  if (shown != Verdict::Reproducible) return to_string(shown);
  Verdict worst = Verdict::Reproducible;
  std::vector<std::string> reasons;
  bool tolerated = false;
  for (const Target* t : targets)
    for (const auto& c : t->configs) {
      const bool found = c.verdict == Verdict::Diverged || c.verdict == Verdict::Raised;
      if (!found || (!c.allowed_by && !c.tolerated)) continue;
      if (severity(c.verdict) > severity(worst)) worst = c.verdict;
      if (c.allowed_by && std::find(reasons.begin(), reasons.end(), c.allowed_by->reason) == reasons.end())
        reasons.push_back(c.allowed_by->reason);
      tolerated = tolerated || c.tolerated;
    }
  if (worst == Verdict::Reproducible) return to_string(shown);
  std::vector<std::string> why;
  if (!reasons.empty()) why.push_back(fmt::format("allowed: {}", fmt::join(reasons, "; ")));
  if (tolerated) why.push_back("within tolerance, --tolerant");
  return fmt::format("{} ({})", to_string(worst), fmt::join(why, "; "));
}

}  // namespace

std::string verdict_text(const Target& target) { return accepted_text(target.verdict, {&target}); }

std::string verdict_text(const Report& report) {
  std::vector<const Target*> targets;
  for (const auto& t : report.targets) targets.push_back(&t);
  return accepted_text(report.verdict, targets);
}

std::string selftest_summary(const SelfTest& self) {
  std::vector<std::string> failed;
  for (const auto& c : self.checks)
    if (!c.passed) failed.push_back(c.name);
  if (failed.empty()) return fmt::format("all {} checks passed", self.checks.size());
  return fmt::format("{} of {} checks failed: {}", failed.size(), self.checks.size(), fmt::join(failed, ", "));
}

void finalize(Report& report) {
  Verdict worst = Verdict::Reproducible;
  for (auto& target : report.targets) {
    Verdict t = Verdict::Reproducible;
    bool all_skipped = !target.configs.empty();
    for (auto& c : target.configs) {
      c.within_tolerance = all_within_tolerance(c);
      c.tolerated = report.tolerant && c.within_tolerance && !c.allowed_by;
      if (!c.allowed_by && !c.tolerated && severity(c.verdict) > severity(t)) t = c.verdict;
      all_skipped = all_skipped && c.verdict == Verdict::Skipped;
    }
    if (target.replay && target.replay->verdict == ReplayVerdict::Diverged && severity(Verdict::Diverged) > severity(t))
      t = Verdict::Diverged;
    if (target.replay && target.replay->verdict == ReplayVerdict::Crashed && severity(Verdict::Crashed) > severity(t))
      t = Verdict::Crashed;
    // exec --ranks-equal: data-parallel replicas that hold different parameters diverged.
    if (target.exec && target.exec->ranks_equal && !target.exec->ranks_equal->equal &&
        severity(Verdict::Diverged) > severity(t))
      t = Verdict::Diverged;
    target.verdict = all_skipped && t == Verdict::Reproducible ? Verdict::Skipped : t;
    if (severity(target.verdict) > severity(worst)) worst = target.verdict;
  }
  report.verdict = worst;
  switch (worst) {
    case Verdict::Diverged:
    case Verdict::Raised:
      report.exit_code = 1;
      break;
    case Verdict::Crashed:
    case Verdict::Timeout:
      report.exit_code = 4;
      break;
    default:
      report.exit_code = 0;
  }
  // run --calls K: a later call that differs from call 1 in its process is a finding (exit 1), which
  // leaves the run-to-run verdicts as they are.
  for (const auto& target : report.targets)
    for (const auto& c : target.configs)
      if (c.warm_up && warm_up_dependent(*c.warm_up) && report.exit_code == 0) report.exit_code = 1;
  if (report.invariance) finalize_invariance(report);
  if (!report.allowlist_expired.empty()) report.exit_code = 1;
  if (report.selftest)
    for (const auto& check : report.selftest->checks)
      if (!check.passed) report.exit_code = 1;
  if (report.baseline)
    for (const auto& result : report.baseline->results)
      if (baseline_failure(report, result)) report.exit_code = 1;
}

}  // namespace ra::report
