// SPDX-License-Identifier: Apache-2.0
// The report model: one data structure that every renderer (text, JSON, JUnit, Markdown; HTML
// later) reads. It is filled by audit/ and depends on nothing but the standard library and
// nlohmann::json (for the opaque environment fingerprint).
//
// Determinism of the tool's own output: every list here is kept in a defined order (targets as
// given, configurations as given, tensors in execution order, trials by repeat index), and
// everything that depends on wall-clock time lives in `Timing` sections that renderers keep apart.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
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
  bool operator==(const TensorDigest&) const = default;
};

// How close two versions of a tensor must be for the informative tolerance verdict (--atol,
// --rtol): an element b is within it of the reference a when |a - b| <= atol + rtol * |a|
// (torch.allclose's rule). The bitwise verdict never depends on it; --tolerant lets a divergence
// that stays within it exit 0.
struct Tolerance {
  double atol = 0;
  double rtol = 0;
  bool operator==(const Tolerance&) const = default;
};

// torch.testing.assert_close's defaults for a dtype name ("float32": rtol 1.3e-6, atol 1e-5;
// "float16": 1e-3, 1e-5; "bfloat16": 1.6e-2, 1e-5; "float64": 1e-7, 1e-7; complex types as their
// parts); 0 and 0 (bitwise) for every other dtype.
Tolerance default_tolerance(const std::string& dtype);

// How two versions of one tensor differ; computed only for tensors whose digests differ.
struct DivergenceStats {
  int64_t numel = 0;
  int64_t differing = 0;             // elements whose bits differ
  int64_t first_index = -1;          // flat, row-major
  std::vector<int64_t> first_index_nd;
  double max_abs_diff = 0;           // over elements finite in both; NaN when none is
  double max_rel_diff = 0;           // |a-b| / max(|a|,|b|) over those elements (0..2); NaN when none is
  // Distance in units in the last place: representable values between a and b, over differing
  // elements finite in both and on one side of zero (integers: the plain distance). Elements on
  // opposite sides of zero or at zero are left out and counted in sign_differs: the floats between
  // them are mostly denormals, and counting those gives billions for a last-bit difference. NaN
  // when every differing element is left out.
  double max_ulp = 0;
  int64_t sign_differs = 0;          // differing elements on opposite sides of zero, or zero in exactly one (+0 vs -0 too)
  int64_t nan_mismatches = 0;        // elements NaN in exactly one, or NaN with other payload
  Tolerance tolerance;               // what beyond_tolerance counts against (the user's, else default_tolerance)
  int64_t beyond_tolerance = 0;      // differing elements not within `tolerance`, or not finite in both
  std::string note;                  // e.g. "shape differs: 2x3 vs 3x2"
};

// True when the statistics show every differing element within their tolerance (false when
// they are only a note: nothing could be measured).
bool within_tolerance(const DivergenceStats& s);

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
  // exec: where the program set this switch itself ("train.py:12", the last time), "" when it did
  // not; `effective` is then the value it left in effect at exit.
  std::string set_at = {};
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
  std::string device;       // --devices / --jobs on several GPUs: the GPU the trial ran on ("cuda:2"), else ""
};

