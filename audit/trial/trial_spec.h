// SPDX-License-Identifier: Apache-2.0
// trial/: trial orchestration: configurations, the spec and result protocol, the process runner, verdicts.
// The protocol between the parent and a trial child: the parent writes a TrialSpec as JSON, starts
// `repro-audit-worker __child SPEC RESULT` with the configuration's environment, and reads a TrialResult
// back from RESULT. A child that exits without writing a valid RESULT has crashed.
#pragma once

#include "audit/common/device.h"
#include "audit/trial/config.h"
#include "reports/core_model.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ra {

// One synthetic input: a shape and a dtype name ("float32", "int64", ...; "": the one the model
// declares for the input, else float32).
struct ShapeSpec {
  std::vector<int64_t> sizes;
  std::string dtype;
};

// Parses "8x3x224x224[:float32]"; throws UsageError.
ShapeSpec parse_shape(const std::string& text);
std::string to_string(const ShapeSpec& s);

// Learning rate of a train-mode optimizer when --lr is not given: 0.01 for sgd, 0.001 for adam.
double default_learning_rate(const std::string& optimizer);

enum class ChildTask {
  Preflight,  // load model and inputs, run one forward, report the environment fingerprint
  Trial,      // apply the configuration, run, digest, dump
  Probes,     // apply the configuration, run each probe of `probes` in turn (worker/child/probe_child.h)
  Referee,    // the float64 referee (reports/referee_model.h): run once in float64, dump every tensor
};

// Restart-replay (audit/train/replay.h): the checkpointing child saves after its last step, the resumed
// child restores before its first.
struct CheckpointTask {
  std::string save_path;          // after step `steps`, write the checkpoint here ("" = none)
  std::string resume_path;        // before training, restore from here ("" = none)
  int resume_step = 0;            // steps the checkpoint holds: the resumed child runs resume_step+1 .. steps
  std::vector<std::string> omit;  // state the checkpoint does not carry: "rng", "optimizer"
};

struct TrialSpec {
  ChildTask task = ChildTask::Trial;
  std::string model;
  std::string input_file;  // torch.save file, or "" for synthetic inputs
  std::vector<ShapeSpec> shapes;
  int64_t vocab = 0;           // --vocab: integer --shape inputs drawn from [0, vocab) (0: as the model says)
  Device device;               // in the JSON as its text: "cpu", "cuda", "cuda:1"
  std::string mode = "infer";  // infer | train
  int steps = 1;
  std::string optimizer = "sgd";  // train mode: sgd | adam
  double lr = 0.01;               // train mode: learning rate
  uint64_t seed = 0;
  Config config;
  std::vector<std::string> load_libraries;
  std::string dump_path;  // where to write the tensors for divergence statistics ("" = none)
  // The reference repeat's digests, when the parent has them: probe name ("" for a model trial) ->
  // tensor name -> digest. The child keeps and dumps only tensors that differ from them (or that
  // they lack), so that only the reference repeat's dump holds every tensor.
  std::map<std::string, std::map<std::string, std::string>> dump_only_differing;
  int repeat = 0;
  std::vector<std::string> probes;  // Probes: the probes to run, in order
  bool time_probes = false;         // Probes: time unrecorded runs of each probe after the recorded one
  std::string trace_path;       // Trial: record an op trace (worker/trace/tracer.h) and write it here ("" = no trace)
  uint64_t trace_capacity = 0;  // Trial: tensor digests the trace may hold
  int64_t capture_order = -1;   // Trial with trace: keep the outputs of the record at this order...
  std::string capture_path;     // ...and write them here (a dump: "output/0", "output/1", ...)
  int timed_runs = 0;           // Trial: after the recorded run, time this many unrecorded ones
  int calls = 1;                // Trial, `run --calls K`: call the model K times and compare calls 2..K with call 1
  int state_step = 0;           // train mode: also digest the training state after this step (0 = never)
  CheckpointTask checkpoint;    // restart-replay children only
  // "float64": the referee's precision (task Referee): the target loads with its floating parameters,
  // buffers, constants and inputs cast to float64, and an export graph's floating dtype arguments
  // promoted; "" runs the model as it is.
  std::string precision;
  // Trial: the referee's dump; the child measures each floating tensor it records against the
  // referee's tensor of that name (TrialResult::errors). "" when the audit has no referee.
  std::string reference_dump;
  // Not in the JSON: set by the worker to the folder of its result file, the parent's scratch, which
  // the parent removes whatever the child does; where a target may unpack files ("" = none).
  std::string scratch;
};

struct TrialResult {
  report::TrialStatus status = report::TrialStatus::Ok;
  std::string message;
  std::string error_kind;  // for status Error: "input" or "usage" when the model/inputs/device are at fault
  std::vector<report::SwitchValue> switches;
  std::vector<report::TensorDigest> tensors;
  std::vector<std::string> alerts;     // determinism-alert warnings (warn_only mode), first line each, deduplicated
  nlohmann::ordered_json environment;  // preflight only
  std::vector<std::string> input_descriptions;  // preflight only
  std::vector<std::string> input_names;         // preflight only: the forward argument of each input, or none
  std::map<std::string, std::string>
      package;  // preflight only: a compiled package's metadata (AOTInductor), else empty
  // preflight only: the model's identity by content (audit/baseline/identity.h), "" where none.
  std::string weights_digest;
  std::string graph_digest;
  std::string untraceable;            // preflight with --trace only: why the trials run without it, else ""
  std::vector<std::string> warnings;  // preflight only: what the user should know, one sentence each
  // Training-state digests (param/, buffer/, optimizer/, generator/): after step `state_step`, as
  // saved by a checkpointing child, or as restored by a resumed one.
  std::vector<report::TensorDigest> state;
  double startup_ms = 0;
  double wall_ms = 0;
  std::vector<double> run_ms;  // timed_runs: wall time of each unrecorded run, device synchronised
  std::string dump_error;      // why the dump could not be written ("No space left on device"), "" if it was
  // `run --calls K`: the digests of calls 2..K, in the order of `tensors` (call 1's); what call 1
  // changed of the model's own state ("buffer 'count'"), in which case no later call ran; and the
  // first later call that differed from call 1 whose op trace is at call_trace_path (0: none).
  std::vector<std::vector<report::TensorDigest>> later_calls;
  std::vector<std::string> mutated;
  int traced_call = 0;
  // With TrialSpec::reference_dump: each recorded floating tensor's error against the referee's, in
  // record order (integer and bool tensors have none).
  std::vector<report::ReferenceError> errors;
};

nlohmann::json to_json(const TrialSpec& spec);
TrialSpec trial_spec_from_json(const nlohmann::json& j);
nlohmann::json to_json(const TrialResult& result);
TrialResult trial_result_from_json(const nlohmann::json& j);

// Where a trial traced with `calls` > 1 writes the op trace of its first later call that differed.
std::string call_trace_path(const std::string& trace_path);

// Digest over a trial's tensor digests (names, dtypes, shapes and digests): equal outcomes mean
// every tensor was bitwise equal.
std::string outcome_digest(const std::vector<report::TensorDigest>& tensors);

}  // namespace ra
