// SPDX-License-Identifier: Apache-2.0
// run/: the audits end to end as the front runs them: `run` and `probes`.
// `repro-audit run`: the parent side of an audit of one model.
//
// The steps, in the parent (audit/run/model_audit.cpp; nothing here links LibTorch):
//   1. Checks: the model, --input and every --load-library exist and are readable (else exit 3).
//   2. Preflight: one child with no configuration loads the libraries and the target, checks the
//      device and the inputs, runs once unrecorded and brings back the fingerprint. Anything wrong
//      with the user's files or device is one error before any trial ("usage" exits 2, else 3).
//   3. Trials: run_batch runs configuration x repeat children (repeat-major, --jobs at once; with
//      --repeats auto in rounds, audit/trial/analysis.h), each spec made as its trial starts.
//   4. Analysis: verdicts and configuration dependence (audit/trial/analysis.h), statistics from the
//      dumps through one __stats worker (BatchedDiff).
//   5. With --trace: summarise_traces aligns each repeat's trace with the reference
//      (audit/trace/trace_align.h) and packs the reference's op stream (audit/trace/op_stream.h);
//      explain_dependence compares the reference traces of configuration groups (no extra trial);
//      capture_root_cause_stats runs three more traced children per root cause (the first three)
//      that dump that op's outputs, for its statistics; search_fixes (audit/trace/fix_search.h) runs
//      through two seams, EvaluateFn (run_batch of a candidate, traced) and TimeFn (time_configs:
//      untraced timed children), so its unit tests need no processes.
//   5b. With --calls K: each trial's calls 2..K compared with its call 1 (audit/run/warm_up.h).
//   6. The restart-replay, when asked (audit/train/replay.h), then the report.
// The float64 referee (audit/trial/referee.h), unless --referee off: one more child before the trials
// runs the model in float64 and dumps its tensors; every trial (fix-search candidates too) measures its
// floating tensors against that dump; the analysis classes each difference (runs, configuration
// dependence). Where the referee cannot run, one line says why and the bitwise verdict stands.
#pragma once

#include "audit/fleet/shard_run.h"
#include "audit/trial/config.h"
#include "audit/trial/referee.h"
#include "audit/trial/trial_spec.h"
#include "audit/trial/trials.h"
#include "reports/model.h"

#include <optional>
#include <string>
#include <vector>

namespace ra {

// The largest --trace-capacity: a trace holds at most this many digests and records together, so its
// memory in the trial is bounded (16 bytes a digest, a record's few dozen bytes: about 1.5 GiB at
// most); 2^32 once made every trial fail with std::bad_alloc.
inline constexpr uint64_t kMaxTraceCapacity = uint64_t{1} << 24;

struct RunOptions : SessionOptions {
  std::string model;
  std::string input_file;
  std::vector<ShapeSpec> shapes;
  int64_t vocab = 0;  // --vocab: integer --shape inputs drawn from [0, vocab) (0: as the model says)
  std::string mode = "infer";
  int steps = 1;
  bool trace = false;                        // record op traces, name root causes, search fixes
  uint64_t trace_capacity = 1 << 21;         // tensor digests and records a trace may hold (kMaxTraceCapacity)
  bool fix_search = true;                    // with trace: search fixes for diverged configurations
  int timed_runs = 5;                        // fix search: timed runs per timing child, after a warm-up run
  std::string optimizer = "sgd";             // train mode: sgd | adam
  double lr = 0.01;                          // train mode: learning rate
  bool replay = false;                       // train mode: also run the restart-replay check (audit/train/replay.h)
  std::vector<std::string> replay_omit;      // state the replay's checkpoint leaves out: rng, optimizer
  std::optional<fleet::ShardOptions> shard;  // --shard: run only this shard's configurations (audit/fleet/shard_run.h)
  bool no_native = false;                    // --no-native: refuse a model that is native code (an AOTInductor package)
  int calls = 1;                             // --calls K: calls per trial, later ones compared with call 1 (warm_up.h)
  RefereeMode referee = RefereeMode::Cpu;    // --referee: where the float64 referee runs, or off
  // Set by the audit once the referee ran: its dump, which every trial measures its tensors against.
  std::string reference_dump;
};

// Runs the preflight (throws InputError/UsageError for a bad model, inputs or device), then every
// configuration x repeat in its own child, then the restart-replay when asked, and returns the
// finished report.
report::Report run_audit(const RunOptions& options);

}  // namespace ra
