// SPDX-License-Identifier: Apache-2.0
#include "audit/digest/digest_kernel.h"

#include <fmt/format.h>

namespace ra::digest_kernel {
namespace {

// One loop body for every word width. Written so that GCC vectorises it (32x32->64 multiplies
// map onto vpmuludq); target_clones picks the widest instruction set the CPU has at load time.
template <typename Word>
inline Lanes words_loop(const Word* w, size_t n, uint64_t first) {
  uint64_t a = 0, b = 0;
  uint32_t j = static_cast<uint32_t>(first);
  for (size_t i = 0; i < n; ++i, ++j) {
    const uint32_t u = w[i];
    const uint32_t ka = (j * kP1) ^ kK1, kb = (j * kP2) ^ kK2;
    const uint32_t kc = (j * kP3) ^ kK3, kd = (j * kP4) ^ kK4;
    const uint32_t r16 = (u << 16) | (u >> 16), r8 = (u << 8) | (u >> 24);
    a += static_cast<uint64_t>(u ^ ka) * static_cast<uint64_t>(r16 ^ kb) + (static_cast<uint64_t>(u) << 32);
    b += static_cast<uint64_t>(u ^ kc) * static_cast<uint64_t>(r8 ^ kd) + static_cast<uint64_t>(u);
  }
  return {a, b};
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

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RA_TARGET_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RA_TARGET_CLONES
#endif

RA_TARGET_CLONES Lanes words32(const uint32_t* w, size_t n, uint64_t first) { return words_loop(w, n, first); }
RA_TARGET_CLONES Lanes words16(const uint16_t* w, size_t n, uint64_t first) { return words_loop(w, n, first); }
RA_TARGET_CLONES Lanes words8(const uint8_t* w, size_t n, uint64_t first) { return words_loop(w, n, first); }

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
