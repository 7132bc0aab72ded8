// SPDX-License-Identifier: Apache-2.0
// One audited target and its configurations: what every audit kind with targets fills in (`Target`),
// and, traced, what trace_model.h holds. The facts only one kind has are that kind's: run's below
// (`RunFacts`), exec's in exec_model.h, a probe's in probe_model.h; reports/model.h joins each kind's
// facts to its targets. The JSON writer and reader of these structs sit beside them in
// reports/target_json.cpp.
#pragma once

#include "reports/core_model.h"
#include "reports/exec_model.h"
#include "reports/replay_model.h"
#include "reports/trace_model.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ra::report {

// `run --calls K` (K >= 2): warm-up dependence. Each trial calls the model K times in its one process and
// compares every later call's tensors with call 1's, so a result that depends on what already ran in the
// process (cuDNN benchmark's first pick, a lazily built cache) is told apart from run-to-run divergence,
// which compares call 1 of separate processes (the configuration's verdict). A forward that changes what
// its next call computes from (its inputs, parameters, buffers, plain attributes) makes its calls
// incomparable: `mutated` names them instead.
struct WarmUp {
  int calls = 0;                      // K
  int trials_compared = 0;            // trials whose later calls were compared with call 1
  int trials_differing = 0;           // of those, trials in which a later call differed from call 1
  int first_call = 0;                 // the earliest call that differed (2..K), 0 when none did
  std::vector<std::string> tensors;   // tensors that differed at first_call, in record order (first such trial)
  std::vector<std::string> mutated;   // "buffer 'count'", "input 'x'": what a call changed, sorted; not compared
  std::optional<TraceSummary> trace;  // --trace: call 1's op trace aligned with first_call's (repeats: calls)
};

struct ConfigResult {
  std::string name;
  std::vector<SwitchValue> switches;
  Verdict verdict = Verdict::Reproducible;
  std::string message;  // the reason for raised/crashed/timeout/skipped
  int repeats = 0;
  int completed = 0;
  int diverging_repeats = 0;                 // completed repeats whose outcome differs from the reference repeat
  double divergence_rate = 0;                // diverging_repeats / (completed - 1)
  double rate_ci_low = 0, rate_ci_high = 0;  // Wilson 95% interval
  int distinct_outcomes = 0;
  // The digests compared per repeat (reference's size). For exec, one per file equal by bytes and
  // per metric, one per entry of a file read because its bytes differed: a count of digests, which
  // reports show as `compared` instead.
  size_t tensor_count = 0;
  std::optional<ExecCompared> compared;  // exec only: files and metrics per run (exec_model.h)
  std::vector<TensorDigest> reference;   // digests of the reference repeat
  // Where the reference repeat's tensors lie, for a comparison with a baseline that measures how
  // far a changed tensor moved: a copy the audit kept (SessionOptions::keep_tensors), or the file a
  // baseline saved with --baseline-tensors names. "" when none. Not in the JSON report: a baseline
  // names the file within its tensors folder (reports/baseline_file.h).
  std::string reference_tensors;
  std::vector<TensorFinding> diverged_tensors;  // in execution order
  std::vector<Trial> trials;
  std::optional<TraceSummary> trace;    // `run --trace` only
  std::optional<FixSearch> fix_search;  // `run --trace`, diverged configurations
  std::optional<OpStream> op_stream;    // `run --trace`: the reference repeat's, for baselines
  std::optional<AllowedBy> allowed_by;  // --allowlist: a diverged or raised verdict that was accepted
  // Set by finalize: diverged, and every differing tensor within tolerance (all_within_tolerance);
  // tolerated when --tolerant accepted it for the exit code.
  bool within_tolerance = false;
  bool tolerated = false;
  // --repeats auto: what ended this configuration's repeats ("divergence", "failure", "skipped",
  // "confidence", "max-repeats"; see AutoRepeats); "" for a fixed number of repeats.
  std::string stopped_by;
  std::optional<WarmUp> warm_up;  // `run --calls K`, K >= 2 only
  // The float64 referee (reports/referee_model.h): the reference repeat's errors against it, and a
  // diverged configuration's classes; nullopt with --referee off.
  std::optional<ConfigReferee> referee;
};

// A switch whose effective value differs between two configurations.
struct SwitchChange {
  std::string key;
  std::string reference;  // the value in the reference configuration
  std::string other;
};

// Where two configurations' results part (`run --trace`, configuration-dependent): the op trace
// of the reference repeat of `config` aligned against that of `reference_config` (no extra
// trials). trace.root_causes holds the first op whose inputs matched in both and whose outputs did
// not (at most one), with the ops that differ after it as propagated; trace.splits where the op
// streams themselves differ.
struct ConfigCause {
  std::string reference_config;        // the first configuration of the first group
  std::string config;                  // the first configuration of another group
  std::vector<SwitchChange> switches;  // what separates the two
  std::optional<TraceSummary> trace;   // nullopt when a trace could not be read (note says why)
  std::string note;
};

