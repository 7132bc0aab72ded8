// SPDX-License-Identifier: Apache-2.0
#include "audit/digest/digest.h"

#include "audit/digest/digest_kernel.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>

namespace ra {
namespace {

namespace dk = digest_kernel;

// A tensor made ready for digesting: conj/neg views resolved, dense, contiguous, flat.
at::Tensor prepare(const at::Tensor& t) {
  TORCH_CHECK(t.layout() == at::kStrided, "digest: only dense (strided) tensors are supported, got ", t.layout());
  TORCH_CHECK(!t.is_quantized(), "digest: quantized tensors are not supported");
  return t.resolve_conj().resolve_neg().contiguous().reshape({-1});
}

std::vector<int64_t> shape_of(const at::Tensor& t) { return t.sizes().vec(); }

dk::Lanes cpu_lanes(const at::Tensor& flat) {
  const size_t elem = flat.element_size();
  const auto* bytes = static_cast<const uint8_t*>(flat.const_data_ptr());
  const int64_t words = static_cast<int64_t>(elem >= 4 ? flat.numel() * (elem / 4) : flat.numel());
  constexpr int64_t kGrain = 1 << 16;
  // A fixed chunk grid, whatever the thread count; the lanes are sums, so order does not matter.
  const int64_t chunks = (words + kGrain - 1) / kGrain;
  std::vector<dk::Lanes> partial(static_cast<size_t>(chunks));
  at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t lo = c * kGrain, n = std::min(kGrain, words - lo);
      dk::Lanes l;
      if (elem >= 4)
        l = dk::words32(reinterpret_cast<const uint32_t*>(bytes) + lo, static_cast<size_t>(n), static_cast<uint64_t>(lo));
      else if (elem == 2)
        l = dk::words16(reinterpret_cast<const uint16_t*>(bytes) + lo, static_cast<size_t>(n), static_cast<uint64_t>(lo));
      else
        l = dk::words8(bytes + lo, static_cast<size_t>(n), static_cast<uint64_t>(lo));
      partial[static_cast<size_t>(c)] = l;
    }
  });
  dk::Lanes total;
  for (const auto& p : partial) total += p;
  return total;
}

// 32-bit words of a flat contiguous tensor as int64 values in [0, 2^32), any device.
at::Tensor words_as_int64(const at::Tensor& flat) {
  const auto elem = flat.element_size();
  constexpr int64_t kMask32 = 0xffffffffLL;
  if (elem >= 4) return flat.view(at::kInt).to(at::kLong).bitwise_and(kMask32);
  if (elem == 2) return flat.view(at::kShort).to(at::kLong).bitwise_and(0xffff);
  return flat.view(at::kByte).to(at::kLong);
}

at::Tensor low32(const at::Tensor& x) { return x.bitwise_and(0xffffffffLL); }

}  // namespace

std::string dtype_name(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return "float32";
    case at::kDouble: return "float64";
    case at::kHalf: return "float16";
    case at::kBFloat16: return "bfloat16";
    case at::kComplexFloat: return "complex64";
    case at::kComplexDouble: return "complex128";
    case at::kByte: return "uint8";
    case at::kChar: return "int8";
    case at::kShort: return "int16";
    case at::kInt: return "int32";
    case at::kLong: return "int64";
    case at::kBool: return "bool";
    default: {
      std::string s = c10::toString(type);
      std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
      return s;
    }
  }
}

std::string digest(const at::Tensor& t) {
  if (!t.device().is_cpu()) return digest_generic(t);
  const at::Tensor flat = prepare(t);
  return dk::finish(cpu_lanes(flat), dtype_name(t.scalar_type()), shape_of(t));
}

namespace {

// The two lane sums of a flat contiguous tensor as a 2-element int64 tensor on its device; nothing
// waits for the device.
at::Tensor generic_lanes(const at::Tensor& flat) {
  const at::Tensor all = flat.numel() == 0 ? at::empty({0}, flat.options().dtype(at::kLong)) : words_as_int64(flat);
  const int64_t n = all.numel();
  constexpr int64_t kChunk = 1 << 22;  // bounds the temporaries: 4 Mi words at a time
  using dk::kK1, dk::kK2, dk::kK3, dk::kK4, dk::kP1, dk::kP2, dk::kP3, dk::kP4;
  at::Tensor sums = at::zeros({2}, all.options());
  for (int64_t lo = 0; lo < n; lo += kChunk) {
    const int64_t len = std::min(kChunk, n - lo);
    const at::Tensor u = all.narrow(0, lo, len);
    const at::Tensor j = at::arange(lo, lo + len, all.options());
    const at::Tensor ka = low32(j * static_cast<int64_t>(kP1)).bitwise_xor(static_cast<int64_t>(kK1));
    const at::Tensor kb = low32(j * static_cast<int64_t>(kP2)).bitwise_xor(static_cast<int64_t>(kK2));
    const at::Tensor kc = low32(j * static_cast<int64_t>(kP3)).bitwise_xor(static_cast<int64_t>(kK3));
    const at::Tensor kd = low32(j * static_cast<int64_t>(kP4)).bitwise_xor(static_cast<int64_t>(kK4));
    const at::Tensor r16 = low32(u * 65536).bitwise_or(u.floor_divide(65536));
    const at::Tensor r8 = low32(u * 256).bitwise_or(u.floor_divide(1 << 24));
    // Products of two values below 2^32 wrap modulo 2^64 in int64, as the CPU kernel's uint64 does.
    sums[0] += (u.bitwise_xor(ka) * r16.bitwise_xor(kb) + u * (int64_t{1} << 32)).sum();
    sums[1] += (u.bitwise_xor(kc) * r8.bitwise_xor(kd) + u).sum();
  }
  return sums;
}

}  // namespace

std::string digest_generic(const at::Tensor& t) {
  const at::Tensor sums = generic_lanes(prepare(t)).cpu();
  dk::Lanes lanes;
  lanes.a = static_cast<uint64_t>(sums[0].item<int64_t>());
  lanes.b = static_cast<uint64_t>(sums[1].item<int64_t>());
  return dk::finish(lanes, dtype_name(t.scalar_type()), shape_of(t));
}

digest_kernel::Lanes digest_lanes_cpu(const at::Tensor& t) { return cpu_lanes(prepare(t)); }

void digest_lanes_into(const at::Tensor& t, at::Tensor& slot) { slot.copy_(generic_lanes(prepare(t)), /*non_blocking=*/true); }

}  // namespace ra
