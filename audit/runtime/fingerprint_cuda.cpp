// SPDX-License-Identifier: Apache-2.0
// The CUDA part of the fingerprint. The CUDA runtime, cuBLASLt and cuDNN are loaded by
// libtorch_cuda; we look their entry points up with dlsym instead of linking them, so the versions
// reported are those of the libraries torch actually uses, and a machine without a driver still
// gets a fingerprint that says why there is no GPU.
#include "audit/runtime/fingerprint.h"

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <dlfcn.h>

namespace ra {
namespace {

template <typename Fn>
Fn lookup(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

std::string version3(long v) {  // 13000 -> "13.0"; 91900 -> "9.19.0" (cuDNN 9 scheme)
  if (v <= 0) return "unknown";
  if (v >= 90000) return fmt::format("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100);
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

std::string uuid_string(const cudaUUID_t& id) {
  std::string s = "GPU-";
  for (int i = 0; i < 16; ++i) {
    s += fmt::format("{:02x}", static_cast<unsigned char>(id.bytes[i]));
    if (i == 3 || i == 5 || i == 7 || i == 9) s += '-';
  }
  return s;
}

}  // namespace

nlohmann::ordered_json cuda_fingerprint() {
  using json = nlohmann::ordered_json;
  json out;
  const auto& hooks = at::detail::getCUDAHooks();
  out["available"] = false;
  out["compiled_cuda"] = version3(hooks.versionCUDART());
  out["compiled_cudnn"] = version3(hooks.versionCuDNN());

  using IntFn = cudaError_t (*)(int*);
  const auto runtime_version = lookup<IntFn>("cudaRuntimeGetVersion");
  const auto driver_version = lookup<IntFn>("cudaDriverGetVersion");
  const auto device_count = lookup<IntFn>("cudaGetDeviceCount");
  const auto properties = lookup<cudaError_t (*)(cudaDeviceProp*, int)>("cudaGetDeviceProperties_v2");
  const auto error_string = lookup<const char* (*)(cudaError_t)>("cudaGetErrorString");
  const auto cublaslt_version = lookup<size_t (*)()>("cublasLtGetVersion");
  const auto cudnn_version = lookup<size_t (*)()>("cudnnGetVersion");

  int v = 0;
  out["runtime"] = (runtime_version && runtime_version(&v) == cudaSuccess) ? version3(v) : "unknown";
  v = 0;
  out["driver"] = (driver_version && driver_version(&v) == cudaSuccess && v > 0) ? version3(v) : "none";
  out["cudnn"] = cudnn_version ? version3(static_cast<long>(cudnn_version())) : "not loaded";
  if (cublaslt_version) {
    const size_t c = cublaslt_version();  // e.g. 130100 -> 13.1.0
    out["cublas"] = fmt::format("{}.{}.{}", c / 10000, (c % 10000) / 100, c % 100);
  } else {
    out["cublas"] = "not loaded";
  }
  json devices = json::array();
  int count = 0;
  const cudaError_t err = device_count ? device_count(&count) : cudaErrorUnknown;
  if (err != cudaSuccess || count == 0) {
    out["reason"] = err != cudaSuccess && error_string ? fmt::format("no CUDA device: {}", error_string(err))
                                                       : std::string("no CUDA device");
  } else {
    out["available"] = true;
    out["reason"] = "";
    for (int i = 0; i < count; ++i) {
      cudaDeviceProp p{};
      if (!properties || properties(&p, i) != cudaSuccess) continue;
      devices.push_back({{"index", i},
                         {"name", p.name},
                         {"uuid", uuid_string(p.uuid)},
                         {"sm_count", p.multiProcessorCount},
                         {"compute_capability", fmt::format("{}.{}", p.major, p.minor)},
                         {"memory_bytes", p.totalGlobalMem}});
    }
  }
  out["devices"] = devices;
  return out;
}

}  // namespace ra
