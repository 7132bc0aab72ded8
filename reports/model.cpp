// SPDX-License-Identifier: Apache-2.0
// What is computed over a whole report (reports/model.h): its verdict and exit code, the verdict as
// the renderers print it, and which baseline results fail it. Each concern's own helpers sit in the
// .cpp file beside its header (core_model.cpp, target_model.cpp, trace_model.cpp, ...).
#include "reports/model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>

namespace ra::report {

const KindName& kind_of(const Body& body) { return kKinds[body.index()]; }

namespace {

template <size_t... I>
std::optional<Body> body_at(size_t index, std::index_sequence<I...>) {
  std::optional<Body> out;
  ((index == I ? (void)out.emplace(std::in_place_index<I>) : (void)0), ...);
  return out;
}

template <class T, class Element>
TargetRefs<T> refs(std::vector<Element>& elements) {
  std::vector<T*> out;
  for (auto& e : elements) out.push_back(&e.common);
  return TargetRefs<T>(std::move(out));
}

template <class Element>
void keep(std::vector<Element>& elements, const std::function<bool(size_t)>& keep) {
  std::vector<Element> kept;
  for (size_t t = 0; t < elements.size(); ++t)
    if (keep(t)) kept.push_back(std::move(elements[t]));
  elements = std::move(kept);
}

}  // namespace

std::optional<Body> body_of_kind(std::string_view name) {
  for (size_t i = 0; i < kKinds.size(); ++i)
    if (kKinds[i].name == name) return body_at(i, std::make_index_sequence<std::variant_size_v<Body>>());
  return std::nullopt;
}

Targets common_targets(Body& body) {
  return std::visit(overloaded{[](RunBody& b) { return refs<Target>(b.targets); },
                               [](ExecBody& b) { return refs<Target>(b.targets); },
                               [](ProbesBody& b) { return refs<Target>(b.targets); },
                               [](Invariance&) { return Targets(); }, [](SelfTest&) { return Targets(); }},
                    body);
}

ConstTargets common_targets(const Body& body) { return common_targets(const_cast<Body&>(body)); }

void keep_targets(Body& body, const std::function<bool(size_t)>& accept) {
  std::visit(overloaded{[&](RunBody& b) { keep(b.targets, accept); }, [&](ExecBody& b) { keep(b.targets, accept); },
                        [&](ProbesBody& b) { keep(b.targets, accept); }, [](Invariance&) {}, [](SelfTest&) {}},
             body);
}

namespace {

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

bool baseline_failure(const Report& report, const BaselineResult& result) {
  if (result.status == BaselineStatus::Regression) return true;
  if (result.status == BaselineStatus::Explained) return report.baseline && report.baseline->fail_on_explained;
  if (result.status != BaselineStatus::Nondeterministic) return false;
  for (const auto& t : report.targets())
    if (t.name == result.target)
      for (const auto& c : t.configs)
        if (c.name == result.config && c.allowed_by) return false;
  return true;
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
  for (const auto& t : report.targets()) targets.push_back(&t);
  return accepted_text(report.verdict, targets);
}

namespace {

// A target's verdict from its configurations (allowed and tolerated ones count as reproducible)
// and `kind`, what its kind adds: a restart-replay's, exec's --ranks-equal.
void judge_target(const Report& report, Target& target, Verdict kind) {
  Verdict t = Verdict::Reproducible;
  bool all_skipped = !target.configs.empty();
  for (auto& c : target.configs) {
    c.within_tolerance = all_within_tolerance(c);
    c.tolerated = report.tolerant && c.within_tolerance && !c.allowed_by;
    if (!c.allowed_by && !c.tolerated && severity(c.verdict) > severity(t)) t = c.verdict;
    all_skipped = all_skipped && c.verdict == Verdict::Skipped;
  }
  if (severity(kind) > severity(t)) t = kind;
  target.verdict = all_skipped && t == Verdict::Reproducible ? Verdict::Skipped : t;
}

// run --replay: a diverged replay diverged, a crashed one crashed; inconclusive changes nothing.
Verdict replay_verdict(const RunFacts& facts) {
  if (!facts.replay) return Verdict::Reproducible;
  if (facts.replay->verdict == ReplayVerdict::Diverged) return Verdict::Diverged;
  if (facts.replay->verdict == ReplayVerdict::Crashed) return Verdict::Crashed;
  return Verdict::Reproducible;
}

// exec --ranks-equal: data-parallel replicas that hold different parameters diverged.
Verdict ranks_verdict(const ExecFacts& facts) {
  return facts.ranks_equal && !facts.ranks_equal->equal ? Verdict::Diverged : Verdict::Reproducible;
}

// The report's verdict and exit code from its targets' (run --calls K: a later call that differs
// from call 1 in its process is a finding, exit 1, which leaves the run-to-run verdicts as they are).
void judge_report(Report& report) {
  Verdict worst = Verdict::Reproducible;
  for (const auto& target : report.targets())
    if (severity(target.verdict) > severity(worst)) worst = target.verdict;
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
  for (const auto& target : report.targets())
    for (const auto& c : target.configs)
      if (c.warm_up && warm_up_dependent(*c.warm_up) && report.exit_code == 0) report.exit_code = 1;
}

}  // namespace

void finalize(Report& report) {
  std::visit(overloaded{[&](RunBody& b) {
                          for (auto& t : b.targets) judge_target(report, t.common, replay_verdict(t.facts));
                          judge_report(report);
                        },
                        [&](ExecBody& b) {
                          for (auto& t : b.targets) judge_target(report, t.common, ranks_verdict(t.facts));
                          judge_report(report);
                        },
                        [&](ProbesBody& b) {
                          for (auto& t : b.targets) judge_target(report, t.common, Verdict::Reproducible);
                          judge_report(report);
                        },
                        [&](const Invariance& inv) { finalize_invariance(report, inv); },
                        [&](const SelfTest& self) {
                          report.verdict = Verdict::Reproducible;
                          report.exit_code = 0;
                          for (const auto& check : self.checks)
                            if (!check.passed) report.exit_code = 1;
                        }},
             report.body);
  if (!report.allowlist_expired.empty()) report.exit_code = 1;
  if (report.baseline)
    for (const auto& result : report.baseline->results)
      if (baseline_failure(report, result)) report.exit_code = 1;
}

namespace {

// The first configuration of `t` that crashed or timed out and no allowlist entry excuses.
std::string first_incomplete(const Target& t) {
  for (const auto& c : t.configs)
    if ((c.verdict == Verdict::Crashed || c.verdict == Verdict::Timeout) && !c.allowed_by)
      return fmt::format("{}, configuration {} {}: {}", t.name, c.name, to_string(c.verdict),
                         c.message.empty() ? "no reason recorded" : c.message);
  return "";
}

template <class Element>
std::string first_incomplete(const std::vector<Element>& targets) {
  for (const auto& t : targets)
    if (std::string reason = first_incomplete(t.common); !reason.empty()) return reason;
  return "";
}

}  // namespace

std::string incomplete_reason(const Report& report) {
  return std::visit(overloaded{[](const RunBody& b) {
                                 for (const auto& m : b.targets) {
                                   if (std::string reason = first_incomplete(m.common); !reason.empty()) return reason;
                                   if (m.facts.replay && m.facts.replay->verdict == ReplayVerdict::Crashed)
                                     return fmt::format("{}, restart-replay crashed: {}", m.common.name,
                                                        m.facts.replay->reason);
                                 }
                                 return std::string();
                               },
                               [](const ExecBody& b) { return first_incomplete(b.targets); },
                               [](const ProbesBody& b) { return first_incomplete(b.targets); },
                               [](const Invariance& inv) { return invariance_incomplete_reason(inv); },
                               [](const SelfTest&) { return std::string(); }},
                    report.body);
}

}  // namespace ra::report
