// SPDX-License-Identifier: Apache-2.0
#include "audit/digest/digest_kernel.h"

#include <fmt/format.h>

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12 warns that the self-initialised __Y of _mm512_undefined_epi32 "may be used uninitialized"
// wherever an AVX-512 intrinsic that takes an undefined source is inlined (GCC bug 105593, fixed in
// 13): the value is undefined by design, and the warning points into the compiler's own header. The
// two warnings are off for the intrinsics' header and this file, which inlines them, only there.
#if !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#endif

namespace ra::digest_kernel {
namespace {

// The per-word mix of digest_kernel.h, rearranged for speed without changing a bit of the result:
//   - the keys (j * P) ^ K step by P from one word to the next, so no multiply is needed for them;
//   - the u << 32 and u terms of the lanes are summed once: sum(u << 32) = sum(u) << 32 mod 2^64.
// This loop is the reference and the fallback; words_avx2 does eight words at a time.
template <typename Word>
inline Lanes words_scalar(const Word* w, size_t n, uint64_t first) {
  uint64_t a = 0, b = 0, s = 0;
  const uint32_t j0 = static_cast<uint32_t>(first);
  uint32_t ja = j0 * kP1, jb = j0 * kP2, jc = j0 * kP3, jd = j0 * kP4;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t u = w[i];
    const uint32_t r16 = (u << 16) | (u >> 16), r8 = (u << 8) | (u >> 24);
    a += static_cast<uint64_t>(u ^ ja ^ kK1) * static_cast<uint64_t>(r16 ^ jb ^ kK2);
    b += static_cast<uint64_t>(u ^ jc ^ kK3) * static_cast<uint64_t>(r8 ^ jd ^ kK4);
    s += u;
    ja += kP1;
    jb += kP2;
    jc += kP3;
    jd += kP4;
  }
  return {a + (s << 32), b + s};
}

#if defined(__x86_64__) && defined(__GNUC__)
#define RA_DIGEST_AVX2 1

// Eight words as eight 32-bit lanes, zero-extended from 1 or 2 bytes.
template <typename Word>
__attribute__((target("avx2"))) inline __m256i load8(const Word* p) {
  if constexpr (sizeof(Word) == 4)
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  else if constexpr (sizeof(Word) == 2)
    return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  else
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

__attribute__((target("avx2"))) inline __m256i splat(uint32_t v) { return _mm256_set1_epi32(static_cast<int>(v)); }

__attribute__((target("avx2"))) inline uint64_t sum4(__m256i v) {
  alignas(32) uint64_t t[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(t), v);
  return t[0] + t[1] + t[2] + t[3];
}

// words_scalar, eight words per step. The 32x32->64 products take the even lanes with one
// vpmuludq and the odd ones after a 64-bit shift, so nothing is widened; the rotations are byte
// shuffles. About four instructions per word: faster than memcpy's read-and-write of the same bytes.
template <typename Word>
__attribute__((target("avx2"))) Lanes words_avx2(const Word* w, size_t n, uint64_t first) {
  const __m256i j = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(first))),
                                     _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  __m256i ja = _mm256_mullo_epi32(j, splat(kP1)), jb = _mm256_mullo_epi32(j, splat(kP2));
  __m256i jc = _mm256_mullo_epi32(j, splat(kP3)), jd = _mm256_mullo_epi32(j, splat(kP4));
  const __m256i sa = splat(8 * kP1), sb = splat(8 * kP2), sc = splat(8 * kP3), sd = splat(8 * kP4);
  const __m256i k1 = splat(kK1), k2 = splat(kK2), k3 = splat(kK3), k4 = splat(kK4);
  const __m256i rot16 = _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,  //
                                         2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
  const __m256i rot8 = _mm256_setr_epi8(3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14,  //
                                        3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14);
  const __m256i low = _mm256_set1_epi64x(0xffffffff);
  __m256i a = _mm256_setzero_si256(), b = a, s = a;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i u = load8(w + i);
    const __m256i xa = _mm256_xor_si256(u, _mm256_xor_si256(ja, k1));
    const __m256i ya = _mm256_xor_si256(_mm256_shuffle_epi8(u, rot16), _mm256_xor_si256(jb, k2));
    const __m256i xb = _mm256_xor_si256(u, _mm256_xor_si256(jc, k3));
    const __m256i yb = _mm256_xor_si256(_mm256_shuffle_epi8(u, rot8), _mm256_xor_si256(jd, k4));
    a = _mm256_add_epi64(a, _mm256_mul_epu32(xa, ya));
    a = _mm256_add_epi64(a, _mm256_mul_epu32(_mm256_srli_epi64(xa, 32), _mm256_srli_epi64(ya, 32)));
    b = _mm256_add_epi64(b, _mm256_mul_epu32(xb, yb));
    b = _mm256_add_epi64(b, _mm256_mul_epu32(_mm256_srli_epi64(xb, 32), _mm256_srli_epi64(yb, 32)));
    s = _mm256_add_epi64(s, _mm256_add_epi64(_mm256_and_si256(u, low), _mm256_srli_epi64(u, 32)));
    ja = _mm256_add_epi32(ja, sa);
    jb = _mm256_add_epi32(jb, sb);
    jc = _mm256_add_epi32(jc, sc);
    jd = _mm256_add_epi32(jd, sd);
  }
  const uint64_t sum = sum4(s);
  Lanes out{sum4(a) + (sum << 32), sum4(b) + sum};
  out += words_scalar(w + i, n - i, first + i);
  return out;
}

