// SPDX-License-Identifier: Apache-2.0
// The CUDA part of the fingerprint. The CUDA runtime, cuBLASLt and cuDNN are loaded by
// libtorch_cuda; we look their entry points up with dlsym instead of linking them, so the versions
// reported are those of the libraries torch actually uses, and a machine without a driver still
// gets a fingerprint that says why there is no GPU.
//
// Device properties come from calls whose signatures no CUDA release changes: integer attributes
// from cudaDeviceGetAttribute, and name, UUID and memory from the driver API (libcuda). Never a
// cudaDeviceProp filled by a runtime found with dlsym: its layout changed in CUDA 13.0, and
// libcudart.so.13 no longer exports cudaGetDeviceProperties_v2 (which CUDA 12 headers call), so
// such a lookup silently found nothing and listed no device at all.
#include "worker/runtime/fingerprint.h"

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <dlfcn.h>

#include <array>
#include <memory>
#include <optional>

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

// The driver API's entry points, from the libcuda the runtime has loaded (privately, so not
// through RTLD_DEFAULT). CUresult is an int-sized enum; 0 is success. CUdevice is an int.
struct Driver {
  using GetFn = int (*)(int*, int);
  using NameFn = int (*)(char*, int, int);
  using UuidFn = int (*)(std::array<unsigned char, 16>*, int);
  using MemFn = int (*)(size_t*, int);
  GetFn get = nullptr;
  NameFn name = nullptr;
  UuidFn uuid = nullptr;
  MemFn memory = nullptr;

  Driver() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return;
    get = reinterpret_cast<GetFn>(dlsym(lib, "cuDeviceGet"));
    name = reinterpret_cast<NameFn>(dlsym(lib, "cuDeviceGetName"));
    uuid = reinterpret_cast<UuidFn>(dlsym(lib, "cuDeviceGetUuid_v2"));
    if (uuid == nullptr) uuid = reinterpret_cast<UuidFn>(dlsym(lib, "cuDeviceGetUuid"));
    memory = reinterpret_cast<MemFn>(dlsym(lib, "cuDeviceTotalMem_v2"));
  }
  std::optional<int> device(int ordinal) const {
    int d = 0;
    if (get == nullptr || get(&d, ordinal) != 0) return std::nullopt;
    return d;
  }
};

CudaDeviceQueries cuda_queries() {
  using AttrFn = cudaError_t (*)(int*, cudaDeviceAttr, int);
  const auto attribute_fn = lookup<AttrFn>("cudaDeviceGetAttribute");
  auto attribute = [attribute_fn](int device, cudaDeviceAttr attr) -> std::optional<int> {
    int v = 0;
    if (attribute_fn == nullptr || attribute_fn(&v, attr, device) != cudaSuccess) return std::nullopt;
    return v;
  };
  auto driver = std::make_shared<Driver>();
  CudaDeviceQueries q;
  q.name = [driver](int i) -> std::optional<std::string> {
    const auto d = driver->device(i);
    char name[256] = {};
    if (!d || driver->name == nullptr || driver->name(name, sizeof name - 1, *d) != 0) return std::nullopt;
    return std::string(name);
  };
  q.uuid = [driver](int i) -> std::optional<std::array<unsigned char, 16>> {
    const auto d = driver->device(i);
    std::array<unsigned char, 16> id{};
    if (!d || driver->uuid == nullptr || driver->uuid(&id, *d) != 0) return std::nullopt;
    return id;
  };
  q.sm_count = [attribute](int i) { return attribute(i, cudaDevAttrMultiProcessorCount); };
  q.compute_capability = [attribute](int i) -> std::optional<std::pair<int, int>> {
    const auto major = attribute(i, cudaDevAttrComputeCapabilityMajor);
    const auto minor = attribute(i, cudaDevAttrComputeCapabilityMinor);
    if (!major || !minor) return std::nullopt;
    return std::pair{*major, *minor};
  };
  q.memory_bytes = [driver](int i) -> std::optional<uint64_t> {
    const auto d = driver->device(i);
    size_t bytes = 0;
    if (!d || driver->memory == nullptr || driver->memory(&bytes, *d) != 0) return std::nullopt;
    return bytes;
  };
  return q;
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
    const CudaDeviceQueries queries = cuda_queries();
    for (int i = 0; i < count; ++i) devices.push_back(cuda_device_record(i, queries));
  }
  out["devices"] = devices;
  return out;
}

}  // namespace ra
