// SPDX-License-Identifier: Apache-2.0
// trace/: op traces, their alignment and root cause, and the fix search.
// What `run --trace` records in a trial child, without torch: the parent reads traces back, aligns
// the op streams of repeated runs and names the root cause (audit/trace/trace_align.h).
//
// A record is one ATen op the model (or the train loop) called, or one autograd backward node,
// with the digests of its tensor inputs (taken when it starts, so that an in-place op shows what it
// read) and outputs (taken when it ends). Forward records are the outermost ops of each thread:
// the ops a model's code calls, not what they decompose into. A backward node has no outputs of its
// own (autograd does not report them); the ATen ops it calls are recorded one level below it, with
// `parent` pointing at the node.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ra::trace {

struct TensorRef {
  std::string dtype;  // "float32", ...; "" for an undefined (None) tensor
  std::vector<int64_t> shape;
  std::string digest;  // 32 hex digits (worker/digest/digest.h), "" for an undefined tensor
  // Row-slice mode only (worker/trace/tracer.h): the digest of the tensor's row slice along dim 0,
  // as a tensor of one row, where dim 0 had the batch's size; "" otherwise. Never written to files.
  std::string row_digest = "";
};

struct Record {
  uint32_t thread = 0;  // threads numbered by first appearance; 0 runs the model
  uint64_t order = 0;   // position in the whole trace by start time (all threads)
  std::string op;       // "aten::conv2d", "ra_test::nondet_sum", or a node "ConvolutionBackward0"
  std::string kind;     // "op" (dispatched ATen op) or "node" (autograd backward node)
  std::string phase;    // "forward", "backward" or "optimizer" (what the trial was doing)
  int step = 0;         // train step, 1-based; 0 in infer mode
  int64_t seq = -1;     // autograd sequence number: nodes, and forward ops run with grad mode on
  int64_t parent = -1;  // `order` of the enclosing backward node (ops inside a node), else -1
  std::string module;   // TorchScript module path of forward ops where known ("encoder.layers.0")
  std::string source;   // TorchScript source location of forward ops where known ("model.py:12")
  std::string scalars;  // digest of the non-tensor arguments (16 hex digits), "" when none
  std::vector<TensorRef> inputs;
  std::vector<TensorRef> outputs;
};

struct Trace {
  std::vector<Record> records;  // in `order`
  uint64_t dropped = 0;         // records not kept because the trace was full
  uint64_t capacity = 0;        // tensor digests the trace could hold
  uint64_t memory_bytes = 0;    // memory the trace held in the child (records, names, digest slots)
  std::string device;           // where the digests were computed
};

}  // namespace ra::trace