__attribute__((target("avx512f"))) inline __m512i splat16(uint32_t v) { return _mm512_set1_epi32(static_cast<int>(v)); }

// Sixteen words as sixteen 32-bit lanes, zero-extended from 1 or 2 bytes.
template <typename Word>
__attribute__((target("avx512f"))) inline __m512i load16(const Word* p) {
  if constexpr (sizeof(Word) == 4)
    return _mm512_loadu_si512(p);
  else if constexpr (sizeof(Word) == 2)
    return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  else
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// words_avx2 with sixteen words per step, and two instructions AVX-512 has for this mix: a
// three-way XOR (vpternlogd 0x96) builds each factor in one step, and vprold rotates. About 27
// instructions per sixteen words, against 31 per eight: on a core with full-width AVX-512 units
// (Zen 5, Intel server parts) twice the words per cycle.
template <typename Word>
__attribute__((target("avx512f"))) Lanes words_avx512(const Word* w, size_t n, uint64_t first) {
  const __m512i j = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(first))),
                                     _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  __m512i ja = _mm512_mullo_epi32(j, splat16(kP1)), jb = _mm512_mullo_epi32(j, splat16(kP2));
  __m512i jc = _mm512_mullo_epi32(j, splat16(kP3)), jd = _mm512_mullo_epi32(j, splat16(kP4));
  const __m512i sa = splat16(16 * kP1), sb = splat16(16 * kP2), sc = splat16(16 * kP3), sd = splat16(16 * kP4);
  const __m512i k1 = splat16(kK1), k2 = splat16(kK2), k3 = splat16(kK3), k4 = splat16(kK4);
  const __m512i low = _mm512_set1_epi64(0xffffffff);
  __m512i a = _mm512_setzero_si512(), b = a, s = a;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i u = load16(w + i);
    const __m512i xa = _mm512_ternarylogic_epi32(u, ja, k1, 0x96);
    const __m512i ya = _mm512_ternarylogic_epi32(_mm512_rol_epi32(u, 16), jb, k2, 0x96);
    const __m512i xb = _mm512_ternarylogic_epi32(u, jc, k3, 0x96);
    const __m512i yb = _mm512_ternarylogic_epi32(_mm512_rol_epi32(u, 8), jd, k4, 0x96);
    a = _mm512_add_epi64(a, _mm512_mul_epu32(xa, ya));
    a = _mm512_add_epi64(a, _mm512_mul_epu32(_mm512_srli_epi64(xa, 32), _mm512_srli_epi64(ya, 32)));
    b = _mm512_add_epi64(b, _mm512_mul_epu32(xb, yb));
    b = _mm512_add_epi64(b, _mm512_mul_epu32(_mm512_srli_epi64(xb, 32), _mm512_srli_epi64(yb, 32)));
    s = _mm512_add_epi64(s, _mm512_add_epi64(_mm512_and_si512(u, low), _mm512_srli_epi64(u, 32)));
    ja = _mm512_add_epi32(ja, sa);
    jb = _mm512_add_epi32(jb, sb);
    jc = _mm512_add_epi32(jc, sc);
    jd = _mm512_add_epi32(jd, sd);
  }
  const uint64_t sum = static_cast<uint64_t>(_mm512_reduce_add_epi64(s));
  Lanes out{static_cast<uint64_t>(_mm512_reduce_add_epi64(a)) + (sum << 32),
            static_cast<uint64_t>(_mm512_reduce_add_epi64(b)) + sum};
  out += words_avx2(w + i, n - i, first + i);
  return out;
}
#endif

