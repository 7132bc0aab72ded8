// SPDX-License-Identifier: Apache-2.0
// `repro-audit invariance --trace`, the worker's part: the anchor alone and one batch, each called
// once more under the op tracer (worker/trace/tracer.h), the batch in row-slice mode, so that each
// op's anchor-row slice is digested on its device (a view, never a copy to the host); the records
// are compared by audit/invariance/invariance_trace.h, whose top comment has the design. Cost: two
// traced calls after the sweep (the sizes are warm by then), a digest per tensor of each op, plus
// one of the anchor's row per batch-carrying tensor.
#pragma once

#include "reports/model.h"
#include "worker/targets/target.h"

#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <string>
#include <vector>

namespace ra::invariance {

// What to trace: the anchor's arguments alone, and a batch of `size` with the anchor at `position`.
struct RowTraceCall {
  std::vector<c10::IValue> alone, batch;
  int64_t size = 0;
  int anchor = 0;
  int64_t position = 0;
};

// The answer where nothing is traced, and why.
report::RowTrace not_traced(std::string why);

// Traces both calls and names the op (a target that cannot be traced op by op gets "not-traced").
report::RowTrace trace_row(targets::Target& target, const RowTraceCall& call, const c10::Device& device);

}  // namespace ra::invariance
