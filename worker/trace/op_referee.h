// SPDX-License-Identifier: Apache-2.0
// The class of a trace's first differing op (issue 53), the worker's side of `__op_class`
// (audit/trial/worker_protocol.h; the front turns the answer into a class in audit/trial/referee.h).
//
// The problem: the trace names the first op whose outputs differed while its inputs matched, and the
// model-level referee says how far the model's outputs lie from float64, but not whether that op's own
// difference is float reordering, a race between writers, or worse. The approach: the capture runs
// that repeat the root cause keep, besides its outputs, the call itself (the dispatcher name and the
// arguments, tensors copied to the CPU before the op ran: write_call). One service then
//   * runs the op once more on those arguments in float64 (floating tensors and floating dtype
//     arguments promoted), on the CPU with deterministic algorithms and one thread, and measures each
//     run's output against it in its own dtype's ULP, as the model's referee does (reference_error);
//   * for a non-accumulating index write (index_put_, index_copy_, scatter_ without reduce, put_),
//     works out from the arguments which element each write lands on and which value it carries: the
//     elements written more than once, and whether every element that differs between the two runs is
//     one of them and holds, in each run, one of the values written to it. That is a write race: the
//     runs disagree only on which writer came last.
// The cost: one float64 op call, and for an index write a few passes over its indices.
#pragma once

#include "audit/trial/worker_protocol.h"

#include <string>

namespace ra::trace {

class Tracer;

// Writes the call `tracer` captured (Tracer::captured_call) to `path`: torch.save'd, a tuple of the
// name, the overload name and the arguments. A call that is empty, or that cannot be pickled (an
// argument torch cannot save), leaves no file: its class then says the call was not kept.
void write_call(const std::string& path, const Tracer& tracer);

// The answer of `__op_class` for one request; every failure is a note in the answer, never an exception.
OpClassAnswer op_class(const OpClassRequest& request);

}  // namespace ra::trace
