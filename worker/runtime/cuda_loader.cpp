// SPDX-License-Identifier: Apache-2.0
#include "worker/runtime/cuda_loader.h"

#include <ATen/Parallel.h>

#include <cstdlib>
#include <filesystem>

#include <dlfcn.h>

namespace ra {
namespace {

std::string g_error = "not loaded";  // "" once loaded

}  // namespace

std::string load_cuda() {
  if (g_error.empty()) return g_error;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&at::get_num_threads), &info) == 0 || info.dli_fname == nullptr) {
    g_error = "cannot locate libtorch_cpu.so";
    return g_error;
  }
  const auto path = std::filesystem::path(info.dli_fname).parent_path() / "libtorch_cuda.so";
  if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    const char* why = dlerror();
    g_error = why ? why : "dlopen failed";
    return g_error;
  }
  g_error.clear();
  return g_error;
}

bool cuda_loaded() { return g_error.empty(); }

namespace {
bool load_cuda_env_is(const char* value) {
  const char* v = std::getenv("REPRO_AUDIT_LOAD_CUDA");
  return v != nullptr && std::string(v) == value;
}
}  // namespace

bool cuda_forced_by_environment() { return load_cuda_env_is("1"); }
bool cuda_refused_by_environment() { return load_cuda_env_is("0"); }

std::string cuda_loader_line() {
  return g_error.empty() ? "CUDA half: loaded (libtorch_cuda.so)" : "CUDA half: not loaded (" + g_error + ")";
}

}  // namespace ra
