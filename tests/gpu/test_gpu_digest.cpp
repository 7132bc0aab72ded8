// SPDX-License-Identifier: Apache-2.0
// GPU tier: the digest of a CUDA tensor equals the digest of its CPU copy, for every dtype, for
// non-contiguous and unaligned views, for empty and 0-d tensors, and past 4 Gi words; the fused
// kernel (audit/digest/digest_cuda.cu) and ATen's arithmetic agree on the device. Exits 77
// (reported by ctest as skipped) where no CUDA device exists.
#include "audit/digest/digest.h"

#include <ATen/ATen.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  std::printf("%-48s %s\n", what.c_str(), ok ? "ok" : "FAILED");
  failures += !ok;
}

// The CPU digest, the device digest (fused kernel where built) and ATen's on the device agree.
void agree(const at::Tensor& cpu, const at::Tensor& gpu, const std::string& what) {
  const std::string want = ra::digest(cpu);
  expect(ra::digest(gpu) == want && ra::digest_generic(gpu) == want, what);
}

}  // namespace

int main() {
  // The fused kernel: REPRO_AUDIT_CUDA_DIGEST when set (an install tree carried to a GPU machine),
  // else the module this build made.
  const bool module_given = std::getenv("REPRO_AUDIT_CUDA_DIGEST") != nullptr;
#if defined(RA_CUDA_DIGEST_MODULE)
  setenv("REPRO_AUDIT_CUDA_DIGEST", RA_CUDA_DIGEST_MODULE, /*overwrite=*/0);
  const bool fused_expected = true;
#else
  const bool fused_expected = module_given;
#endif
  const auto& cuda = at::detail::getCUDAHooks();
  if (!cuda.hasCUDA() || cuda.deviceCount() == 0) {
    std::puts("no CUDA device: skipped");
    return 77;
  }
  const std::string implementation = ra::cuda_digest_implementation();
  std::printf("CUDA digests: %s\n", implementation.c_str());
  if (fused_expected) expect(implementation.rfind("fused kernel", 0) == 0, "the fused kernel is in use");
  auto gen = at::make_generator<at::CPUGeneratorImpl>(11);
  const at::Tensor base = at::randn({513, 257}, gen);
  for (const auto type : {at::kBFloat16, at::kHalf, at::kFloat, at::kDouble, at::kComplexFloat, at::kChar, at::kByte,
                          at::kShort, at::kInt, at::kLong, at::kBool}) {
    const at::Tensor cpu = type == at::kBool ? base.gt(0)
                           : at::isIntegralType(type, false) ? (base * 50).to(type)
                                                              : base.to(type);
    const at::Tensor gpu = cpu.to(at::kCUDA);
    const std::string name = ra::dtype_name(type);
    agree(cpu, gpu, name + " contiguous");
    agree(cpu.t(), gpu.t(), name + " transposed");
    for (int64_t skip : {1, 3, 5}) {  // starts off a 16-byte boundary
      agree(cpu.reshape({-1}).narrow(0, skip, 1000 + skip), gpu.reshape({-1}).narrow(0, skip, 1000 + skip),
            name + " unaligned +" + std::to_string(skip));
    }
    agree(cpu.reshape({-1}).narrow(0, 0, 0), gpu.reshape({-1}).narrow(0, 0, 0), name + " empty");
    agree(cpu[7][9], gpu[7][9], name + " 0-d");
  }
  // Past 4 Gi words: 2^32 + 37 bytes as uint8, one word each (4 GiB on the device and the host).
  const int64_t n = (int64_t{1} << 32) + 37;
  try {
    const at::Tensor big = at::randint(0, 256, {n}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA));
    agree(big.cpu(), big, "uint8 of 2^32 + 37 elements");
  } catch (const c10::Error& e) {
    std::printf("%-48s skipped (%s)\n", "uint8 of 2^32 + 37 elements", e.what_without_backtrace());
  }
  std::printf("%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
