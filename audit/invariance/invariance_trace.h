// SPDX-License-Identifier: Apache-2.0
// `repro-audit invariance --trace`: which op first gives the anchor row other bits in a batch than
// alone (torch-free, unit-tested with hand-made traces).
//
// The problem. The sweep says that a row's bits depend on the batch size; the user needs the op.
// `run --trace` compares two runs of the same shapes; here the two runs have different shapes (a
// batch of 1 and a batch of M), so whole-tensor digests always differ and shapes never match.
//
// The approach. The worker (worker/invariance/row_trace.h) traces the anchor alone and the
// smallest batch of another class, the second with the tracer's row-slice mode: every tensor whose
// dim 0 is M also has the digest of the anchor's row. Top-level forward records (what the user's
// code called) are aligned by op sequence (trace::align_sequences, Myers' LCS) on keys that ignore
// dim 0: op name, dtypes, ranks and the other dims of the inputs. Each pair's tensors are then
// related by their shapes: equal shapes are the same tensor at both sizes (a weight; compared
// whole); [1,...] alone and [M,...] in the batch carry the batch at dim 0 (the anchor's row
// compared with the tensor alone); anything else has lost the batch dimension. Walking the pairs in
// order, the answer is the first op whose inputs matched and whose outputs did not ("found"), or the
// first op that takes a batch-carrying input and returns a tensor that does not keep the batch at
// dim 0 (a reshape or view that merges it, a reduction over it, a transpose that moves it): the
// batch cannot be followed past it, so the first difference is at or after it ("stopped"). The
// non-tensor arguments are not compared: they legitimately hold the batch size (x.view(B, -1)).
//
// The cost. O(N) keys and what align_sequences costs, for N top-level ops: milliseconds.
#pragma once

#include "audit/trace/trace_record.h"
#include "reports/model.h"

#include <cstdint>

namespace ra::invariance {

// Compares `alone` (the anchor in a batch of 1) with `batched` (a batch of `size` traced in
// row-slice mode at the anchor's row). Fills outcome, op, module, source, inputs, outputs,
// compared and message of the answer; size, anchor and position are the caller's to set.
report::RowTrace explain_row(const trace::Trace& alone, const trace::Trace& batched, int64_t size);

}  // namespace ra::invariance
