// SPDX-License-Identifier: Apache-2.0
// What is computed over a whole report (reports/model.h): its verdict and exit code, the verdict as
// the renderers print it, and which baseline results fail it. Each concern's own helpers sit in the
// .cpp file beside its header (core_model.cpp, target_model.cpp, trace_model.cpp, ...).
#include "reports/model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

namespace ra::report {

const std::vector<Target>& Report::targets() const {
  static const std::vector<Target> none;
  return std::visit(overloaded{[](const TargetsBody& b) -> const std::vector<Target>& { return b.targets; },
                               [](const ProbesBody& b) -> const std::vector<Target>& { return b.targets; },
                               [](const Invariance&) -> const std::vector<Target>& { return none; },
                               [](const SelfTest&) -> const std::vector<Target>& { return none; }},
                    body);
}

std::vector<Target>* target_list(Body& body) {
  return std::visit(overloaded{[](TargetsBody& b) { return &b.targets; }, [](ProbesBody& b) { return &b.targets; },
                               [](Invariance&) -> std::vector<Target>* { return nullptr; },
                               [](SelfTest&) -> std::vector<Target>* { return nullptr; }},
                    body);
}

std::vector<Target>& Report::targets() {
  if (std::vector<Target>* list = target_list(body)) return *list;
  throw std::logic_error("a report of this kind has no targets");
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

// The verdicts of a body's targets, and the report's from them (a target's restart-replay and exec's
// --ranks-equal count; run --calls K: a later call that differs from call 1 in its process is a
// finding, exit 1, which leaves the run-to-run verdicts as they are).
void finalize_targets(Report& report, std::vector<Target>& targets) {
  Verdict worst = Verdict::Reproducible;
  for (auto& target : targets) {
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
  for (const auto& target : targets)
    for (const auto& c : target.configs)
      if (c.warm_up && warm_up_dependent(*c.warm_up) && report.exit_code == 0) report.exit_code = 1;
}

}  // namespace

void finalize(Report& report) {
  std::visit(overloaded{[&](TargetsBody& b) { finalize_targets(report, b.targets); },
                        [&](ProbesBody& b) { finalize_targets(report, b.targets); },
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

std::string first_incomplete(const std::vector<Target>& targets) {
  for (const auto& t : targets) {
    for (const auto& c : t.configs)
      if ((c.verdict == Verdict::Crashed || c.verdict == Verdict::Timeout) && !c.allowed_by)
        return fmt::format("{}, configuration {} {}: {}", t.name, c.name, to_string(c.verdict),
                           c.message.empty() ? "no reason recorded" : c.message);
    if (t.replay && t.replay->verdict == ReplayVerdict::Crashed)
      return fmt::format("{}, restart-replay crashed: {}", t.name, t.replay->reason);
  }
  return "";
}

}  // namespace

std::string incomplete_reason(const Report& report) {
  return std::visit(overloaded{[](const TargetsBody& b) { return first_incomplete(b.targets); },
                               [](const ProbesBody& b) { return first_incomplete(b.targets); },
                               [](const Invariance& inv) { return invariance_incomplete_reason(inv); },
                               [](const SelfTest&) { return std::string(); }},
                    report.body);
}

}  // namespace ra::report