// What `run --trace` found in a configuration (audit/trace/trace_align.h): the first op of each diverging
// run whose inputs matched the reference run and whose outputs did not, and where the op streams
// themselves differ. Positions are `order` values in the reference run's trace.
struct RootCause {
  std::string op;                 // "aten::index_add", or an autograd node
  std::string direction;          // forward | backward | optimizer
  std::string node;               // backward: the autograd node the op ran in ("IndexAddBackward0"); else ""
  std::string forward_op;         // backward: the forward op that created the node, "" when not found
  std::string module;             // module path of the op (forward) or of its forward op, "" when unknown
  std::string source;             // source location, likewise ("model.py:12")
  std::string phase;              // forward | backward | optimizer: what the trial was doing
  int step = 0;                   // train step (1-based), 0 in infer mode
  uint32_t thread = 0;            // 0 runs the model; an autograd device thread may be 1
  uint64_t position = 0;          // `order` in the reference trace
  std::vector<std::string> inputs, outputs;  // "float32[8x64]", "None" for an undefined tensor
  std::vector<int> differing_outputs;        // output indices that differed (union over runs)
  int runs_diverged = 0;          // runs whose root cause is here
  int runs_compared = 0;          // runs compared with the reference
  std::vector<int> repeats;       // repeat indices of the runs whose root cause is here
  uint64_t propagated = 0;        // later ops whose outputs differed (most over those runs)
  uint64_t independent_mismatches = 0;  // of those, ops whose inputs matched (further causes, not listed)
  std::optional<DivergenceStats> stats;  // of the first differing output, where a dump allowed it
  std::vector<size_t> fixed_by;   // indices into the configuration's fix_search->candidates that fix it
};

// A place where the op streams of two runs differ (an op inserted, deleted or reordered).
struct StructuralSplit {
  uint32_t thread = 0;
  uint64_t reference_position = 0;  // `order` in the reference where the gap starts (the next record's
                                    // when the reference has none there; one past the end at the end)
  uint64_t other_position = 0;      // likewise in the first run that split here
  std::string reference_op;         // the reference's first record in the gap, "" when none
  std::string other_op;             // the other run's first record in the gap, "" when none
  uint64_t unmatched_reference = 0; // records in the gap on each side (most over runs)
  uint64_t unmatched_other = 0;
  uint64_t reordered = 0;           // of those, records found elsewhere in the other stream and compared
  int runs = 0;                     // runs that split here
  std::vector<int> repeats;
};

struct TraceSummary {
  uint64_t records = 0;       // records in the reference run's trace
  uint64_t dropped = 0;       // records not kept because a trace was full (most over runs)
  uint64_t capacity = 0;      // tensor digests a trace could hold
  uint64_t memory_bytes = 0;  // memory a trace held in its child (most over runs)
  int runs_compared = 0;      // runs compared with the reference run
  int runs_identical = 0;     // of those, runs with the same op stream and no output that differed
  std::vector<RootCause> root_causes;    // in reference order
  std::vector<StructuralSplit> splits;   // in reference order
};

// One configuration the fix search tried (audit/trace/fix_search.h).
struct FixCandidate {
  std::vector<std::pair<std::string, std::string>> toggles;  // switch key -> value, applied to the failing config
  std::string config;         // as --configs spells it: "default+threads=1"
  std::string stage;          // single | combined | reduced
  Verdict verdict = Verdict::Reproducible;
  std::string message;        // why it raised, crashed or timed out
  std::vector<uint64_t> fixes;  // positions of the failing config's root causes that no longer diverge
  bool fixes_all = false;     // the model is reproducible under it
  bool minimal = false;       // a fixing set none of whose toggles can be dropped
  std::string cpp, python;    // ready-to-paste snippets that set the toggles
  std::optional<double> median_ms;   // timing: median of the timed runs
  std::optional<double> cost_ratio;  // timing: median over rounds of this fix's time over the failing configuration's
  // timing: the lowest and highest of those per-round ratios. Rounds interleave the fix with the
  // failing configuration (A B A B ...), so a busy machine slows both sides of a pair; with
  // kTimingRounds rounds the median ratio lies in [low, high] with 94% confidence.
  std::optional<double> cost_low, cost_high;
};

inline constexpr int kTimingRounds = 5;

// True when two fixes' cost intervals overlap: neither can be called cheaper (both measured).
bool same_cost(const FixCandidate& a, const FixCandidate& b);

// An op that raises under deterministic mode: it has no deterministic implementation here.
struct NoDeterministicImplementation {
  std::string op;       // as the alert names it ("index_add_cuda_")
  std::string message;  // the alert
  std::string advice;   // from the knowledge base, "" when it has no entry
  std::vector<std::string> alternatives;
};

