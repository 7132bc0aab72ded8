// SPDX-License-Identifier: Apache-2.0
// Tensor digests: a 128-bit identifier of a tensor's exact bits.
//
// The problem. A determinism audit compares runs bit for bit, in different processes and possibly
// on different devices, for tensors of gigabytes. A digest must therefore: see every bit (+0.0 and
// -0.0, NaN payloads), be position-aware (a permutation, or two changes that cancel in a sum or an
// XOR, must change it), ignore strides (a view equals its contiguous copy), give the same value on
// CPU and GPU for the same bits, and run on the tensor's own device at memory speed.
//
// The approach. The tensor is read in logical (row-major) order as a sequence of 32-bit words
// (elements of 1 or 2 bytes are one zero-extended word each; wider ones are split little-endian).
// Each word u at global index j contributes, to each of two 64-bit lanes, a product of two 32-bit
// values that mix u with keys derived from j, plus u itself (so that a zero factor cannot hide u).
// The lanes are sums modulo 2^64: addition is associative and commutative, so any chunking, thread
// count or reduction tree (CPU threads, GPU blocks) gives the same lanes. Index-keyed, non-linear
// per-word terms make the digest position-aware: a swap or a pair of cancelling changes changes
// the lanes unless two pseudo-random 64-bit terms cancel exactly (about 2^-64 per lane). The lanes
// are finished on the host together with the dtype name and the shape.
//
// The cost. On CPU the word loop is vectorised (32x32->64 multiplies) and split over intra-op
// threads; a non-contiguous tensor on the CPU is read in bounded pieces (for_each_piece), so an
// expanded view of a few stored elements never materialises whole. On CUDA, a fused kernel
// (digest_cuda.cu, loaded on demand) reads a contiguous tensor once where it lies, and only the
// two lane sums travel to the host; a non-contiguous one is first made contiguous on its device.
// Elsewhere, and where that module was not built, the same arithmetic runs as ATen int64
// operations in bounded chunks (exact, so bit-identical to both kernels). The per-word formula is
// in digest_arith.h, the one header the host and device kernels share. bench/bench.cpp measures
// each kernel against a plain copy of the same bytes.
#pragma once

#include "audit/digest/digest_kernel.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ra {

// Calls `fn(pieces, first)` over consecutive pieces of the same-shaped tensors `ts`, in logical
// (row-major) order: each piece flat and contiguous, with conj/neg views resolved, `first` the
// logical index of its first element. Pieces hold at most `max_elems` elements (an innermost run
// longer than that is cut too). A contiguous tensor's pieces are views of it; any other is copied
// piece by piece, so memory stays bounded whatever a view claims.
using PieceFn = std::function<void(const std::vector<at::Tensor>& pieces, int64_t first)>;
void for_each_piece(const std::vector<at::Tensor>& ts, int64_t max_elems, const PieceFn& fn);

// The digest of `t` on its own device.
std::string digest(const at::Tensor& t);

// The same digest computed with ATen integer operations only (any device). digest() uses it on
// devices without a fused kernel; tests use it as an independent reference for both kernels.
std::string digest_generic(const at::Tensor& t);

// For the tracer (worker/trace/tracer.h): the digest's lane sums of a CPU tensor, computed now; and, for a
// tensor on any device, its lane sums written into `slot` (2 int64 elements on the same device)
// with ATen operations queued on the device: nothing waits for it. digest_kernel::finish turns
// lanes into the digest.
digest_kernel::Lanes digest_lanes_cpu(const at::Tensor& t);
void digest_lanes_into(const at::Tensor& t, at::Tensor& slot);

// The tracer's batched path for CUDA tensors (digest_arith.h's Batch): add() packs a tensor's
// descriptor, and one kernel launch per kBatchMax tensors, on the current stream, adds their
// lanes into rows of `slots` ([N, 2] int64, contiguous, on one CUDA device, zero in the rows it is
// given: they are added to, not set). flush() queues what is packed; nothing waits for the device,
// and it returns the rows it could not digest by any path (their zeros are no digest).
// A contiguous tensor is read where it lies (no view, no copy); another is made contiguous first,
// and the copy lives until the launch is queued. Where the batched kernel cannot take a tensor
// (another device, no module, a failed launch), the row gets digest_lanes_into's result instead.
class CudaLanesBatch {
 public:
  explicit CudaLanesBatch(at::Tensor slots);
  ~CudaLanesBatch();
  CudaLanesBatch(const CudaLanesBatch&) = delete;
  CudaLanesBatch& operator=(const CudaLanesBatch&) = delete;
  void add(const at::Tensor& t, int64_t row);
  std::vector<int64_t> flush();
  // Whether this process has the batched kernel (the module is loaded on first use).
  static bool available();

 private:
  struct Pending;
  void launch();
  at::Tensor slots_;
  std::unique_ptr<Pending> pending_;
};

// What digests CUDA tensors in this process: "fused kernel PATH", or "ATen operations (why not)".
// Loads the module on first use (call it only once libtorch_cuda.so is loaded).
std::string cuda_digest_implementation();

// "float32", "bfloat16", "int64", "bool", ...
std::string dtype_name(at::ScalarType type);

// The integer type as wide as an element of `element_size` bytes, to view a tensor's bits.
at::ScalarType bits_type(int64_t element_size);

}  // namespace ra
