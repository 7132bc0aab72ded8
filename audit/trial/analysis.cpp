// SPDX-License-Identifier: Apache-2.0
#include "audit/trial/analysis.h"

#include "audit/common/errors.h"
#include "audit/digest/stats_math.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <set>

namespace ra {
namespace {

using report::TrialStatus;
using report::Verdict;

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

std::map<std::string, const report::TensorDigest*> by_name(const std::vector<report::TensorDigest>& tensors) {
  std::map<std::string, const report::TensorDigest*> m;
  for (const auto& t : tensors) m[t.name] = &t;
  return m;
}

}  // namespace

bool crash_signal(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGABRT || sig == SIGILL || sig == SIGFPE || sig == SIGSYS ||
         sig == SIGTRAP;
}

std::string signal_text(int sig) {
  if (crash_signal(sig)) return fmt::format("crashed with {} (signal {})", signal_name(sig), sig);
  return fmt::format(
      "killed from outside (by {}, signal {}: the out-of-memory killer, a job scheduler's limit, or a kill)",
      signal_name(sig), sig);
}

std::vector<report::TensorFinding> differing_tensors(const std::vector<report::TensorDigest>& ref,
                                                     const std::vector<report::TensorDigest>& other) {
  std::vector<report::TensorFinding> out;
  const auto others = by_name(other);
  const auto refs = by_name(ref);
  for (const auto& t : ref) {
    const auto it = others.find(t.name);
    if (it != others.end() && it->second->digest == t.digest) continue;
    report::TensorFinding f{t.name, t.dtype,     t.shape, t.digest, it == others.end() ? "" : it->second->digest,
                            1,      std::nullopt};
    out.push_back(f);
  }
  for (const auto& t : other)
    if (!refs.count(t.name)) out.push_back({t.name, t.dtype, t.shape, "", t.digest, 1, std::nullopt});
  return out;
}

void attach_stats(std::vector<report::TensorFinding>& findings, const std::string& dump_a, const std::string& dump_b,
                  const DiffFn& diff) {
  if (findings.empty() || !diff || dump_a.empty() || dump_b.empty()) return;
  std::vector<std::string> names;
  for (const auto& f : findings) names.push_back(f.name);
  const auto stats = diff(dump_a, dump_b, names);
  for (auto& f : findings)
    if (const auto it = stats.find(f.name); it != stats.end()) f.stats = it->second;
}

void attach_stats(std::vector<report::TensorFinding>& findings, const TrialRun& a, const TrialRun& b,
                  const DiffFn& diff) {
  attach_stats(findings, a.dump_path, b.dump_path, diff);
  // A dump the child could not write (a full TMPDIR): say why the values are missing.
  for (const TrialRun* run : {&a, &b}) {
    if (!run->result || run->result->dump_error.empty()) continue;
    for (auto& f : findings)
      if (f.stats && f.stats->note.rfind("tensor values not available", 0) == 0)
        f.stats->note = fmt::format("tensor values not available: repeat {}'s dump could not be written ({})",
                                    run->repeat, run->result->dump_error);
  }
}

report::Trial summarise_trial(const TrialRun& run) {
  report::Trial t;
  t.repeat = run.repeat;
  t.device = run.device;
  t.wall_ms = run.process.wall_ms;
  t.exit_code = run.process.exit_code;
  t.signal = run.process.signal;
  switch (run.process.kind) {
    case ChildOutcome::Kind::TimedOut:
      t.status = TrialStatus::Timeout;
      t.message = fmt::format("no result after {:g} s; the trial was killed", run.timeout_s);
      t.stderr_tail = run.process.log_tail;
      return t;
    case ChildOutcome::Kind::Signaled:
      t.status = TrialStatus::Crashed;
      t.message = signal_text(run.process.signal);
      t.stderr_tail = run.process.log_tail;
      return t;
    case ChildOutcome::Kind::SpawnFailed:
      t.status = TrialStatus::Crashed;
      t.message = run.process.log_tail;
      return t;
    case ChildOutcome::Kind::Exited:
      break;
  }
  if (run.process.exit_code != 0 || !run.result) {
    t.status = TrialStatus::Crashed;
    t.message = run.process.exit_code != 0 ? fmt::format("exited with code {} without a result", run.process.exit_code)
                                           : std::string("exited without writing a valid result");
    if (const std::string loader = loader_failure(run.process.exit_code, run.process.log_tail); !loader.empty())
      t.message = fmt::format("could not start: the dynamic loader failed ({})", excerpt(loader, 600));
    if (run.process.disk_full) t.message = "no space left in TMPDIR: the trial could not write its result";
    t.stderr_tail = run.process.log_tail;
    return t;
  }
  const TrialResult& r = *run.result;
  t.status = r.status;
  t.message = r.message;
  t.startup_ms = r.startup_ms;
  if (r.status == TrialStatus::Ok) t.outcome = outcome_digest(r.tensors);
  return t;
}

bool completed_ok(const TrialRun& run) {
  return run.result && run.process.kind == ChildOutcome::Kind::Exited && run.process.exit_code == 0 &&
         run.result->status == TrialStatus::Ok;
}

int reference_index(const std::vector<TrialRun>& runs) {
  for (size_t i = 0; i < runs.size(); ++i)
    if (completed_ok(runs[i])) return static_cast<int>(i);
  return -1;
}

std::map<std::string, std::string> reference_digests(const std::vector<const TrialRun*>& earlier) {
  for (const TrialRun* run : earlier) {
    if (run == nullptr) return {};  // not finished: the reference is not known yet
    if (!completed_ok(*run)) continue;
    std::map<std::string, std::string> out;
    for (const auto& t : run->result->tensors) out[t.name] = t.digest;
    return out;
  }
  return {};
}

report::ConfigResult analyse_config(const Config& config, const std::vector<TrialRun>& runs, const DiffFn& diff) {
  report::ConfigResult c;
  c.name = config.name;
  c.repeats = static_cast<int>(runs.size());
  for (const auto& run : runs) c.trials.push_back(summarise_trial(run));
  for (const auto& run : runs)
    if (run.result && !run.result->switches.empty()) {
      c.switches = run.result->switches;
      break;
    }

  const int ref = reference_index(runs);
  std::set<std::string> outcomes;
  bool any_raised = false, any_timeout = false, any_crash = false, any_skipped = false;
  std::string first_problem;
  for (const auto& t : c.trials) {
    switch (t.status) {
      case TrialStatus::Ok:
        ++c.completed;
        outcomes.insert(t.outcome);
        break;
      case TrialStatus::Raised:
        any_raised = true;
        break;
      case TrialStatus::Skipped:
        any_skipped = true;
        break;
      case TrialStatus::Timeout:
        any_timeout = true;
        break;
      case TrialStatus::ConfigError:
      case TrialStatus::Error:
      case TrialStatus::Crashed:
        any_crash = true;
        break;
    }
    if (t.status != TrialStatus::Ok && t.status != TrialStatus::Skipped && first_problem.empty())
      first_problem = fmt::format("repeat {}: {}", t.repeat, t.message);
  }
  c.distinct_outcomes = static_cast<int>(outcomes.size());

  if (ref >= 0) {
    const auto& reference = runs[static_cast<size_t>(ref)];
    c.reference = reference.result->tensors;
    c.tensor_count = c.reference.size();
    const std::string& ref_outcome = c.trials[static_cast<size_t>(ref)].outcome;
    std::map<std::string, size_t> finding_index;
    std::vector<size_t> first_trial;  // per finding: the first repeat it differed in
    for (size_t i = 0; i < runs.size(); ++i) {
      if (c.trials[i].status != TrialStatus::Ok || static_cast<int>(i) == ref || c.trials[i].outcome == ref_outcome)
        continue;
      ++c.diverging_repeats;
      for (auto& f : differing_tensors(c.reference, runs[i].result->tensors)) {
        if (auto it = finding_index.find(f.name); it != finding_index.end()) {
          ++c.diverged_tensors[it->second].diverging_trials;
        } else {
          finding_index[f.name] = c.diverged_tensors.size();
          c.diverged_tensors.push_back(f);
          first_trial.push_back(i);
        }
      }
    }
    // Statistics of each tensor against the first repeat it differed in: that repeat's dump holds
    // it even when the child dumped only the tensors that differ from the reference.
    for (size_t i = 0; i < runs.size(); ++i) {
      std::vector<report::TensorFinding> group;
      for (size_t k = 0; k < c.diverged_tensors.size(); ++k)
        if (first_trial[k] == i) group.push_back(c.diverged_tensors[k]);
      if (group.empty()) continue;
      attach_stats(group, reference, runs[i], diff);
      for (auto& f : group) c.diverged_tensors[finding_index.at(f.name)] = f;
    }
  }
  const int comparisons = c.completed - 1;
  if (comparisons > 0) {
    c.divergence_rate = static_cast<double>(c.diverging_repeats) / comparisons;
    std::tie(c.rate_ci_low, c.rate_ci_high) = wilson_interval(c.diverging_repeats, comparisons);
  }

  if (c.diverging_repeats > 0) {
    c.verdict = Verdict::Diverged;
    c.message = fmt::format("{} of {} repeats differ from the reference repeat", c.diverging_repeats, comparisons);
    if (!first_problem.empty()) c.message += "; also " + first_problem;
  } else if (any_raised) {
    c.verdict = Verdict::Raised;
    c.message = first_problem;
  } else if (any_timeout) {
    c.verdict = Verdict::Timeout;
    c.message = first_problem;
  } else if (any_crash) {
    c.verdict = Verdict::Crashed;
    c.message = first_problem;
  } else if (any_skipped && c.completed == 0) {
    c.verdict = Verdict::Skipped;
    c.message = c.trials.front().message;
  } else {
    c.verdict = Verdict::Reproducible;
  }
  return c;
}

std::vector<report::SwitchChange> switch_changes(const std::vector<report::SwitchValue>& reference,
                                                 const std::vector<report::SwitchValue>& other) {
  const auto find = [](const std::vector<report::SwitchValue>& in,
                       const std::string& key) -> const report::SwitchValue* {
    for (const auto& s : in)
      if (s.key == key) return &s;
    return nullptr;
  };
  std::vector<report::SwitchChange> out;
  for (const auto& s : reference) {
    const report::SwitchValue* o = find(other, s.key);
    if (o == nullptr)
      out.push_back({s.key, s.effective, "(absent)"});
    else if (o->effective != s.effective)
      out.push_back({s.key, s.effective, o->effective});
  }
  for (const auto& s : other)
    if (find(reference, s.key) == nullptr) out.push_back({s.key, "(absent)", s.effective});
  return out;
}

std::optional<report::ConfigDependence> configuration_dependence(const std::vector<report::ConfigResult>& configs,
                                                                 const std::vector<std::string>& reference_dumps,
                                                                 const DiffFn& diff) {
  std::vector<std::string> group_outcome;
  std::vector<size_t> group_first;
  report::ConfigDependence dep;
  for (size_t i = 0; i < configs.size(); ++i) {
    const auto& c = configs[i];
    if (c.verdict != Verdict::Reproducible || c.completed == 0) continue;
    const std::string outcome = outcome_digest(c.reference);
    size_t g = 0;
    while (g < group_outcome.size() && group_outcome[g] != outcome) ++g;
    if (g == group_outcome.size()) {
      group_outcome.push_back(outcome);
      group_first.push_back(i);
      dep.groups.emplace_back();
    }
    dep.groups[g].push_back(c.name);
  }
  if (dep.groups.size() < 2) return std::nullopt;
  const size_t a = group_first[0], b = group_first[1];
  dep.differing = differing_tensors(configs[a].reference, configs[b].reference);
  attach_stats(dep.differing, reference_dumps[a], reference_dumps[b], diff);
  return dep;
}

std::string to_string(RepeatDecision d) {
  switch (d) {
    case RepeatDecision::More:
      return "";
    case RepeatDecision::Divergence:
      return "divergence";
    case RepeatDecision::Failure:
      return "failure";
    case RepeatDecision::Skipped:
      return "skipped";
    case RepeatDecision::Confidence:
      return "confidence";
    case RepeatDecision::MaxRepeats:
      return "max-repeats";
  }
  return "";
}

int runs_to_bound(double rate) {
  // For 0 of n the Wilson upper bound is z^2 / (n + z^2), so n >= z^2 (1 - rate) / rate; start just
  // below that and step up to the first n the interval itself accepts. A rate so small that no
  // run count could reach it (--detect-rate 1e-300) gives a count no --max-repeats allows.
  constexpr int kUnreachable = 1 << 30;
  constexpr double z2 = 1.959963984540054 * 1.959963984540054;
  const double estimate = rate > 0 ? std::ceil(z2 * (1 - rate) / rate) : HUGE_VAL;
  if (!(estimate < kUnreachable)) return kUnreachable;
  int comparisons = std::max(1, static_cast<int>(estimate) - 2);
  while (wilson_interval(0, comparisons).second > rate) ++comparisons;
  return comparisons + 1;
}

RepeatDecision decide_repeats(const std::vector<TrialRun>& runs, const report::AutoRepeats& rule) {
  std::string reference;
  for (const auto& run : runs) {
    const report::Trial t = summarise_trial(run);
    if (t.status == TrialStatus::Skipped) return RepeatDecision::Skipped;  // a probe that skipped itself
    if (t.status != TrialStatus::Ok) return RepeatDecision::Failure;
    if (reference.empty())
      reference = t.outcome;
    else if (t.outcome != reference)
      return RepeatDecision::Divergence;
  }
  const int done = static_cast<int>(runs.size());
  if (done >= runs_to_bound(rule.rate)) return RepeatDecision::Confidence;
  if (done >= rule.max) return RepeatDecision::MaxRepeats;
  return RepeatDecision::More;
}

int next_repeat_count(int done, const report::AutoRepeats& rule) {
  return std::min({std::max(done + 1, 2 * done), runs_to_bound(rule.rate), rule.max});
}

bool plan_next_round(const std::vector<std::vector<TrialRun>>& runs, const report::AutoRepeats& rule,
                     std::vector<int>& target, std::vector<std::string>& stopped_by) {
  bool more = false;
  stopped_by.resize(runs.size());
  for (size_t c = 0; c < runs.size(); ++c) {
    const RepeatDecision d = decide_repeats(runs[c], rule);
    stopped_by[c] = to_string(d);
    if (d != RepeatDecision::More) continue;
    target[c] = next_repeat_count(static_cast<int>(runs[c].size()), rule);
    more = true;
  }
  return more;
}

std::vector<std::pair<size_t, int>> round_jobs(const std::vector<size_t>& runs, const std::vector<int>& target) {
  std::vector<std::pair<size_t, int>> jobs;
  const int most = target.empty() ? 0 : *std::max_element(target.begin(), target.end());
  for (int r = 0; r < most; ++r)
    for (size_t c = 0; c < target.size(); ++c)
      if (r >= static_cast<int>(runs[c]) && r < target[c]) jobs.emplace_back(c, r);
  return jobs;
}

}  // namespace ra