struct FixSearch {
  std::string from;                  // the failing configuration
  int repeats = 0;                   // traced repeats per candidate (with repeats_auto, the most any used)
  bool repeats_auto = false;         // --repeats auto: each candidate ran until decided
  int timed_runs = 0;                // timed runs per timing child (after one warm-up run)
  std::vector<FixCandidate> candidates;  // singles in switch-table order, then combined, then reductions
  std::vector<size_t> best;          // minimal fixing candidates, in candidate order (cost order is a timing figure)
  std::vector<NoDeterministicImplementation> no_deterministic;
  std::string conclusion;            // one sentence
  std::optional<double> baseline_median_ms;  // timing
};

// The allowlist entry that accepted a finding (audit/baseline/allowlist.h): its 0-based index, its reason,
// and its expiry date ("" when none).
struct AllowedBy {
  int entry = 0;
  std::string reason;
  std::string expires;
};

// A traced configuration's op stream, compact enough to keep in a report and a baseline, so that
// a later run (--baseline, compare) can name the first op whose results changed (audit/trace/
// op_stream.h has the format and the comparison). No tensor values: per record a hash of what the
// op is and hashes of its inputs' and outputs' digests. What names the ops (`ops` and each
// thread's `names`) is kept in reports only; a baseline keeps the 32 characters per record.
struct OpStreamOp {      // one distinct op, what names it in a report
  std::string op;
  std::string phase;     // forward | backward | optimizer
  std::string direction; // forward | backward | optimizer
  std::string node;      // backward: the autograd node
  std::string forward_op;
  std::string module;
  std::string source;
};
struct OpStreamThread {
  uint32_t thread = 0;
  uint64_t records = 0;
  std::string packed;  // base64, 24 bytes per record: key hash (48 bits), step (16), inputs hash (64), outputs hash (64)
  std::string names;   // base64, 3 bytes per record: its index in `ops` ("" in a baseline)
};
struct OpStream {
  std::vector<OpStreamOp> ops;  // empty in a baseline
  std::vector<OpStreamThread> threads;
  uint64_t records() const;
  uint64_t packed_bytes() const;  // the records: 32 characters each
  // The same stream without what names the ops, as a baseline keeps it.
  OpStream without_names() const;
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
  std::optional<TraceSummary> trace;           // `run --trace` only
  std::optional<FixSearch> fix_search;         // `run --trace`, diverged configurations
  std::optional<OpStream> op_stream;           // `run --trace`: the reference repeat's, for baselines
  std::optional<AllowedBy> allowed_by;         // --allowlist: a diverged or raised verdict that was accepted
  // Set by finalize: diverged, and every differing tensor within tolerance (all_within_tolerance);
  // tolerated when --tolerant accepted it for the exit code.
  bool within_tolerance = false;
  bool tolerated = false;
  // --repeats auto: what ended this configuration's repeats ("divergence", "failure", "skipped",
  // "confidence", "max-repeats"; see AutoRepeats); "" for a fixed number of repeats.
  std::string stopped_by;
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
  std::string reference_config;          // the first configuration of the first group
  std::string config;                    // the first configuration of another group
  std::vector<SwitchChange> switches;    // what separates the two
  std::optional<TraceSummary> trace;     // nullopt when a trace could not be read (note says why)
  std::string note;
};

// Configurations that are each reproducible but give different results from one another.
struct ConfigDependence {
  std::vector<std::vector<std::string>> groups;  // configurations with identical results, in order
  std::vector<TensorFinding> differing;          // first group vs second group
  std::vector<ConfigCause> causes;               // `run --trace`: one per group after the first
};

// What a probe target adds: its description, the documentation's word on it, the alert census
// (the probe run once under use_deterministic_algorithms(True, warn_only=True)), and where the
// measurement disagrees with the documentation.
// A batch-invariance probe's batch sizes grouped into classes whose anchor rows had identical bits
// in one configuration's reference repeat (audit/run/batch_classes.h): one class is invariant.
struct BatchClasses {
  std::string config;
  std::vector<std::vector<int64_t>> classes;  // sizes increasing; classes by their smallest size
};

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
  std::vector<BatchClasses> batch_classes;  // family batch-invariance only, one per configuration run
};

