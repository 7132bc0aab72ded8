// SPDX-License-Identifier: Apache-2.0
// From trial results to verdicts.
//
// Within a configuration, the first completed repeat is the reference; a repeat diverges when any
// tensor digest differs from the reference's. The divergence rate is diverging / (completed - 1),
// with a Wilson 95% interval over those completed - 1 comparisons. Precedence of a configuration's
// verdict: diverged (proven by two completed repeats) > raised > timeout > crashed > skipped (no
// repeat completed, and every one was skipped) > reproducible.
// Across configurations, reproducible ones whose reference outcomes differ are grouped and reported
// as configuration-dependent, not as nondeterminism.
//
// A full disk costs a trial, not the audit: a child that fails while its
// scratch filesystem is full is `crashed` with "no space left in TMPDIR", and the rest of the report
// is complete; a dump the child could not write (TrialResult::dump_error) costs only its statistics.
// --repeats auto is decided here too, without torch (decide_repeats and its neighbours below); the
// one round-runner (audit/skeleton/rounds.h) runs the rounds for run, probes and exec.
#pragma once

#include "audit/trial/config.h"
#include "audit/trial/runner.h"
#include "audit/trial/trial_spec.h"
#include "reports/target_model.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ra {

// What one trial left behind: how the process ended, and its result if it wrote one.
struct TrialRun {
  int repeat = 0;
  ChildOutcome process;
  std::optional<TrialResult> result;
  std::string dump_path;
  double timeout_s = 0;
  std::string device;  // the GPU a placed child ran on ("cuda:2"), "" when not placed
};

// Computes divergence statistics for `names` between two dumps (a seam: tests pass a fake).
using DiffFn = std::function<std::map<std::string, report::DivergenceStats>(
    const std::string& dump_a, const std::string& dump_b, const std::vector<std::string>& names)>;

// Tensors of `other` that differ from `ref` (by digest, or present in only one), in ref's order
// and then other's extra names; each with diverging_trials 1 and no statistics.
std::vector<report::TensorFinding> differing_tensors(const std::vector<report::TensorDigest>& ref,
                                                     const std::vector<report::TensorDigest>& other);

// Fills the statistics of `findings` from the dumps of the two trials (nothing when either is "").
void attach_stats(std::vector<report::TensorFinding>& findings, const std::string& dump_a, const std::string& dump_b,
                  const DiffFn& diff);
// The same from two trials' dumps, noting in each statistic a dump its child could not write.
void attach_stats(std::vector<report::TensorFinding>& findings, const TrialRun& a, const TrialRun& b,
                  const DiffFn& diff);

// How a process that ended on signal `sig` ended, in words (issue 33): one of the signals a
// process raises on itself when it faults or aborts (SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE,
// SIGSYS, SIGTRAP) is its own crash, "crashed with SIGSEGV (signal 11)"; any other (SIGKILL from
// the out-of-memory killer or a scheduler, SIGTERM, a kill) came from outside it, "killed from
// outside (by SIGKILL, signal 9: ...)". Every trial's message, run's and exec's, says it this way.
bool crash_signal(int sig);
std::string signal_text(int sig);

report::Trial summarise_trial(const TrialRun& run);

report::ConfigResult analyse_config(const Config& config, const std::vector<TrialRun>& runs, const DiffFn& diff);

// The switches whose effective values differ between two configurations, in `reference`'s order
// then `other`'s; a key one side lacks reads "(absent)".
std::vector<report::SwitchChange> switch_changes(const std::vector<report::SwitchValue>& reference,
                                                 const std::vector<report::SwitchValue>& other);

// Groups reproducible configurations by their reference outcome; nullopt when they all agree.
// `reference_dumps[i]` is the dump of configuration i's reference repeat ("" if none).
std::optional<report::ConfigDependence> configuration_dependence(const std::vector<report::ConfigResult>& configs,
                                                                 const std::vector<std::string>& reference_dumps,
                                                                 const DiffFn& diff);

// Index in `runs` of the reference repeat (first with status ok), or -1.
int reference_index(const std::vector<TrialRun>& runs);

// The reference repeat's digests (tensor name -> digest) for a trial about to start, from the
// repeats before it in order (nullptr for one still running): those of the first that completed ok,
// or none when a repeat before it is still running or none completed. A trial given them dumps only
// the tensors that differ (TrialSpec::dump_only_differing), so one full dump per configuration is
// kept instead of one per repeat; the statistics read each tensor from the first repeat it
// differed in, whose dump holds it.
std::map<std::string, std::string> reference_digests(const std::vector<const TrialRun*>& earlier);

// --repeats auto (report::AutoRepeats): what the runs of a configuration so far decide.
enum class RepeatDecision { More, Divergence, Failure, Skipped, Confidence, MaxRepeats };
// "" for More; else the report's ConfigResult::stopped_by.
std::string to_string(RepeatDecision d);

// The fewest runs whose comparisons, all without divergence, bound the divergence rate at or below
// `rate` (the Wilson 95% upper bound of 0 in n - 1 comparisons, as the detection-power line says).
int runs_to_bound(double rate);

// Whether `runs` (in repeat order, all finished) decide the configuration under `rule`.
RepeatDecision decide_repeats(const std::vector<TrialRun>& runs, const report::AutoRepeats& rule);

// How many runs an undecided configuration with `done` runs should have after the next round:
// about twice as many (so a clear divergence stops it early, and the rounds stay few), never more
// than the rule needs or allows.
int next_repeat_count(int done, const report::AutoRepeats& rule);

// After a round of --repeats auto: decides each configuration from its runs (`stopped_by[c]` says
// what decided it, "" while undecided) and raises `target[c]` for the undecided. Whether another
// round is needed.
bool plan_next_round(const std::vector<std::vector<TrialRun>>& runs, const report::AutoRepeats& rule,
                     std::vector<int>& target, std::vector<std::string>& stopped_by);

// The (configuration, repeat) pairs that take each configuration from the `runs[c]` it has to
// `target[c]`, repeat-major (so that parallel children run different configurations side by side).
std::vector<std::pair<size_t, int>> round_jobs(const std::vector<size_t>& runs, const std::vector<int>& target);

}  // namespace ra
