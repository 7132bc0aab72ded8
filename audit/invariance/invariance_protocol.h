// SPDX-License-Identifier: Apache-2.0
// invariance/: `repro-audit invariance` (batch invariance), the front's side; the worker's side is
// worker/invariance/. This header is the protocol between them: the front writes an
// InvarianceRequest (a trial spec for the model, inputs, device and configuration, plus what to
// sweep), starts `repro-audit-worker __invariance REQUEST RESULT` with the configuration's
// environment, and reads an InvarianceMeasurement back. One worker per configuration: invariance is
// a property inside one process, so every size of the sweep runs in the same one.
#pragma once

#include "audit/trial/trial_spec.h"
#include "reports/model.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ra {

enum class Filler { Input, Random };

// What varies around an anchor row (issue 41, item 6: what serving engines test):
//   Batch   the batch size and the row's place in it (the default);
//   Pad     the same, with the other rows padded to shorter lengths on one side (their
//           attention_mask 0 there): does another row's padding reach this row's bits?
//   Verify  the sequence: is a token's output the same when the call ends at it (the decode step of
//           a model without a KV cache) as inside a block of k+1 tokens (speculative decoding's
//           verify pass), for k = 1…draft?
enum class Axis { Batch, PadRight, PadLeft, Verify };
std::string axis_name(Axis a);  // "batch", "pad-right", "pad-left", "verify"
std::optional<Axis> axis_named(const std::string& name);

// What to sweep. `sizes` empty means auto: 1…9, then powers of two and their ±1 up to `budget`,
// then bisection between neighbouring sizes whose bits disagree.
struct InvarianceRequest {
  TrialSpec spec;  // model, input file, device, seed, configuration, libraries
  int rows = 4;    // anchor rows: the input's first R rows
  Filler filler = Filler::Input;
  std::vector<int64_t> sizes;       // ascending, without duplicates; empty: auto
  int64_t budget = 1024;            // the largest batch size auto tries
  std::vector<int64_t> batch_dims;  // per input; -1: no batch dimension (passed whole); missing: 0
  bool fingerprint = false;         // read the environment fingerprint (the worker then loads CUDA's half)
  bool bisect = false;              // bisect between `sizes` too, as auto does (a shard of auto: invariance_shard.h)
  bool trace = false;               // --trace: name the op (worker/invariance/row_trace.h)
  Axis axis = Axis::Batch;
  int draft = 4;  // Verify: the most draft tokens k a verify block holds (blocks of 2…draft+1 tokens)
  // Verify: the places the longest block is measured at; every block inside the row's last
  // draft + positions tokens is measured (worker/invariance/verify_sweep.h).
  int positions = 3;
  // The float64 referee (audit/invariance/invariance_referee.h): no sweep; the spec (precision
  // "float64", the referee's configuration) loads the model in float64, each anchor row is called alone,
  // and each output's anchor rows, stacked in anchor order, are written to spec.dump_path.
  bool referee = false;
};

// The float64 referee (issue 53; audit/trial/referee.h): one anchor row's slice of one output, with
// the bits `digest`, against that anchor's float64 row (the request's spec names the referee's dump,
// TrialSpec::reference_dump). The worker measures each distinct slice of the start
// placement once: a class's rows share their bits, so a sweep measures about anchors x outputs x classes.
struct RowError {
  int anchor = 0;
  std::string output;
  std::string digest;
  report::ReferenceError error;
};

// What a worker measured.
struct InvarianceMeasurement {
  std::string kind;                 // the target's kind
  std::string runtime;              // what ran a torch.export archive ("interpreter", "nativert"); "" otherwise
  std::vector<std::string> inputs;  // "x=float32[16x3x64x64] (batch dim 0)"
  std::vector<report::SwitchValue> switches;
  std::vector<std::string> outputs;   // compared
  std::vector<std::string> excluded;  // left out, with the reason
  std::vector<std::string> notes;
  report::NegativeControl control;
  std::vector<report::InvarianceCell> cells;
  double forward_ms = 0;
  int64_t calls = 0;
  double sweep_ms = 0;
  // One sentence each, "" when not so: the anchors alone gave other bits from one call to the next
  // (random numbers drawn every call: nothing was swept past batch 1); the model raised at one size
  // ("the model fails on a batch of 5: ..."), so the sweep stopped there and `cells` holds the sizes
  // measured before.
  std::string nondeterministic;
  std::string stopped;
  std::optional<report::RowTrace> trace;  // with --trace
  nlohmann::ordered_json environment;     // the fingerprint, when asked; null otherwise
  std::vector<RowError> errors;           // with the referee's dump: each distinct start slice against it
};

nlohmann::json to_json(const InvarianceRequest& r);
InvarianceRequest invariance_request_from_json(const nlohmann::json& j);
nlohmann::ordered_json to_json(const InvarianceMeasurement& m);
InvarianceMeasurement invariance_measurement_from_json(const nlohmann::ordered_json& j);

// How far a worker's sweep is, for the front's progress line (audit/common/progress.h): the
// worker rewrites it beside its result (sweep_progress_path, written whole with a rename) as each
// size starts and ends; the front reads it while the worker runs. Bisection plans more sizes as it
// goes, so `planned` may grow. A missing or garbled file reads as nothing: no detail, no error.
struct SweepProgress {
  int64_t done = 0;     // sizes measured
  int64_t planned = 0;  // sizes to measure, those done included
  int64_t current = 0;  // the size being measured; 0 between sizes
  double eta_s = -1;    // the worker's estimate of the sweep's time left; -1 when it has none
};
std::string sweep_progress_path(const std::string& result_path);
std::string to_text(const SweepProgress& p);
std::optional<SweepProgress> read_sweep_progress(const std::string& path);

// The sizes `--sizes auto` starts from: 1…9, then 2^k-1, 2^k, 2^k+1 for 2^k <= budget, all <= budget.
std::vector<int64_t> auto_sizes(int64_t budget);

}  // namespace ra
