// SPDX-License-Identifier: Apache-2.0
// `run --calls K`: a configuration's warm-up comparison from its trials (report::WarmUp,
// reports/target_model.h). Each trial child called the model K times and sent back the digests of
// calls 2..K (worker/child/trial_child.cpp); here each later call is compared with call 1 of the
// same trial, never across processes (that is the configuration's run-to-run verdict). A trial
// in which a call changed what the next computes from (inputs, parameters, buffers, attributes:
// worker/targets/call_state.h) names it and is not compared. With --trace, call 1's
// op trace and that of its first differing later call are aligned like two repeats
// (audit/trace/trace_align.h), to name the first op whose output differs between calls. Cost: a
// comparison of digests per call, and at most one alignment of two traces per configuration.
#pragma once

#include "audit/trial/analysis.h"
#include "reports/target_model.h"

#include <string>
#include <vector>

namespace ra {

// `runs[i]`'s call-1 trace is `traces[i]` ("" without --trace).
report::WarmUp compare_calls(const std::vector<TrialRun>& runs, const std::vector<std::string>& traces, int calls);

}  // namespace ra