// The alert census cross-tabulated over probes (names in suite order).
struct Census {
  std::string config;  // the configuration the census ran under
  std::vector<std::string> alerted_diverged, alerted_stable, silent_diverged, stable, not_run;
};

// Restart-replay (`run --replay`): train K/2 steps, checkpoint, resume in a fresh process, and
// compare with the uninterrupted K-step run of the same configuration (audit/train/replay.h).
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

// `repro-audit exec` (audit/exec/): what the command is, what was compared, and what its start-up
// hook saw while it ran.
struct ExecArtifact {
  std::string name;     // as the report names its entries: the path below the working directory or $REPRO_AUDIT_OUT
  std::string pattern;  // the --artifact that matched it ("" for a file found in $REPRO_AUDIT_OUT)
  std::string kind;     // torch.save | safetensors | bytes | symlink (its link text compared) | skipped (not a regular file)
  std::string note;     // why a torch.save or safetensors file was compared by bytes, why it was skipped, "" for none
  int64_t bytes = 0;    // size in the reference run of the first configuration
};
struct ExecMetric {
  std::string name;
  std::string regex;
  int occurrences = 0;  // in the reference run of the first configuration
};
// One line of the seeding checklist, about this program: what was found, where.
struct ChecklistItem {
  std::string id;        // seed.torch | seed.python | seed.numpy | dataloader | switches | checkpoint | generator
  std::string status;    // ok | missing | not-applicable
  std::string text;      // one sentence
  std::string where;     // "train.py:20", "" when none
  std::vector<int> ranks;  // torchrun: the ranks that saw it (empty for a single process)
  std::string artifact;  // the diverged artifact or metric it may explain, "" when none
};
// --ranks-equal: data-parallel replicas compared within each run.
struct RanksEqual {
  bool equal = true;
  std::string config;    // where the first difference was found, "" when equal
  int repeat = 0;
  std::string artifact;  // the pattern with {rank}
  int rank = 0;          // the first rank that differs from rank 0
  std::string tensor;    // the first entry that differs
  int compared = 0;      // rank pairs compared, over every run
};
struct ExecFacts {
  std::vector<std::string> command;  // argv as given after --
  std::string executable;            // argv[0] resolved on PATH
  std::string working_directory;
  std::vector<ExecArtifact> artifacts;
  std::vector<ExecMetric> metrics;
  // How the in-process switches reached the program: "python" (the start-up hook ran in a Python
  // program that imported torch), "python-without-torch", or "none" (no hook report: not a
  // Python program, or one started with -S or -I); hook_note says what that means for the switches.
  std::string hook = "none";
  std::string hook_note;
  std::vector<ChecklistItem> checklist;
  int world_size = 0;                    // torchrun: WORLD_SIZE as the ranks saw it, 0 for a single process
  std::string backend;                   // torch.distributed's backend, "" when none was initialised
  std::map<std::string, std::string> launcher_set;  // variables a launcher set in the ranks ("OMP_NUM_THREADS": "1")
  std::optional<RanksEqual> ranks_equal;
};

struct Target {
  std::string name;    // model file name, or probe name
  std::string kind;    // "model" or "probe"
  std::string path;
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
  std::string mode;    // infer | train
  int steps = 0;
  std::string optimizer;  // train mode: sgd | adam ("" in infer mode)
  double lr = 0;          // train mode: learning rate
  uint64_t seed = 0;
  std::vector<std::string> inputs;  // description of the inputs (part of a baseline's identity)
  // The forward argument each input binds to, one per input, or none (a dict input, whose
  // descriptions carry their keys). Shown beside the descriptions; not part of any identity.
  std::vector<std::string> input_names;
  // An AOTInductor package's build metadata (AOTI_DEVICE_KEY, AOTI_CPU_ISA, AOTI_PLATFORM, ...), as
  // the package records it; empty for other targets. Not part of any identity.
  std::map<std::string, std::string> package;
  // What the user should know about this target, one sentence each: the preflight's warnings (a
  // traced export archive's nodes the trace cannot see, a model traced in eval mode run in train).
  std::vector<std::string> notes;
  std::vector<ConfigResult> configs;
  std::optional<ConfigDependence> dependence;
  std::optional<ProbeFacts> probe;  // kind "probe" only
  std::optional<Replay> replay;     // `run --replay` only
  std::optional<ExecFacts> exec;    // kind "command" (`exec`) only
  Verdict verdict = Verdict::Reproducible;
};