// Configurations that are each reproducible but give different results from one another.
struct ConfigDependence {
  std::vector<std::vector<std::string>> groups;  // configurations with identical results, in order
  std::vector<TensorFinding> differing;          // first group vs second group
  std::vector<ConfigCause> causes;               // `run --trace`: one per group after the first
  std::optional<ClassSummary> referee;           // the classes of `differing` against the float64 referee
};

// What every target shares, whatever its kind (run's model, exec's command, a probe): its name,
// identity, results and verdict. A kind's own facts sit beside it (reports/model.h: RunTarget,
// ExecTarget, ProbeTarget).
struct Target {
  std::string name;  // model file name, the command, or probe name
  std::string path;  // the model file, the command's executable; "" for a probe
  // Content identities, which `--baseline` and `compare` check (audit/baseline/baseline.h): a model's is the
  // digest of its TorchScript archive's bytes, a probe's that of its name and form; input_digest is
  // the digest of the --input file's bytes ("" for synthetic inputs and probes). "" when unknown
  // (reports written before these were recorded).
  std::string model_digest;
  std::string input_digest;
  // A model's identity by content, which survives a re-save (audit/baseline/identity.h): the
  // digest of its parameters, buffers and constants by name, and of its graph in canonical form.
  // "" where the kind has none (a probe, a command) and in older reports.
  std::string weights_digest;
  std::string graph_digest;
  std::string device;
  // infer | train: a model's --mode, a probe's direction (a backward probe trains); "" for a command.
  // Part of a baseline's identity for both.
  std::string mode;
  uint64_t seed = 0;
  std::vector<std::string> inputs;  // description of the inputs (part of a baseline's identity)
  // What the user should know about this target, one sentence each: the preflight's warnings (a
  // traced export archive's nodes the trace cannot see, a model traced in eval mode run in train).
  std::vector<std::string> notes;
  std::vector<ConfigResult> configs;
  std::optional<ConfigDependence> dependence;
  // `run`: where the float64 referee ran, or why not (none with --referee off); no other kind fills it.
  std::optional<Referee> referee;
  Verdict verdict = Verdict::Reproducible;
};

// What only `run`'s model has (reports/model.h: RunTarget): how it trains, what its inputs bind to,
// its package, and the restart-replay.
struct RunFacts {
  int steps = 0;          // train mode: the steps of each trial (0 in infer mode)
  std::string optimizer;  // train mode: sgd | adam ("" in infer mode)
  double lr = 0;          // train mode: learning rate
  // The forward argument each input binds to, one per input, or none (a dict input, whose
  // descriptions carry their keys). Shown beside the descriptions; not part of any identity.
  std::vector<std::string> input_names;
  // An AOTInductor package's build metadata (AOTI_DEVICE_KEY, AOTI_CPU_ISA, AOTI_PLATFORM, ...), as
  // the package records it, or a torch.export archive's runtime; empty for other models. Not part of
  // any identity.
  std::map<std::string, std::string> package;
  std::optional<Replay> replay;  // `run --replay` only
};

// --repeats auto: repeats are added to each configuration, in rounds, until it is decided. A
// divergence decides it at once (two runs with different bits prove it), and so does a failed
// trial (its verdict can no longer be "reproducible"); a configuration without either is decided
// once its comparisons bound the divergence rate below `rate` (Wilson 95% upper bound, the figure
// the detection-power line prints), and otherwise stops at `max` runs, undecided.
struct AutoRepeats {
  int min = 3;        // the first round
  int max = 20;       // --max-repeats
  double rate = 0.2;  // --detect-rate
};

// Median wall time of a configuration's completed trials (a timing figure), nullopt when none.
std::optional<double> median_wall_ms(const ConfigResult& config);
// Probes faster than this are too fast for their times to be compared across processes.
inline constexpr double kMinComparableMs = 0.5;
// Cost of configuration `i` of a target relative to its first configuration (median over median),
// nullopt when either has no completed trial or a median below kMinComparableMs.
std::optional<double> cost_ratio(const Target& target, size_t i);

// True when a diverged configuration's every differing tensor has statistics within tolerance
// (within_tolerance, core_model.h). Only the statistics the report holds count: those of the first
// repeat that differed from the reference.
bool all_within_tolerance(const ConfigResult& config);
// The informative verdict every renderer prints for a configuration within tolerance: "every
// differing element is within tolerance", and "; accepted by --tolerant" when tolerated.
std::string tolerance_verdict(const ConfigResult& config);
// The lines every renderer prints for a configuration's warm-up comparison (`run --calls K`): what
// was compared and what differed, or why the calls are not comparable; with --trace, where call 1 and
// the first differing call part.
std::vector<std::string> warm_up_lines(const WarmUp& w);
// True when a later call differed from call 1 in some trial: a finding (exit 1), like a divergence.
bool warm_up_dependent(const WarmUp& w);

}  // namespace ra::report
