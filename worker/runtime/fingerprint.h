// SPDX-License-Identifier: Apache-2.0
// The environment fingerprint: everything that can change a model's bits besides the model, so
// that a report says where it was made and `compare` can tell an environment change from
// nondeterminism. Reading GPU properties initialises CUDA, so the audit parent never calls this
// itself: the preflight child does.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace ra {

// What the fingerprint asks about one CUDA device. Each query may fail (nullopt): the device is
// still listed, with "unknown" where a query failed, never skipped. The queries are separate from
// the CUDA calls (fingerprint_cuda.cpp) so that CPU tests check the record made from them.
struct CudaDeviceQueries {
  std::function<std::optional<std::string>(int)> name;
  std::function<std::optional<std::array<unsigned char, 16>>(int)> uuid;
  std::function<std::optional<int>(int)> sm_count;
  std::function<std::optional<std::pair<int, int>>(int)> compute_capability;
  std::function<std::optional<uint64_t>(int)> memory_bytes;
};
nlohmann::ordered_json cuda_device_record(int index, const CudaDeviceQueries& queries);

nlohmann::ordered_json environment_fingerprint();

// "" when the torch libraries this process loaded are the release it was built against; else one
// line naming both (from version.py beside the loaded libtorch_cpu.so): the worker then stops
// before it runs anything, rather than fail later with a symbol-lookup error or, worse, audit with
// kernels other than the report would name. A library folder without version.py (a LibTorch
// archive) is taken as matching.
std::string torch_library_mismatch();
// The check itself: `built` (TORCH_VERSION, "2.11.0") against a version.py's text.
std::string torch_version_mismatch(const std::string& built, const std::string& version_py, const std::string& where);

// The CUDA libraries that came as wheels beside torch (pip's nvidia-* packages: cuBLAS, cuDNN,
// NCCL, the CUDA runtime, ...), read from the names of the *.dist-info folders in `site_packages`
// without importing Python: {"nvidia-cublas": "13.1.0.3", "nvidia-cudnn-cu13": "9.19.0.56", ...},
// sorted by name. A patch level matters (a cuBLAS fix in 13.1.1 changed results), and the wheels
// are what a `pip install torch` upgrade changes. Empty for a CPU-only torch or a source build.
nlohmann::ordered_json nvidia_wheels(const std::string& site_packages);

// The CUDA part: {"available": bool, "reason": ..., versions, "devices": [...]}. Without a CUDA
// build of torch it says so.
nlohmann::ordered_json cuda_fingerprint();

}  // namespace ra