// The comparison with a baseline (`--baseline FILE` on run and probes, `repro-audit compare A B`;
// audit/baseline/baseline.h opens with the essay): what changed in the environment, and for each target x
// configuration whether the results still match the baseline's.
enum class BaselineStatus {
  Match,             // the same reference digests
  Explained,         // digests differ, and something that can affect this device changed
  Regression,        // digests differ, nothing that affects this device changed, neither side diverged
  Nondeterministic,  // digests differ, and the configuration diverged in the baseline or here
  Incomparable,      // a side has no reference (raised, crashed, timed out or skipped on every repeat)
  Missing,           // in the baseline only
  Added,             // in the current results only
};
const char* to_string(BaselineStatus s);
std::optional<BaselineStatus> baseline_status_from_string(const std::string& s);

// One difference between the baseline's environment and the current one: a fingerprint key
// ("torch.version", "cuda.devices[0].sm_count") or a configuration's effective switch
// ("config.threads").
struct EnvironmentChange {
  std::string key;
  std::string baseline;  // the value as text; "(absent)" when that side does not have the key
  std::string current;
  std::string affects;   // cpu | cuda | cuda:N | any; "" for an ignored key (cannot change results)
};

// A tensor whose bits differ from the baseline's; a side is nullopt where the tensor is absent.
struct BaselineTensor {
  std::string name;
  std::optional<TensorDigest> baseline;
  std::optional<TensorDigest> current;
};

// The differing tensors a result lists (then a count).
inline constexpr size_t kBaselineTensorsListed = 20;

struct BaselineResult {
  std::string target;
  std::string config;
  BaselineStatus status = BaselineStatus::Match;
  std::optional<Verdict> baseline_verdict;  // nullopt when added
  std::optional<Verdict> current_verdict;   // nullopt when missing
  std::string reason;                       // one sentence
  std::vector<EnvironmentChange> switch_changes;  // this configuration's effective switches that differ
  std::vector<std::string> explained_by;    // explained: keys of the changes that can affect the target's device
  size_t tensors = 0;                       // tensors compared: the union of both reference lists
  size_t differing = 0;                     // of those, differing in digest, dtype or shape, or on one side only
  std::vector<BaselineTensor> differing_tensors;  // the first kBaselineTensorsListed, in execution order
  // Digests differ and both sides hold an op stream (--trace): the first op whose inputs matched
  // the baseline's and whose outputs did not (runs_compared 1); op_note says why none is named.
  std::optional<RootCause> first_changed_op;
  std::string op_note;
};

// A paired model whose file's bytes differ from the baseline's while it can still be compared
// (audit/baseline/identity.h): saved again, or the same graph with other weights.
struct ModelChange {
  std::string target;
  std::string relation;  // "resaved" | "other_weights"
  std::string reason;    // one sentence, with the digests
};

struct BaselineComparison {
  std::string source;        // the baseline file as given
  std::string schema;        // what it was: repro-audit/baseline or repro-audit/report
  std::string tool_version;  // the repro-audit that wrote it
  std::vector<EnvironmentChange> changes;  // fingerprint keys that differ and can change results
  std::vector<EnvironmentChange> ignored;  // fingerprint keys that differ but cannot (paths, identifiers)
  std::vector<ModelChange> models;         // models matched by content, not bytes
  std::vector<BaselineResult> results;     // current targets x configurations in order, the baseline's own after each target
  bool fail_on_explained = false;          // --fail-on-explained: an explained result fails the exit code too
};

