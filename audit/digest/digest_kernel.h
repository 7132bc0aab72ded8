// SPDX-License-Identifier: Apache-2.0
// digest/: what identifies a tensor's bits (the digest) and how far two tensors are apart.
// The digest's arithmetic, on raw words, without torch. See audit/digest/digest.h for the design.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ra::digest_kernel {

// The two 64-bit running sums of the digest. Sums commute, so lanes of separate chunks add up to
// the lanes of the whole, whatever the chunking, thread count or device.
struct Lanes {
  uint64_t a = 0;
  uint64_t b = 0;
  Lanes& operator+=(const Lanes& o) {
    a += o.a;
    b += o.b;
    return *this;
  }
};

// Constants of the per-word mix; digest.cpp's generic ATen path uses the same ones.
inline constexpr uint32_t kP1 = 0x9E3779B1u, kK1 = 0x85EBCA77u;
inline constexpr uint32_t kP2 = 0xC2B2AE3Du, kK2 = 0x27D4EB2Fu;
inline constexpr uint32_t kP3 = 0x165667B1u, kK3 = 0xD3A2646Cu;
inline constexpr uint32_t kP4 = 0x27D4EB2Fu, kK4 = 0xFD7046C5u;

// The contribution of word `u` at global word index `j` (the definition; loops below are the
// vectorisable form of the same thing).
inline Lanes mix_word(uint64_t j, uint32_t u) {
  const uint32_t j32 = static_cast<uint32_t>(j);
  const uint32_t ka = (j32 * kP1) ^ kK1, kb = (j32 * kP2) ^ kK2;
  const uint32_t kc = (j32 * kP3) ^ kK3, kd = (j32 * kP4) ^ kK4;
  const uint32_t r16 = (u << 16) | (u >> 16), r8 = (u << 8) | (u >> 24);
  Lanes l;
  l.a = static_cast<uint64_t>(u ^ ka) * static_cast<uint64_t>(r16 ^ kb) + (static_cast<uint64_t>(u) << 32);
  l.b = static_cast<uint64_t>(u ^ kc) * static_cast<uint64_t>(r8 ^ kd) + static_cast<uint64_t>(u);
  return l;
}

// Lanes of `n` words starting at global word index `first`. Elements of 1 or 2 bytes are one
// word each (zero-extended); wider elements are split into 32-bit little-endian words.
Lanes words32(const uint32_t* w, size_t n, uint64_t first);
Lanes words16(const uint16_t* w, size_t n, uint64_t first);
Lanes words8(const uint8_t* w, size_t n, uint64_t first);

// The printed digest: 32 hex digits from the lanes, the dtype name and the shape.
std::string finish(const Lanes& lanes, const std::string& dtype, const std::vector<int64_t>& shape);

// The digest of `n` bytes read as a one-dimensional uint8 tensor (the digest of that tensor, on any
// device): content identities such as a probe's (audit/common/files.h digests whole files the same way).
std::string bytes_digest(const void* data, size_t n);

}  // namespace ra::digest_kernel
