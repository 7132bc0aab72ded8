// SPDX-License-Identifier: Apache-2.0
// The op tracer of `run --trace`, inside a trial child.
//
// The problem. To name the first op whose inputs were the same in two runs and whose outputs were
// not, every op of a forward pass, of autograd's backward pass and of the optimizer step must be
// seen with digests of what it read and what it wrote, in execution order, without changing what
// runs (no host synchronisation per op, no copies of tensors, bounded memory).
//
// The approach. A global at::RecordFunction observer (FUNCTION and BACKWARD_FUNCTION scopes, with
// inputs and outputs) sees every dispatched op and every autograd node on every thread. A record is
// kept for the outermost op of each thread (what the model's code calls: aten::conv2d, not the
// aten::convolution it decomposes into), for each autograd node, and for the ops a node calls
// directly; autograd's `evaluate_function` wrappers are transparent, and the ops the engine runs
// after a node (reducing a broadcast gradient) belong to that node. Input digests are taken when an
// op starts (an in-place op shows what it read), output digests when it ends. Forward ops also get
// the TorchScript module path and source line from the interpreter's call stack, looked up only for
// the outermost ops.
//
// Digests go into preallocated slots: on the CPU the vectorised kernel runs at once (the CPU is
// synchronous anyway); on a GPU the digests of an op's inputs (and then of its outputs) are queued
// together, as one launch of the batched fused kernel on the op's stream (digest.h's
// CudaLanesBatch; REPRO_AUDIT_TRACE_BATCH=0 queues one launch per tensor, as before, for
// comparison), adding their lane sums into slots of one device buffer that is zeroed when it is
// allocated and read back once at the end; no op waits for the device. The
// observer's own ops run with RecordFunction and autograd off, so they are neither recorded nor
// counted in autograd's sequence numbers. When the slots run out, records stop and are counted as
// dropped; the trace's memory is its slots plus small per-record metadata, never tensors.
//
// The cost: the digests read each op's inputs and outputs once more (memory speed), plus a few
// microseconds per op of bookkeeping. bench/trace_overhead measures it against an untraced step.
//
// Row-slice mode (`invariance --trace`, worker/invariance/row_trace.h). To say which op first gave
// one row of a batch other bits than the row alone, each tensor whose dim 0 has the batch's size
// also gets the digest of its row slice (narrow(0, row, 1), a view digested where it lies, like any
// other tensor: no copy to the host), in TensorRef::row_digest. The whole tensor is digested as
// well, since a weight may have as many rows as the batch by chance: the comparison decides which
// digest to read by the shapes of the two traces. Cost: one more digest of one row per such tensor.
#pragma once

#include "audit/trace/trace_record.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ra::trace {

// What the trial is doing, for the records that follow (the train loop sets it; a GPU's autograd
// thread reads it).
void set_phase(const char* phase, int step);

// Where the TorchScript code running on this thread is: its module path ("layer1.0.conv1") and
// source line ("model.py:12: y = torch.matmul(x, w)"); both "" outside TorchScript. What the tracer
// names a forward op by, and the float64 referee's precision guard (precision_guard.h) too.
struct OpLocation {
  std::string module;
  std::string source;
};
OpLocation current_location();

// Row-slice mode: tensors whose dim 0 is `batch` also get the digest of their row `row`.
struct RowSlice {
  int64_t batch = 0;
  int64_t row = 0;
};

// Records while alive; at most one at a time.
class Tracer {
 public:
  // `capacity`: tensor digests the trace can hold. A GPU trace's slots live on `device`.
  Tracer(const c10::Device& device, uint64_t capacity, std::optional<RowSlice> rows = std::nullopt);
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Keeps CPU copies of the outputs of the record at `order` (for divergence statistics of a
  // root cause found in an earlier run), and of the call that made them: its dispatcher name and
  // its arguments, tensors copied to the CPU before the op ran (an in-place op overwrites them), for
  // the op's float64 rerun (worker/trace/op_referee.h). The call is empty for a record that is not a
  // dispatcher op (an autograd node).
  void capture(uint64_t order);
  const std::vector<at::Tensor>& captured() const;
  struct Call {
    std::string name, overload;  // "aten::index_put_", ""
    std::vector<c10::IValue> arguments;
  };
  const Call& captured_call() const;

  // Stops recording, waits for the device's queued digests and returns the trace.
  Trace finish();

  struct State;  // defined in trace.cpp

 private:
  std::unique_ptr<State> state_;
};

}  // namespace ra::trace
