// SPDX-License-Identifier: Apache-2.0
// The fingerprint's record of a CUDA device, from queries that may fail: what a GPU machine's
// report holds, checked on the CPU (the CUDA calls themselves sit in fingerprint_cuda.cpp).
#include "worker/runtime/fingerprint.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <stdlib.h>
#include <unistd.h>

namespace {

ra::CudaDeviceQueries working() {
  ra::CudaDeviceQueries q;
  q.name = [](int i) { return std::optional<std::string>(i == 0 ? "NVIDIA H100 80GB HBM3" : "NVIDIA A100"); };
  q.uuid = [](int i) {
    std::array<unsigned char, 16> id{};
    for (size_t k = 0; k < id.size(); ++k) id[k] = static_cast<unsigned char>(16 * i + k);
    return std::optional(id);
  };
  q.sm_count = [](int i) { return std::optional(i == 0 ? 132 : 108); };
  q.compute_capability = [](int i) { return std::optional(i == 0 ? std::pair{9, 0} : std::pair{8, 0}); };
  q.memory_bytes = [](int) { return std::optional<uint64_t>(uint64_t{85} << 30); };
  return q;
}

}  // namespace

TEST_CASE("cuda_device_record: every field from working queries") {
  const auto d = ra::cuda_device_record(1, working());
  CHECK(d["index"] == 1);
  CHECK(d["name"] == "NVIDIA A100");
  CHECK(d["uuid"] == "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
  CHECK(d["sm_count"] == 108);
  CHECK(d["compute_capability"] == "8.0");
  CHECK(d["memory_bytes"] == uint64_t{85} << 30);
}

TEST_CASE("cuda_device_record: a failing query leaves its field unknown, and the device is still listed") {
  // Before, a device whose properties could not be read was skipped: a CUDA 13 machine reported
  // "available" with no device at all, and a GPU change could never explain a difference.
  auto q = working();
  q.name = [](int) { return std::optional<std::string>(); };
  q.uuid = [](int) { return std::optional<std::array<unsigned char, 16>>(); };
  q.sm_count = [](int) { return std::optional<int>(); };
  const auto d = ra::cuda_device_record(0, q);
  CHECK(d["index"] == 0);
  CHECK(d["name"] == "unknown");
  CHECK(d["uuid"] == "unknown");
  CHECK(d["sm_count"].is_null());
  CHECK(d["compute_capability"] == "9.0");
}

TEST_CASE("nvidia_wheels: the nvidia-* wheels beside torch, by name, from their dist-info folders") {
  // The folder names pip writes for torch 2.11.0's CUDA wheels; a file or another package is not read.
  // mkdtemp and rm, not std::filesystem::remove_all: libtorch.so exports its own copy, which crashes
  // when a test binary's call binds to it.
  char templ[] = "/tmp/ra-wheels.XXXXXX";
  REQUIRE(::mkdtemp(templ) != nullptr);
  const std::filesystem::path dir = templ;
  for (const char* name :
       {"nvidia_cublas-13.1.0.3.dist-info", "nvidia_cudnn_cu13-9.19.0.56.dist-info",
        "nvidia_nccl_cu13-2.28.9.dist-info", "torch-2.11.0.dist-info", "nvidia", "nvidia_broken.dist-info"})
    std::filesystem::create_directories(dir / name);
  std::ofstream(dir / "nvidia_cufft-12.0.0.61.dist-info.txt") << "not a folder's name";
  const auto wheels = ra::nvidia_wheels(dir.string());
  CHECK(wheels.dump() == R"({"nvidia-cublas":"13.1.0.3","nvidia-cudnn-cu13":"9.19.0.56","nvidia-nccl-cu13":"2.28.9"})");
  CHECK(ra::nvidia_wheels((dir / "absent").string()).empty());  // a CPU-only or source-built torch
  CHECK(std::system(fmt::format("rm -rf '{}'", dir.string()).c_str()) == 0);
}
