// SPDX-License-Identifier: Apache-2.0
// GPU tier: the digest of a CUDA tensor equals the digest of its CPU copy, for every dtype, for
// non-contiguous and unaligned views, for empty and 0-d tensors, and past 4 Gi words; the fused
// kernel (worker/digest/digest_cuda.cu) and ATen's arithmetic agree on the device; so does the
// tracer's batched path (CudaLanesBatch: many tensors per launch), for the same tensors. Exits 77
// (reported by ctest as skipped) where no CUDA device exists.
#include "audit/digest/digest_kernel.h"
#include "worker/digest/digest.h"

#include <ATen/ATen.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

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

// Tensors digested through the batched path (digest.h's CudaLanesBatch) into rows of one zeroed
// buffer, then compared with the CPU digests of their copies: more than one launch's worth, so
// that a batch is launched when full and the rest by flush().
struct BatchCheck {
  std::vector<at::Tensor> cpu, gpu;
  std::vector<std::string> what;
  void add(const at::Tensor& c, const at::Tensor& g, const std::string& w) {
    cpu.push_back(c);
    gpu.push_back(g);
    what.push_back(w);
  }
  void run(const std::string& title) {
    const int64_t n = static_cast<int64_t>(gpu.size());
    at::Tensor slots = at::zeros({n + 3, 2}, at::TensorOptions().dtype(at::kLong).device(at::kCUDA));
    std::vector<int64_t> failed;
    {
      ra::CudaLanesBatch batch(slots);
      for (int64_t i = 0; i < n; ++i) batch.add(gpu[static_cast<size_t>(i)], i + 3);  // rows off 0 too
      failed = batch.flush();
    }
    expect(failed.empty(), title + ": every tensor digested");
    const at::Tensor host = slots.cpu();
    const auto* v = host.const_data_ptr<int64_t>();
    int wrong = 0;
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = static_cast<size_t>(i);
      const ra::digest_kernel::Lanes lanes{static_cast<uint64_t>(v[2 * (i + 3)]),
                                           static_cast<uint64_t>(v[2 * (i + 3) + 1])};
      const std::string got =
          ra::digest_kernel::finish(lanes, ra::dtype_name(gpu[k].scalar_type()), gpu[k].sizes().vec());
      if (got != ra::digest(cpu[k])) {
        std::printf("  batched digest differs: %s\n", what[k].c_str());
        ++wrong;
      }
    }
    expect(wrong == 0, title + " (" + std::to_string(n) + " tensors)");
    expect(v[0] == 0 && v[1] == 0 && v[4] == 0 && v[5] == 0, title + ": rows not given stay zero");
  }
};

}  // namespace

int main() {
  // The fused kernel: REPRO_AUDIT_CUDA_DIGEST when set (an install tree carried to a GPU machine),
  // else the module this build made.
  [[maybe_unused]] const bool module_given =
      std::getenv("REPRO_AUDIT_CUDA_DIGEST") != nullptr;  // without a module of its own
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
  if (fused_expected) expect(ra::CudaLanesBatch::available(), "the batched kernel is in use");
  BatchCheck batched;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(11);
  const at::Tensor base = at::randn({513, 257}, gen);
  for (const auto type : {at::kBFloat16, at::kHalf, at::kFloat, at::kDouble, at::kComplexFloat, at::kChar, at::kByte,
                          at::kShort, at::kInt, at::kLong, at::kBool}) {
    const at::Tensor cpu = type == at::kBool                 ? base.gt(0)
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
    batched.add(cpu, gpu, name + " contiguous");
    batched.add(cpu.t(), gpu.t(), name + " transposed");
    for (int64_t skip : {1, 3, 5})
      batched.add(cpu.reshape({-1}).narrow(0, skip, 1000 + skip), gpu.reshape({-1}).narrow(0, skip, 1000 + skip),
                  name + " unaligned +" + std::to_string(skip));
    batched.add(cpu.reshape({-1}).narrow(0, 0, 0), gpu.reshape({-1}).narrow(0, 0, 0), name + " empty");
    batched.add(cpu[7][9], gpu[7][9], name + " 0-d");
    batched.add(cpu[5], gpu[5], name + " a row at an offset");
    batched.add(cpu.narrow(1, 3, 7), gpu.narrow(1, 3, 7), name + " strided columns");
  }
  batched.run("batched digests equal the CPU's");
  // A batch where one tensor is large and the rest tiny: the grid is split by words.
  {
    BatchCheck mixed;
    const at::Tensor large = at::randn({1 << 24}, gen);
    mixed.add(large, large.to(at::kCUDA), "float32 of 2^24 elements");
    for (int i = 0; i < 5; ++i) {
      const at::Tensor small = at::randn({i + 1}, gen);
      mixed.add(small, small.to(at::kCUDA), "float32 of " + std::to_string(i + 1));
    }
    mixed.run("a large tensor batched with small ones");
  }
  // Past 4 Gi words: 2^32 + 37 bytes as uint8, one word each (4 GiB on the device and the host).
  const int64_t n = (int64_t{1} << 32) + 37;
  try {
    const at::Tensor big = at::randint(0, 256, {n}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA));
    const at::Tensor big_cpu = big.cpu();
    agree(big_cpu, big, "uint8 of 2^32 + 37 elements");
    BatchCheck huge;
    huge.add(big_cpu, big, "uint8 of 2^32 + 37 elements");
    huge.add(big_cpu.narrow(0, 1, 100), big.narrow(0, 1, 100), "and a slice of it");
    huge.run("batched past 4 Gi words");
  } catch (const c10::Error& e) {
    std::printf("%-48s skipped (%s)\n", "uint8 of 2^32 + 37 elements", e.what_without_backtrace());
  }
  std::printf("%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