bool supported(Isa isa) {
#if defined(RA_DIGEST_AVX2)
  static const bool avx2 = __builtin_cpu_supports("avx2"), avx512 = __builtin_cpu_supports("avx512f");
  return isa == Isa::Scalar || (isa == Isa::Avx2 && avx2) || (isa == Isa::Avx512 && avx512);
#else
  return isa == Isa::Scalar;
#endif
}

template <typename Word>
Lanes words_with(Isa isa, const Word* w, size_t n, uint64_t first) {
#if defined(RA_DIGEST_AVX2)
  if (isa == Isa::Avx512) return words_avx512(w, n, first);
  if (isa == Isa::Avx2) return words_avx2(w, n, first);
#endif
  return words_scalar(w, n, first);
}

Isa best_isa() {
  static const Isa best = supported(Isa::Avx512) ? Isa::Avx512 : supported(Isa::Avx2) ? Isa::Avx2 : Isa::Scalar;
  return best;
}

template <typename Word>
Lanes words(const Word* w, size_t n, uint64_t first) {
  return words_with(best_isa(), w, n, first);
}

uint64_t fmix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

}  // namespace

std::optional<Lanes> words32_on(Isa isa, const uint32_t* w, size_t n, uint64_t first) {
  return supported(isa) ? std::optional<Lanes>(words_with(isa, w, n, first)) : std::nullopt;
}
std::optional<Lanes> words16_on(Isa isa, const uint16_t* w, size_t n, uint64_t first) {
  return supported(isa) ? std::optional<Lanes>(words_with(isa, w, n, first)) : std::nullopt;
}
std::optional<Lanes> words8_on(Isa isa, const uint8_t* w, size_t n, uint64_t first) {
  return supported(isa) ? std::optional<Lanes>(words_with(isa, w, n, first)) : std::nullopt;
}

Lanes words32(const uint32_t* w, size_t n, uint64_t first) { return words(w, n, first); }
Lanes words16(const uint16_t* w, size_t n, uint64_t first) { return words(w, n, first); }
Lanes words8(const uint8_t* w, size_t n, uint64_t first) { return words(w, n, first); }

std::string finish(const Lanes& lanes, const std::string& dtype, const std::vector<int64_t>& shape) {
  uint64_t s = 0xcbf29ce484222325ull;
  auto feed = [&s](uint64_t v) { s = fmix64(s ^ (v + 0x9e3779b97f4a7c15ull + (s << 6) + (s >> 2))); };
  for (unsigned char c : dtype) feed(c);
  feed(shape.size());
  for (int64_t d : shape) feed(static_cast<uint64_t>(d));
  const uint64_t h1 = fmix64(lanes.a + s);
  const uint64_t h2 = fmix64(lanes.b ^ fmix64(s + 0x632be59bd9b4e019ull) ^ (h1 * 0x9e3779b97f4a7c15ull));
  return fmt::format("{:016x}{:016x}", h1, h2);
}

std::string bytes_digest(const void* data, size_t n) {
  return finish(words8(static_cast<const uint8_t*>(data), n, 0), "uint8", {static_cast<int64_t>(n)});
}

}  // namespace ra::digest_kernel
