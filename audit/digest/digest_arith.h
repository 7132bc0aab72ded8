// SPDX-License-Identifier: Apache-2.0
// digest/: the digest's per-word arithmetic, the one definition the host and the device share.
// digest_kernel.cpp (CPU, vectorised) and digest_cuda.cu (the fused CUDA kernel) both compute the
// sums of mix_word below; digest.cpp's generic ATen path spells the same formula in int64
// operations. Plain C++ with no library headers, so nvcc and any host compiler take it as is.
// See worker/digest/digest.h for the design.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define RA_HOST_DEVICE __host__ __device__
#else
#define RA_HOST_DEVICE
#endif

namespace ra::digest_kernel {

// The two 64-bit running sums of the digest. Sums commute, so lanes of separate chunks add up to
// the lanes of the whole, whatever the chunking, thread count or device.
struct Lanes {
  uint64_t a = 0;
  uint64_t b = 0;
  RA_HOST_DEVICE Lanes& operator+=(const Lanes& o) {
    a += o.a;
    b += o.b;
    return *this;
  }
};

// Constants of the per-word mix.
inline constexpr uint32_t kP1 = 0x9E3779B1u, kK1 = 0x85EBCA77u;
inline constexpr uint32_t kP2 = 0xC2B2AE3Du, kK2 = 0x27D4EB2Fu;
inline constexpr uint32_t kP3 = 0x165667B1u, kK3 = 0xD3A2646Cu;
inline constexpr uint32_t kP4 = 0x27D4EB2Fu, kK4 = 0xFD7046C5u;

// The contribution of word `u` at global word index `j`: the definition of the digest's lanes.
// Only the low 32 bits of j key the mix, so indices 2^32 apart share keys; the u terms keep the
// lanes sensitive to every word regardless.
RA_HOST_DEVICE inline Lanes mix_word(uint64_t j, uint32_t u) {
  const uint32_t j32 = static_cast<uint32_t>(j);
  const uint32_t ka = (j32 * kP1) ^ kK1, kb = (j32 * kP2) ^ kK2;
  const uint32_t kc = (j32 * kP3) ^ kK3, kd = (j32 * kP4) ^ kK4;
  const uint32_t r16 = (u << 16) | (u >> 16), r8 = (u << 8) | (u >> 24);
  Lanes l;
  l.a = static_cast<uint64_t>(u ^ ka) * static_cast<uint64_t>(r16 ^ kb) + (static_cast<uint64_t>(u) << 32);
  l.b = static_cast<uint64_t>(u ^ kc) * static_cast<uint64_t>(r8 ^ kd) + static_cast<uint64_t>(u);
  return l;
}

// How a tensor's bytes become words: elements of 1 or 2 bytes are one zero-extended word each;
// wider elements are split into 32-bit little-endian words. Returns the word size in bytes.
RA_HOST_DEVICE inline int word_bytes_for_element(int element_bytes) { return element_bytes >= 4 ? 4 : element_bytes; }

// The lanes of words [begin, end) of a buffer of `Word`s whose word 0 has global index `first`,
// taking every `step`-th word from `begin` (step 1 on the CPU; a grid stride on the device).
template <typename Word>
RA_HOST_DEVICE inline Lanes lanes_of_words(const Word* w, uint64_t begin, uint64_t end, uint64_t step, uint64_t first) {
  Lanes l;
  for (uint64_t i = begin; i < end; i += step) l += mix_word(first + i, static_cast<uint32_t>(w[i]));
  return l;
}

// How the fused CUDA kernel splits a buffer among its threads, in plain C++ so that CPU tests can
// run every thread's share and check that the shares add up to the digest. A buffer of `n` words
// starts with `head` words before its first 16-byte boundary (head_words), then holds 16-byte
// vectors, then a tail of fewer words than a vector. Thread `tid` of `step` takes every step-th
// word of the head and of the tail and every step-th vector of the body.
RA_HOST_DEVICE inline uint64_t head_words(uintptr_t address, uint64_t word_bytes, uint64_t n) {
  const uint64_t misalign = address % 16;
  const uint64_t head = misalign == 0 ? 0 : (16 - misalign) / word_bytes;
  return head < n ? head : n;
}

template <typename Word>
RA_HOST_DEVICE inline void load_vector(Word (&out)[16 / sizeof(Word)], const Word* p) {
#if defined(__CUDA_ARCH__)
  const uint4 q = __ldg(reinterpret_cast<const uint4*>(p));
  memcpy(out, &q, 16);
#else
  memcpy(out, p, 16);
#endif
}

template <typename Word>
RA_HOST_DEVICE inline Lanes thread_lanes(const Word* w, uint64_t n, uint64_t head, uint64_t tid, uint64_t step,
                                         uint64_t first) {
  constexpr uint64_t kVec = 16 / sizeof(Word);
  const uint64_t body = (n - head) / kVec;
  Lanes l = lanes_of_words(w, tid, head, step, first);
  for (uint64_t i = tid; i < body; i += step) {
    Word words[kVec];
    load_vector(words, w + head + i * kVec);
    const uint64_t j = first + head + i * kVec;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (uint64_t k = 0; k < kVec; ++k) l += mix_word(j + k, static_cast<uint32_t>(words[k]));
  }
  l += lanes_of_words(w, head + body * kVec + tid, n, step, first);
  return l;
}

// The batched kernel (digest_cuda.cu's ra_digest_cuda_lanes_batch): the digests of up to
// kBatchMax tensors in one launch, which the tracer queues per op instead of one launch (and one
// memset) per tensor.
//
// The problem: a traced step digests hundreds of tensors, most of them small, and each launch costs
// the host microseconds that the untraced step does not spend. The approach: the host packs one
// descriptor per tensor into a Batch passed by value as the kernel's parameter (no copy to the
// device, no allocation), and splits one grid among the tensors in proportion to their words
// (plan_batch); each block finds its tensor (item_of_block) and its threads sum their shares as the
// one-tensor kernel does (thread_lanes), adding them into the tensor's result. The cost: a linear
// look-up of at most kBatchMax entries per block, and results that must be zero before the launch
// (the tracer's slots are zeroed once, when they are allocated). All of it is plain C++ so that the
// CPU tests run every block's share of a batch and compare the sums with the digest.
inline constexpr uint32_t kBatchMax = 32;
inline constexpr uint32_t kBatchThreads = 256;  // threads per block, in both kernels

struct BatchItem {
  const void* data = nullptr;         // device address of word 0, aligned to the word size
  uint64_t words = 0;                 // at least 1: empty tensors are not packed (their lanes are 0)
  unsigned long long* out = nullptr;  // 2 words of device memory the lanes are added to
  uint32_t word_bytes = 4;            // 1, 2 or 4
  uint32_t first_block = 0;           // set by plan_batch
  uint32_t blocks = 0;                // set by plan_batch, at least 1
};

struct Batch {
  uint32_t count = 0;
  uint32_t blocks = 0;  // the grid: the sum of the items' blocks
  BatchItem items[kBatchMax];
};

// Splits a grid among the items of `b`: each item gets the blocks its words need (one thread per
// word), and when they need more than `max_blocks` in all, a share of `max_blocks` in proportion
// to its words, at least one block each. Sets first_block, blocks and b.blocks.
inline void plan_batch(Batch& b, uint64_t max_blocks) {
  uint64_t wanted[kBatchMax];
  uint64_t total = 0;
  for (uint32_t i = 0; i < b.count; ++i) {
    wanted[i] = (b.items[i].words + kBatchThreads - 1) / kBatchThreads;
    total += wanted[i];
  }
  uint32_t next = 0;
  for (uint32_t i = 0; i < b.count; ++i) {
    uint64_t n = wanted[i];
    if (total > max_blocks) {
      const double share =
          static_cast<double>(wanted[i]) * static_cast<double>(max_blocks) / static_cast<double>(total);
      n = static_cast<uint64_t>(share);
      if (n > wanted[i]) n = wanted[i];
    }
    if (n < 1) n = 1;
    b.items[i].first_block = next;
    b.items[i].blocks = static_cast<uint32_t>(n);
    next += static_cast<uint32_t>(n);
  }
  b.blocks = next;
}

// The item block `block` of the grid works on: the last whose first block is at or before it.
RA_HOST_DEVICE inline uint32_t item_of_block(const Batch& b, uint32_t block) {
  uint32_t i = 0;
  while (i + 1 < b.count && b.items[i + 1].first_block <= block) ++i;
  return i;
}

// What thread `thread` of block `block` adds to its item's lanes (the kernel's body, minus the
// reductions): its share of the item's words as the one-tensor kernel splits them, over the
// item's blocks.
RA_HOST_DEVICE inline Lanes batch_thread_lanes(const Batch& b, uint32_t block, uint32_t thread, uint32_t* item) {
  const uint32_t i = item_of_block(b, block);
  *item = i;
  const BatchItem& it = b.items[i];
  const uint64_t tid = static_cast<uint64_t>(block - it.first_block) * kBatchThreads + thread;
  const uint64_t step = static_cast<uint64_t>(it.blocks) * kBatchThreads;
  const uintptr_t address = reinterpret_cast<uintptr_t>(it.data);
  const uint64_t head = head_words(address, it.word_bytes, it.words);
  if (it.word_bytes == 4) return thread_lanes(static_cast<const uint32_t*>(it.data), it.words, head, tid, step, 0);
  if (it.word_bytes == 2) return thread_lanes(static_cast<const uint16_t*>(it.data), it.words, head, tid, step, 0);
  return thread_lanes(static_cast<const uint8_t*>(it.data), it.words, head, tid, step, 0);
}

}  // namespace ra::digest_kernel
