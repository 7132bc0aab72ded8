// SPDX-License-Identifier: Apache-2.0
// The report model: one data structure that every renderer (text, JSON; HTML, JUnit and Markdown
// later) reads. It is filled by audit/ and depends on nothing but the standard library and
// nlohmann::json (for the opaque environment fingerprint).
//
// Determinism of the tool's own output: every list here is kept in a defined order (targets as
// given, configurations as given, tensors in execution order, trials by repeat index), and
// everything that depends on wall-clock time lives in `Timing` sections that renderers keep apart.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ra::report {

inline constexpr int kSchemaVersion = 1;

enum class Verdict { Reproducible, Diverged, Raised, Crashed, Timeout, Skipped };
const char* to_string(Verdict v);
std::optional<Verdict> verdict_from_string(const std::string& s);

enum class TrialStatus { Ok, Raised, Error, ConfigError, Crashed, Timeout, Skipped };
const char* to_string(TrialStatus s);
std::optional<TrialStatus> trial_status_from_string(const std::string& s);

struct TensorDigest {
  std::string name;  // "param/fc.weight", "output", "step1/grad/fc.weight", ...
  std::string dtype;
  std::vector<int64_t> shape;
  std::string digest;  // 32 hex digits
};

// How two versions of one tensor differ; computed only for tensors whose digests differ.
struct DivergenceStats {
  int64_t numel = 0;
  int64_t differing = 0;             // elements whose bits differ
  int64_t first_index = -1;          // flat, row-major
  std::vector<int64_t> first_index_nd;
  double max_abs_diff = 0;           // over elements finite in both; NaN when none is
  double max_ulp = 0;                // distance in units in the last place (integers: plain distance)
  int64_t nan_mismatches = 0;        // elements NaN in exactly one, or NaN with other payload
  std::string note;                  // e.g. "shape differs: 2x3 vs 3x2"
};

struct TensorFinding {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string reference_digest;
  std::string other_digest;
  int diverging_trials = 0;          // trials (of this configuration) whose digest differs
  std::optional<DivergenceStats> stats;
};

struct SwitchValue {
  std::string key;
  std::string requested;  // "" when the configuration does not name it
  std::string effective;  // read back in the child
};

struct Trial {
  int repeat = 0;
  TrialStatus status = TrialStatus::Ok;
  int exit_code = 0;
  int signal = 0;
  std::string message;      // exception text, config mismatch, crash description
  std::string stderr_tail;  // last lines of the child's stderr for crashed/timeout/error trials
  std::string outcome;      // digest over all tensor digests of the trial ("" when it did not finish)
  double wall_ms = 0;       // timing (kept apart by renderers)
  double startup_ms = 0;    // process start to the first model op
};

struct ConfigResult {
  std::string name;
  std::vector<SwitchValue> switches;
  Verdict verdict = Verdict::Reproducible;
  std::string message;  // the reason for raised/crashed/timeout/skipped
  int repeats = 0;
  int completed = 0;
  int diverging_repeats = 0;   // completed repeats whose outcome differs from the reference repeat
  double divergence_rate = 0;  // diverging_repeats / (completed - 1)
  double rate_ci_low = 0, rate_ci_high = 0;  // Wilson 95% interval
  int distinct_outcomes = 0;
  size_t tensor_count = 0;
  std::vector<TensorDigest> reference;         // digests of the reference repeat
  std::vector<TensorFinding> diverged_tensors;  // in execution order
  std::vector<Trial> trials;
};

// Configurations that are each reproducible but give different results from one another.
struct ConfigDependence {
  std::vector<std::vector<std::string>> groups;  // configurations with identical results, in order
  std::vector<TensorFinding> differing;          // first group vs second group
};

