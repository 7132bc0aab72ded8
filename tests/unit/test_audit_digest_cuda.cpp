// SPDX-License-Identifier: Apache-2.0
// The fused CUDA digest module (worker/digest/digest_cuda.cu) against the libraries of the torch in
// use: it must load once libtorch_cuda.so is loaded, and its entry point must resolve. Without a
// GPU, a call must report the missing device rather than crash. Its arithmetic is tested in
// test_audit_digest.cpp; its results on a device in tests/gpu.
#include "audit/digest/digest_arith.h"
#include "worker/runtime/cuda_loader.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include <dlfcn.h>

#if defined(RA_CUDA_DIGEST_MODULE)
TEST_CASE("digest_cuda: the module loads against this torch's CUDA libraries and its entry point resolves") {
  const std::string why = ra::load_cuda();
  REQUIRE_MESSAGE(why.empty(), "libtorch_cuda.so did not load: ", why);
  void* module = dlopen(RA_CUDA_DIGEST_MODULE, RTLD_NOW | RTLD_LOCAL);
  const char* error = module == nullptr ? dlerror() : nullptr;
  REQUIRE_MESSAGE(module != nullptr, error);
  using Fn = const char* (*)(const void*, uint64_t, int, uint64_t, void*, int);
  const auto fn = reinterpret_cast<Fn>(dlsym(module, "ra_digest_cuda_lanes"));
  const bool exported = fn != nullptr;
  REQUIRE_MESSAGE(exported, "ra_digest_cuda_lanes is not exported");
  CHECK(std::string(fn(nullptr, 0, 3, 0, nullptr, 0)) == "word size must be 1, 2 or 4 bytes");
  // The batched entry point (issue 31): it checks what it is given before touching the device.
  using BatchFn = const char* (*)(void*, int);
  const auto batch = reinterpret_cast<BatchFn>(dlsym(module, "ra_digest_cuda_lanes_batch"));
  const bool batch_exported = batch != nullptr;
  REQUIRE_MESSAGE(batch_exported, "ra_digest_cuda_lanes_batch is not exported");
  ra::digest_kernel::Batch b;
  CHECK(batch(&b, 0) == nullptr);  // nothing to do
  b.count = ra::digest_kernel::kBatchMax + 1;
  CHECK(std::string(batch(&b, 0)) == "too many tensors for one batch");
  b.count = 1;
  b.items[0].words = 1;
  b.items[0].word_bytes = 3;
  CHECK(std::string(batch(&b, 0)) == "word size must be 1, 2 or 4 bytes");
  b.items[0].word_bytes = 4;
  b.items[0].words = 0;
  CHECK(std::string(batch(&b, 0)) == "an empty tensor in a batch");
  int devices = 0;
  using CountFn = int (*)(int*);
  const auto count = reinterpret_cast<CountFn>(dlsym(RTLD_DEFAULT, "cudaGetDeviceCount"));
  if (count == nullptr || count(&devices) != 0 || devices == 0) {
    const char* why_not = fn(nullptr, 0, 4, 0, nullptr, 0);
    REQUIRE(why_not != nullptr);
    const std::string answer = std::string("without a GPU the kernel answers: ") + why_not;
    MESSAGE(answer);
    b.items[0].words = 1;
    b.items[0].data = reinterpret_cast<const void*>(uintptr_t{16});
    CHECK(batch(&b, 0) != nullptr);  // a valid batch, but no device to run it: an answer, no crash
  }
}
#endif
