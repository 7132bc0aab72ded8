// SPDX-License-Identifier: Apache-2.0
// Op streams: a trace small enough to keep, so that a later run can say which op an upgrade changed.
//
// The problem. `--baseline` and `compare` tell a regression from an environment change, but a
// release engineer also needs to know *which op* now computes other bits: a convolution that
// picked another cuDNN kernel is expected after a cuDNN upgrade, a changed embedding lookup is
// not. Traces name that op between runs of one audit (trace_align.h), but a trace holds every
// tensor digest of every op, megabytes for a real model, too much for a baseline kept in git.
//
// The approach. A report::OpStream keeps, per thread, one 24-byte record per traced op: a 48-bit
// hash of what the op is (alignment's structural key without the step: kind, op, phase,
// enclosing node, input dtypes and shapes), the train step (16 bits), and two 64-bit FNV-1a
// hashes, one over the op's inputs (dtypes, shapes, digests, non-tensor arguments) and one over
// its outputs. Records are packed little-endian and base64-encoded: 32 characters each, in one
// string per thread. That is all a baseline keeps. A report also keeps what names each record:
// a table of distinct ops (op, phase, direction, node, forward op, module, source) and per thread
// a 3-byte table index per record (4 characters), so that the current side of a comparison can
// say where in the model its first changed op is.
//
// Comparing two streams (the baseline's and the current run's) follows compare_runs: per thread,
// the (op hash, step) sequences are aligned (align_sequences, Myers' LCS), and the matched pairs
// are walked in order. The first pair whose inputs hash matched and whose outputs hash did not is
// the first changed op; over all threads the earliest by step, then phase (forward, backward,
// optimizer), then thread, is named. Every other matched pair whose outputs differ counts as
// changed (propagated, or a further independent change). Records left unmatched are counted: the
// op streams differ structurally there (another kernel choice that shows up as another op).
//
// The cost. Packing is O(N) in the records; a baseline's stream costs 32 bytes per record, a
// report's 36 plus the op table. Comparing costs what align_sequences costs: O((N+M)·D).
#pragma once

#include "audit/trace/trace_record.h"
#include "reports/trace_model.h"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace ra::trace {

// A stream that cannot be decoded (bad base64, an op index beyond the table).
class OpStreamError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The stream of a trace (records sorted by `order`, as read_trace gives them).
report::OpStream pack_op_stream(const Trace& trace);

struct OpStreamComparison {
  // Named from the current stream's op table; "record N of thread T" when it has none (a baseline).
  std::optional<report::RootCause> first_changed;
  uint64_t changed_ops = 0;         // matched ops whose outputs differ (first_changed included)
  uint64_t unmatched_baseline = 0;  // records of each side left out of the alignment
  uint64_t unmatched_current = 0;
  bool identical() const { return changed_ops == 0 && unmatched_baseline == 0 && unmatched_current == 0; }
};

// Aligns `current` against `baseline` (see above). Throws OpStreamError for a stream that cannot
// be decoded.
OpStreamComparison compare_op_streams(const report::OpStream& baseline, const report::OpStream& current);

}  // namespace ra::trace