// What a probe target adds: its description, the documentation's word on it, the alert census
// (the probe run once under use_deterministic_algorithms(True, warn_only=True)), and where the
// measurement disagrees with the documentation.
struct ProbeFacts {
  std::string family;
  std::string op;
  std::string direction;       // forward | backward
  std::string role;            // probe | control
  std::string form;            // what is run
  std::string knowledge_id;    // knowledge-base entry, "" when none
  std::string documented;      // made-deterministic | raises | undocumented | not-listed
  std::string documented_device;  // cpu | cuda | any, "" when not listed
  std::string doc_row;
  std::string advice;
  std::string census;          // alerted-diverged | alerted-stable | silent-diverged | stable | "" (no census)
  std::vector<std::string> alerts;  // alert messages seen in the census run
  std::vector<std::string> disagreements;  // measurement vs documentation, one sentence each
};

// The alert census cross-tabulated over probes (names in suite order).
struct Census {
  std::string config;  // the configuration the census ran under
  std::vector<std::string> alerted_diverged, alerted_stable, silent_diverged, stable, not_run;
};

// Restart-replay (`run --replay`): train K/2 steps, checkpoint, resume in a fresh process, and
// compare with the uninterrupted K-step run of the same configuration (audit/replay.h).
enum class ReplayVerdict { Reproducible, Diverged, Inconclusive, Crashed };
const char* to_string(ReplayVerdict v);

// One component of the training state at the restart point, compared with the uninterrupted run.
struct ReplayComponent {
  std::string name;         // parameters | buffers | optimizer | generator/cpu | generator/cuda:N
  std::string description;  // "the CPU generator state"
  size_t tensors = 0;       // in the uninterrupted run's state
  bool in_checkpoint = true;  // false when --replay-omit left it out
  bool saved_match = true;    // the checkpointing child's state equals the uninterrupted run's
  bool restored_match = true;  // the resumed child's state after restore equals the uninterrupted run's
  std::vector<std::string> differing;  // tensors that differ after restore, in the reference's order
};

struct Replay {
  std::string config;  // "" when no configuration could be used (inconclusive)
  int steps_before = 0;  // steps of the checkpointing child
  int steps_after = 0;   // steps of the resumed child
  std::vector<std::string> omit;  // --replay-omit: rng, optimizer
  ReplayVerdict verdict = ReplayVerdict::Inconclusive;
  std::string reason;
  std::vector<ReplayComponent> components;  // parameters, buffers, optimizer, then generators
  size_t tensors_compared = 0;              // tensors of steps steps_before+1 .. steps_before+steps_after
  std::vector<TensorFinding> differing;     // resumed vs uninterrupted, in execution order
};

struct Target {
  std::string name;    // model file name, or probe name
  std::string kind;    // "model" or "probe"
  std::string path;
  std::string device;
  std::string mode;    // infer | train
  int steps = 0;
  std::string optimizer;  // train mode: sgd | adam ("" in infer mode)
  double lr = 0;          // train mode: learning rate
  uint64_t seed = 0;
  std::vector<std::string> inputs;  // description of the inputs
  std::vector<ConfigResult> configs;
  std::optional<ConfigDependence> dependence;
  std::optional<ProbeFacts> probe;  // kind "probe" only
  std::optional<Replay> replay;     // `run --replay` only
  Verdict verdict = Verdict::Reproducible;
};

struct Report {
  std::string tool_version;
  std::vector<std::string> command;  // argv, for replay
  nlohmann::ordered_json environment;
  std::vector<Target> targets;
  std::optional<Census> census;  // `probes` only
  Verdict verdict = Verdict::Reproducible;
  int exit_code = 0;
  double wall_ms = 0;  // timing
};

// Median wall time of a configuration's completed trials (a timing figure), nullopt when none.
std::optional<double> median_wall_ms(const ConfigResult& config);
// Probes faster than this are too fast for their times to be compared across processes.
inline constexpr double kMinComparableMs = 0.5;
// Cost of configuration `i` of a target relative to its first configuration (median over median),
// nullopt when either has no completed trial or a median below kMinComparableMs.
std::optional<double> cost_ratio(const Target& target, size_t i);

// Overall verdict and exit code from the targets (precedence: diverged/raised > crashed/timeout >
// reproducible; skipped does not fail). A target's restart-replay counts too: diverged as diverged,
// crashed as crashed; inconclusive does not change the verdict.
void finalize(Report& report);

}  // namespace ra::report
