// SPDX-License-Identifier: Apache-2.0
// Uninitialised memory: ops that hand back storage without writing it, whose bits are whatever
// the allocator's block held. With use_deterministic_algorithms(True) and
// fill_uninitialized_memory on (its default), torch.empty fills such storage with NaN (integers
// with their maximum), and resize_ on a quantized tensor, which cannot be filled that way, raises.
//
// What is recorded. The digest sees bits, so a NaN fill, a zero page and a reused block full of an
// earlier tensor's values are three different results. Both probes allocate 34 MiB on the CPU:
// above glibc's largest mmap threshold (32 MiB), so the block is always a fresh mapping of zero
// pages, the same bits in every process and every repeat under the default setting, NaN (or an
// error) under the deterministic one; reading only its first elements keeps the probe cheap
// (the NaN fill of the whole block, a few milliseconds, is part of the op). So it went on our
// machines; CI's machine once gave resize.quantized other bits on a repeat inside one process, which
// is why the unit test's in-process repeat leaves this family out. On CUDA the caching
// allocator hands out a block whose earlier contents depend on what this process ran before: a
// difference between processes there is that leftover state, which is exactly the hazard. So that
// the verdict does not depend on which probes ran before it in the same child, the probe runs in a
// process of its own (ProbeInfo::isolated; on the CPU too, where it costs one process start).
#include "probes/registry.h"

#include <ATen/Functions.h>

namespace ra::probes {
namespace {

constexpr const char* kMemoryFamily = "memory";
constexpr int64_t kFreshBytes = 34LL << 20;  // above glibc's DEFAULT_MMAP_THRESHOLD_MAX (32 MiB)
constexpr int64_t kRecorded = 1 << 16;       // elements read back from the start of the block

void empty_uninitialized(ProbeContext& ctx) {
  const at::Tensor x = at::empty({kFreshBytes / 4}, at::device(ctx.device()).dtype(at::kFloat));
  ctx.record("output", x.narrow(0, 0, kRecorded));
}

// Grows a 4Ki-element quantized tensor: its first 4Ki elements are copied, the rest is new storage.
void resize_quantized(ProbeContext& ctx) {
  at::Tensor q = at::quantize_per_tensor(ctx.rand({4096}), 1.0 / 256, 0, at::kQUInt8);
  q.resize_({kFreshBytes});
  ctx.record("output", q.narrow(0, 0, kRecorded).int_repr());
}

}  // namespace

void register_memory(ProbeList& out) {
  out.push_back(
      make_probe({.name = "empty.uninitialized",
                  .family = kMemoryFamily,
                  .op = "aten::empty",
                  .kb = "empty.uninitialized",
                  .form = "float32 torch.empty of 34 MiB (a fresh block); the bits of its first 64Ki elements",
                  .isolated = true},
                 empty_uninitialized));
  // Quantized tensors are CPU tensors here: resize_ has no QuantizedCUDA kernel.
  out.push_back(
      make_probe({.name = "resize.quantized",
                  .family = kMemoryFamily,
                  .op = "aten::resize_",
                  .cuda = false,
                  .kb = "resize.quantized",
                  .form = "quint8 quantize_per_tensor of 4Ki values, resize_ to 34 MiB; int_repr of the first 64Ki"},
                 resize_quantized));
}

}  // namespace ra::probes
