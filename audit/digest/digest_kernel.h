// SPDX-License-Identifier: Apache-2.0
// digest/: what identifies a tensor's bits (the digest) and how far two tensors are apart.
// The digest's arithmetic on the CPU, on raw words, without torch (the per-word definition is in
// digest_arith.h, shared with the CUDA kernel). See worker/digest/digest.h for the design.
#pragma once

#include "audit/digest/digest_arith.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ra::digest_kernel {

// Lanes of `n` words starting at global word index `first`. Elements of 1 or 2 bytes are one
// word each (zero-extended); wider elements are split into 32-bit little-endian words.
Lanes words32(const uint32_t* w, size_t n, uint64_t first);
Lanes words16(const uint16_t* w, size_t n, uint64_t first);
Lanes words8(const uint8_t* w, size_t n, uint64_t first);

// The same loops on a chosen instruction set, for tests (words32 and the others take the best this
// CPU has: AVX-512, else AVX2, else scalar): nullopt where the CPU lacks it.
enum class Isa { Scalar, Avx2, Avx512 };
std::optional<Lanes> words32_on(Isa isa, const uint32_t* w, size_t n, uint64_t first);
std::optional<Lanes> words16_on(Isa isa, const uint16_t* w, size_t n, uint64_t first);
std::optional<Lanes> words8_on(Isa isa, const uint8_t* w, size_t n, uint64_t first);

// The printed digest: 32 hex digits from the lanes, the dtype name and the shape.
std::string finish(const Lanes& lanes, const std::string& dtype, const std::vector<int64_t>& shape);

// The digest of `n` bytes read as a one-dimensional uint8 tensor (the digest of that tensor, on any
// device): content identities such as a probe's (audit/common/files.h digests whole files the same way).
std::string bytes_digest(const void* data, size_t n);

}  // namespace ra::digest_kernel
