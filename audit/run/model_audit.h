// SPDX-License-Identifier: Apache-2.0
// run/: the audits end to end as the front runs them: `run` and `probes`.
// `repro-audit run`: the parent side of an audit of one model.
#pragma once

#include "audit/fleet/shard_run.h"
#include "audit/trial/config.h"
#include "audit/trial/trial_spec.h"
#include "audit/trial/trials.h"
#include "reports/model.h"

#include <optional>
#include <string>
#include <vector>

namespace ra {

struct RunOptions : SessionOptions {
  std::string model;
  std::string input_file;
  std::vector<ShapeSpec> shapes;
  std::string mode = "infer";
  int steps = 1;
  bool trace = false;                 // record op traces, name root causes, search fixes
  uint64_t trace_capacity = 1 << 21;  // tensor digests a trace may hold (16 bytes each)
  bool fix_search = true;             // with trace: search fixes for diverged configurations
  int timed_runs = 5;                 // fix search: timed runs per timing child, after a warm-up run
  std::string optimizer = "sgd";  // train mode: sgd | adam
  double lr = 0.01;               // train mode: learning rate
  bool replay = false;            // train mode: also run the restart-replay check (audit/train/replay.h)
  std::vector<std::string> replay_omit;  // state the replay's checkpoint leaves out: rng, optimizer
  std::optional<fleet::ShardOptions> shard;  // --shard: run only this shard's configurations (audit/fleet/shard_run.h)
  bool no_native = false;  // --no-native: refuse a model that is native code (an AOTInductor package)
};

// Runs the preflight (throws InputError/UsageError for a bad model, inputs or device), then every
// configuration x repeat in its own child, then the restart-replay when asked, and returns the
// finished report.
report::Report run_audit(const RunOptions& options);

}  // namespace ra
