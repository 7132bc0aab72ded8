// SPDX-License-Identifier: Apache-2.0
// `repro-audit invariance MODEL --input rows.pt ...` as the front runs it. The driver has the parts
// of every audit (plan -> run cells -> analyse -> finish), each a small function:
//   plan      checks the files and writes one request per configuration (a cell: the whole sweep
//             of one configuration, which must run in one process);
//   run cells starts one `__invariance` worker per configuration with its environment, at most
//             --jobs at once; a bad model or input (exit 2 or 3 of the worker) ends the audit with
//             the worker's line and no report; a crash or timeout makes that configuration crashed;
//             Before them, unless --referee off, one float64 referee worker that calls each anchor
//             alone (invariance_referee.h), whose dump every worker measures its anchor rows against;
//   analyse   classes, position and warm-up dependence, advice (invariance_analysis.h), each
//             class's error against float64 and the class of its difference (invariance_referee.h);
//   finish    the report (reports/invariance_model.h), its verdict and exit code.
#pragma once

#include "audit/fleet/shard_run.h"
#include "audit/invariance/invariance_protocol.h"
#include "audit/trial/referee.h"
#include "audit/trial/trials.h"
#include "reports/model.h"

#include <optional>
#include <string>
#include <vector>

namespace ra::invariance {

// The largest --budget (batch size) an invariance run tries, and so the largest size merge accepts.
inline constexpr int64_t kMaxBudget = int64_t{1} << 20;

struct InvarianceOptions {
  SessionOptions session;  // device, configurations, jobs, timeout, seed, libraries, argv, progress
  std::string model;
  std::string input;
  int rows = 4;
  Filler filler = Filler::Input;
  std::vector<int64_t> sizes;  // empty: auto
  std::string sizes_text = "auto";
  int64_t budget = 1024;
  std::vector<int64_t> batch_dims;           // per input; -1 for none
  std::optional<fleet::ShardOptions> shard;  // --shard: this process's sizes and configurations (invariance_shard.h)
  bool trace = false;                        // --trace: name the op (audit/invariance/invariance_trace.h)
  bool fix_search = true;                    // when the first configuration is variant (invariance_fix.h)
  Axis axis = Axis::Batch;                   // --axis, --pad-others (invariance_protocol.h)
  int draft = 4;                             // --draft: verify blocks of 2…draft+1 tokens
  int positions = 3;                         // --positions: the places the longest verify block is measured at
  RefereeMode referee = RefereeMode::Cpu;    // --referee: where the float64 referee runs (invariance_referee.h)
};

// Throws UsageError or InputError (one line) for what stops the audit before any report.
report::Report run_invariance(const InvarianceOptions& o);

}  // namespace ra::invariance
