// SPDX-License-Identifier: Apache-2.0
#include "worker/runtime/fingerprint.h"

#include "audit/common/paths.h"
#include "audit/common/torch_release.h"
#include "audit/trial/config.h"
#include "worker/runtime/switches.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <torch/version.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <dlfcn.h>
#include <sys/utsname.h>

namespace ra {
namespace {

// torch's git hash, from version.py of the torch package whose libtorch_cpu.so is loaded.
std::string torch_git_version() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&at::get_num_threads), &info) == 0 || info.dli_fname == nullptr) return "unknown";
  const auto version_py = std::filesystem::path(info.dli_fname).parent_path().parent_path() / "version.py";
  std::ifstream in(version_py);
  std::string line;
  const std::regex re(R"(git_version\s*=\s*'([0-9a-f]+)')");
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_search(line, m, re)) return m[1];
  return "unknown";
}

std::string torch_library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&at::get_num_threads), &info) == 0 || info.dli_fname == nullptr) return "";
  return std::filesystem::path(info.dli_fname).parent_path().string();
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

const char* kEnvVars[] = {"CUBLAS_WORKSPACE_CONFIG",
                          "MKL_CBWR",
                          "OMP_NUM_THREADS",
                          "MKL_NUM_THREADS",
                          "CUDA_VISIBLE_DEVICES",
                          "CUDA_LAUNCH_BLOCKING",
                          "CUDNN_LOGINFO_DBG",
                          "NVIDIA_TF32_OVERRIDE",
                          "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
                          "ATEN_CPU_CAPABILITY",
                          "PYTORCH_CUDA_ALLOC_CONF",
                          "KMP_DETERMINISTIC_REDUCTION"};

}  // namespace

std::string torch_version_mismatch(const std::string& built, const std::string& version_py, const std::string& where) {
  std::smatch m;
  static const std::regex re(R"(__version__\s*=\s*'([0-9][^'+]*))");
  if (!std::regex_search(version_py, m, re)) return "";
  const std::string loaded = m[1];
  if (loaded == built) return "";
  return fmt::format(
      "repro-audit was built against torch {} but loaded torch {} from {} (a moved or upgraded environment, or "
      "LD_LIBRARY_PATH naming another torch): rebuild against the torch you run (./dev build, or "
      "REPRO_AUDIT_PYTHON=... ./dev build), or run with the environment it was built against",
      built, loaded, where);
}

std::string torch_library_mismatch() {
  const std::string lib = torch_library_dir();
  if (lib.empty()) return "";
  // torch/lib/.. is torch/: through any link to the folder (a venv moved and linked back).
  std::error_code ec;
  const auto real = std::filesystem::canonical(lib, ec);
  std::ifstream in((ec ? std::filesystem::path(lib) : real).parent_path() / "version.py");
  if (!in) return "";
  std::stringstream text;
  text << in.rdbuf();
  return torch_version_mismatch(TORCH_VERSION, text.str(), lib);
}

nlohmann::ordered_json nvidia_wheels(const std::string& site_packages) {
  // "nvidia_cudnn_cu13-9.19.0.56.dist-info" -> "nvidia-cudnn-cu13": "9.19.0.56" (wheel names use
  // '_' where the distribution's name has '-'; the version has no '-').
  std::map<std::string, std::string> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(site_packages, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::string suffix = ".dist-info";
    if (name.rfind("nvidia", 0) != 0 || name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string stem = name.substr(0, name.size() - suffix.size());
    const size_t dash = stem.rfind('-');
    if (dash == std::string::npos || dash == 0 || dash + 1 == stem.size()) continue;
    std::string package = stem.substr(0, dash);
    std::replace(package.begin(), package.end(), '_', '-');
    found[package] = stem.substr(dash + 1);
  }
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [package, version] : found) out[package] = version;
  return out;
}

nlohmann::ordered_json environment_fingerprint() {
  using json = nlohmann::ordered_json;
  json env;
  env["tool"] = {{"version", tool_version()}, {"share_dir", share_dir()}};
  env["torch"] = {{"version", TORCH_VERSION},
                  {"git_version", torch_git_version()},
                  {"library_dir", torch_library_dir()},
                  {"cuda_compiled", at::detail::getCUDAHooks().versionCUDART() > 0}};
  // A release newer than the newest tested: one line, which `env` prints and every report shows.
  if (const std::string untested = untested_torch_line(TORCH_VERSION, self_executable()); !untested.empty())
    env["torch"]["untested"] = untested;
  env["cuda"] = cuda_fingerprint();
  // <site-packages>/torch/lib/libtorch_cpu.so: the wheels are <site-packages>/nvidia_*.dist-info.
  if (const std::string lib = torch_library_dir(); !lib.empty())
    env["cuda"]["wheels"] = nvidia_wheels(std::filesystem::path(lib).parent_path().parent_path().string());
  struct utsname u {};
  uname(&u);
  env["cpu"] = {{"model", cpu_model()},
                {"logical_cpus", logical_cpu_count()},
                {"aten_capability", at::get_cpu_capability()},
                {"machine", u.machine},
                {"kernel", std::string(u.sysname) + " " + u.release}};
  env["threads"] = {{"intra_op", at::get_num_threads()},
                    {"inter_op", at::get_num_interop_threads()},
                    {"openmp", at::hasOpenMP()},
                    {"mkl", at::hasMKL()},
                    {"mkldnn", at::hasMKLDNN()}};
  json vars = json::object();
  for (const char* name : kEnvVars) {
    const char* v = std::getenv(name);
    vars[name] = v ? json(v) : json(nullptr);
  }
  env["env_vars"] = vars;
  json switches = json::object();
  for (const auto& s : read_switches(Config{})) switches[s.key] = s.effective;
  env["switches"] = switches;
  return env;
}

nlohmann::ordered_json cuda_device_record(int index, const CudaDeviceQueries& q) {
  nlohmann::ordered_json d;
  d["index"] = index;
  const auto name = q.name(index);
  d["name"] = name ? *name : "unknown";
  std::string uuid = "unknown";
  if (const auto id = q.uuid(index)) {
    uuid = "GPU-";
    for (int i = 0; i < 16; ++i) {
      uuid += fmt::format("{:02x}", (*id)[static_cast<size_t>(i)]);
      if (i == 3 || i == 5 || i == 7 || i == 9) uuid += '-';
    }
  }
  d["uuid"] = uuid;
  const auto sms = q.sm_count(index);
  d["sm_count"] = sms ? nlohmann::ordered_json(*sms) : nlohmann::ordered_json(nullptr);
  const auto cc = q.compute_capability(index);
  d["compute_capability"] = cc ? fmt::format("{}.{}", cc->first, cc->second) : "unknown";
  const auto memory = q.memory_bytes(index);
  d["memory_bytes"] = memory ? nlohmann::ordered_json(*memory) : nlohmann::ordered_json(nullptr);
  return d;
}

#if !defined(RA_WITH_CUDA)
nlohmann::ordered_json cuda_fingerprint() {
  return {
      {"available", false}, {"reason", "torch was built without CUDA"}, {"devices", nlohmann::ordered_json::array()}};
}
#endif

}  // namespace ra