// `repro-audit selftest`: checks that the tool works on this machine and device (audit/run/selftest.h),
// each passed or failed with its evidence in one sentence.
struct SelfCheck {
  std::string name;      // digests | switches | detection | fingerprint | tracing
  bool passed = false;
  std::string evidence;  // what was measured, or why it failed
};

struct SelfTest {
  std::string device;  // "cpu", "cuda:0"
  std::vector<SelfCheck> checks;
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

// `--shard K/N` (audit/fleet/shard.h): this report holds one shard of a plan, for `merge`. A
// target lists only the configurations (cells) this shard ran.
struct CensusRecord {     // a probe's census run, when this shard ran it
  std::string target;
  bool completed = false;
  std::vector<std::string> alerts;
};
struct ShardInfo {
  std::string plan;       // the plan's digest (fleet::plan_digest)
  int index = 1;          // K, from 1
  int count = 1;          // N
  size_t plan_cells = 0;  // cells in the whole plan: every target x every configuration
  std::vector<std::string> configs;  // the plan's configurations, in order (cell = target * configs + config)
  size_t first_cell = 0;  // this shard's cells: [first_cell, last_cell) in plan order
  size_t last_cell = 0;
  std::string source;     // "--shard", "the Slurm array", ...
  std::vector<std::pair<std::string, std::string>> variables;  // environment variables read, in order
  std::string host;       // the host name of the machine that ran it
  // Where the reference repeats' tensors (and, traced, op traces) of the cells of targets that
  // this shard shares with another are kept, relative to the report's folder: `merge` needs them
  // for the configuration-dependence statistics across shards. "" when there is no such target.
  std::string tensors;
  std::vector<CensusRecord> census;
};

// `repro-audit merge` (audit/fleet/merge.h): where the joined report's cells ran. Kept apart from
// the results, which equal those of one process running the whole plan.
struct FleetShard {
  int index = 1;          // K
  std::string host;
  std::string source;     // what named the shard
  size_t first_cell = 0;  // its cells [first_cell, last_cell)
  size_t last_cell = 0;
  int machine = 1;        // 1-based index into Fleet::machines
  double wall_ms = 0;     // timing
};
// Machines whose fingerprints agree on every key that can change results are one kind.
struct FleetMachine {
  nlohmann::ordered_json environment;
  std::vector<int> shards;                  // K of the shards it ran
  std::vector<EnvironmentChange> changes;   // keys that differ from machine 1's, with what they can affect
};
// A cell that did not finish on every repeat: where it ran.
struct FleetFailure {
  std::string target, config;
  std::string status;  // crashed | timeout | raised | error
  std::string host;
  int shard = 1;
  int machine = 1;
};
// A cell run on every machine kind (the plan run once per kind): did they give the same bits?
struct FleetCell {
  std::string target, config;
  std::vector<std::string> outcomes;  // the reference repeat's outcome digest per machine kind ("" when none finished)
  bool same = false;                  // every kind finished and gave the same digests
};
struct Fleet {
  int count = 1;                          // N
  std::string plan;                       // the plan's digest
  bool replicated = false;                // each machine kind ran the whole plan (cells compares them)
  std::vector<FleetShard> shards;         // by K, then machine
  std::vector<FleetMachine> machines;
  std::vector<FleetFailure> failures;     // in plan order
  std::vector<FleetCell> cells;           // replicated only, in plan order
  std::vector<std::string> notes;         // one sentence each
};

struct Report {
  std::string tool_version;
  std::vector<std::string> command;  // argv, for replay
  nlohmann::ordered_json environment;
  std::vector<Target> targets;
  std::optional<Census> census;  // `probes` only
  std::vector<std::string> allowlist_expired;  // --allowlist: expired entries that matched, one sentence each
  std::vector<std::string> allowlist_notes;    // --allowlist: entries that did nothing, one sentence each (no exit code)
  std::optional<BaselineComparison> baseline;  // --baseline, compare
  std::optional<SelfTest> selftest;  // `selftest` only; such a report has no targets
  std::optional<Tolerance> tolerance;  // --atol/--rtol as given (statistics count against it)
  bool tolerant = false;               // --tolerant: a divergence within tolerance does not fail
  std::optional<AutoRepeats> auto_repeats;  // --repeats auto
  std::optional<ShardInfo> shard;           // --shard (absent from a merged report)
  std::optional<Fleet> fleet;               // merge only
  Verdict verdict = Verdict::Reproducible;
  int exit_code = 0;
  double wall_ms = 0;  // timing
  std::string contention;  // timing: children that shared a GPU (audit/trial/placement.h), "" when none
};

// The median of `values` (the mean of the middle two for an even count), nullopt when empty.
std::optional<double> median(std::vector<double> values);
// Median wall time of a configuration's completed trials (a timing figure), nullopt when none.
std::optional<double> median_wall_ms(const ConfigResult& config);
// Probes faster than this are too fast for their times to be compared across processes.
inline constexpr double kMinComparableMs = 0.5;
// Cost of configuration `i` of a target relative to its first configuration (median over median),
// nullopt when either has no completed trial or a median below kMinComparableMs.
std::optional<double> cost_ratio(const Target& target, size_t i);

// True when a diverged configuration's every differing tensor has statistics within tolerance
// (within_tolerance above). Only the statistics the report holds count: those of the first
// repeat that differed from the reference.
bool all_within_tolerance(const ConfigResult& config);
// The informative verdict every renderer prints for a configuration within tolerance: "every
// differing element is within tolerance", and "; accepted by --tolerant" when tolerated.
std::string tolerance_verdict(const ConfigResult& config);

// True when a baseline result fails the exit code: a regression, a nondeterministic result
// whose configuration --allowlist did not allow in this report, or (--fail-on-explained) an
// explained one.
bool baseline_failure(const Report& report, const BaselineResult& result);

// Whether the fix search's costs were measured: the search times its candidates only when one
// fixes the configuration (audit/trace/fix_search.h). Renderers say so instead of an empty table.
bool fix_costs_measured(const FixSearch& f);

// The cheapest minimal fix of a fix search: the lowest measured cost, measured ones before
// unmeasured ones, then candidate order; null when no candidate fixes everything. Every renderer
// names this one, so no two formats can disagree about it.
const FixCandidate* cheapest_fix(const FixSearch& f);
// The other minimal fixes whose cost intervals overlap the cheapest's: they cost the same within
// noise, and the renderers say so instead of calling one cheaper.
std::vector<const FixCandidate*> fixes_costing_the_same(const FixSearch& f);

// The verdict as the renderers print it: to_string(verdict), except that findings the exit code
// accepted are not hidden behind "reproducible": "diverged (allowed: known scatter in the loss)",
// "raised (allowed: ...)", "diverged (within tolerance, --tolerant)". For a target or a report.
std::string verdict_text(const Target& target);
std::string verdict_text(const Report& report);

// "all 5 checks passed", or "2 of 5 checks failed: detection, tracing".
std::string selftest_summary(const SelfTest& self);

// Overall verdict and exit code from the targets (precedence: diverged/raised > crashed/timeout >
// reproducible; skipped does not fail). A configuration with `allowed_by` counts as reproducible;
// an expired allowlist entry (`allowlist_expired`) makes the exit code 1. A target's restart-replay counts too: diverged as diverged,
// crashed as crashed; inconclusive does not change the verdict. A baseline result that
// `baseline_failure` counts makes the exit code 1 (the verdict stays what the targets say). A
// self-test's failed check makes the exit code 1. With `tolerant`, a diverged configuration
// within tolerance counts as reproducible for the exit code (its verdict stays diverged).
void finalize(Report& report);

}  // namespace ra::report
