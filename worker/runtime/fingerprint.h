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

// The CUDA part: {"available": bool, "reason": ..., versions, "devices": [...]}. Without a CUDA
// build of torch it says so.
nlohmann::ordered_json cuda_fingerprint();

}  // namespace ra
