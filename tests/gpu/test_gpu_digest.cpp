// SPDX-License-Identifier: Apache-2.0
// GPU tier: the digest of a CUDA tensor equals the digest of its CPU copy, for every dtype and for
// non-contiguous views. Exits 77 (reported by ctest as skipped) where no CUDA device exists.
#include "audit/digest/digest.h"

#include <ATen/ATen.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <cstdio>

int main() {
  const auto& cuda = at::detail::getCUDAHooks();
  if (!cuda.hasCUDA() || cuda.deviceCount() == 0) {
    std::puts("no CUDA device: skipped");
    return 77;
  }
  int failures = 0;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(11);
  const at::Tensor base = at::randn({513, 257}, gen);
  for (const auto type : {at::kBFloat16, at::kHalf, at::kFloat, at::kDouble, at::kChar, at::kByte, at::kShort, at::kInt,
                          at::kLong, at::kBool}) {
    const at::Tensor cpu = type == at::kBool ? base.gt(0) : at::isIntegralType(type, false) ? (base * 50).to(type) : base.to(type);
    const at::Tensor gpu = cpu.to(at::kCUDA);
    for (const auto& [what, c, g] : {std::tuple{"contiguous", cpu, gpu}, std::tuple{"transposed", cpu.t(), gpu.t()}}) {
      const bool ok = ra::digest(c) == ra::digest(g);
      std::printf("%-9s %-10s %s\n", ra::dtype_name(type).c_str(), what, ok ? "equal" : "DIFFERENT");
      failures += !ok;
    }
  }
  std::printf("%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
