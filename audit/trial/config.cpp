// SPDX-License-Identifier: Apache-2.0
#include "audit/trial/config.h"

#include "audit/common/errors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

namespace ra {
namespace {

// eager and compiled-det are exec's (a Python program's torch.compile); a LibTorch trial ignores their switches.
const std::vector<std::string> kPresets = {"default",   "benchmark", "cudnn-det", "det-warn", "det",         "strict",
                                           "threads-1", "threads-N", "mkl-cbwr",  "eager",    "compiled-det"};

std::string canonical_bool(const std::string& key, const std::string& v) {
  if (v == "on" || v == "true" || v == "1") return "on";
  if (v == "off" || v == "false" || v == "0") return "off";
  throw UsageError(fmt::format("switch '{}' takes on or off, not '{}'", key, v));
}

std::string canonical_value(const SwitchInfo& s, const std::string& v, unsigned cpus) {
  switch (s.kind) {
    case SwitchKind::Bool:
      return canonical_bool(s.key, v);
    case SwitchKind::Choice:
      if (std::find(s.choices.begin(), s.choices.end(), v) == s.choices.end())
        throw UsageError(fmt::format("switch '{}' takes one of {}, not '{}'", s.key, fmt::join(s.choices, ", "), v));
      return v;
    case SwitchKind::Threads: {
      if (v == "N") return std::to_string(std::max(2u, cpus));
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 1 || n > 4096)
        throw UsageError(fmt::format("switch 'threads' takes a positive count or N, not '{}'", v));
      return std::to_string(n);
    }
  }
  return v;
}

std::map<std::string, std::string> preset_values(const std::string& name, unsigned cpus) {
  if (name == "default") return {};
  if (name == "benchmark") return {{"cudnn.benchmark", "on"}};
  if (name == "cudnn-det") return {{"cudnn.benchmark", "off"}, {"cudnn.deterministic", "on"}};
  if (name == "det-warn") return {{"deterministic", "warn"}, {"cublas_workspace", ":4096:8"}};
  if (name == "det") return {{"deterministic", "on"}, {"cudnn.benchmark", "off"}, {"cublas_workspace", ":4096:8"}};
  // strict turns cuDNN off, its attention included (cudnn.enabled does not reach SDPA's backend choice).
  if (name == "strict")
    return {{"deterministic", "on"},  {"cudnn.benchmark", "off"}, {"cublas_workspace", ":4096:8"},
            {"cudnn.enabled", "off"}, {"tf32.cublas", "off"},     {"tf32.cudnn", "off"},
            {"sdpa.cudnn", "off"}};
  if (name == "threads-1") return {{"threads", "1"}};
  if (name == "threads-N") return {{"threads", std::to_string(std::max(2u, cpus))}};
  if (name == "mkl-cbwr") return {{"mkl_cbwr", "COMPATIBLE"}};
  if (name == "eager") return {{"compile", "off"}};
  // Compiled, with every Inductor switch that changes bits run to run or against eager held still.
  if (name == "compiled-det")
    return {{"compile", "on"},
            {"inductor.deterministic", "on"},
            {"inductor.fallback_random", "on"},
            {"inductor.autotune", "off"}};
  throw UsageError(fmt::format("unknown configuration '{}' (presets: {}; or key=value, keys: {})", name,
                               fmt::join(kPresets, ", "), [] {
                                 std::vector<std::string> keys;
                                 for (const auto& s : switch_table()) keys.push_back(s.key);
                                 return fmt::format("{}", fmt::join(keys, ", "));
                               }()));
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos - start));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return out;
}

}  // namespace

const std::vector<SwitchInfo>& switch_table() {
  static const std::vector<SwitchInfo> table = {
      {"cudnn.benchmark",
       SwitchKind::Bool,
       {},
       "",
       "torch.backends.cudnn.benchmark",
       false,
       Affects::Cuda,
       {"off", false, true},
       {}},
      {"cudnn.deterministic",
       SwitchKind::Bool,
       {},
       "",
       "torch.backends.cudnn.deterministic",
       false,
       Affects::Cuda,
       {"on", false, true},
       {}},
      {"cudnn.enabled",
       SwitchKind::Bool,
       {},
       "",
       "torch.backends.cudnn.enabled",
       false,
       Affects::Cuda,
       {"off", false, true},
       {}},
      {"deterministic",
       SwitchKind::Choice,
       {"off", "warn", "on"},
       "",
       "torch.use_deterministic_algorithms (warn = warn_only=True)",
       false,
       Affects::Any,
       {"on", true, true},
       {"on", true, true}},
      {"fill_uninitialized_memory",
       SwitchKind::Bool,
       {},
       "",
       "torch.utils.deterministic.fill_uninitialized_memory",
       false,
       Affects::Any,
       {"on", true, true},
       {}},
      {"cublas_workspace",
       SwitchKind::Choice,
       {"unset", ":4096:8", ":16:8"},
       "CUBLAS_WORKSPACE_CONFIG",
       "CUBLAS_WORKSPACE_CONFIG",
       false,
       Affects::Cuda,
       {":4096:8", false, true},
       {":16:8", false, true}},
      {"tf32.cublas",
       SwitchKind::Bool,
       {},
       "",
       "TF32 in cuBLAS matmul (torch.backends.cuda.matmul.allow_tf32)",
       false,
       Affects::Cuda,
       {"off", false, true},
       {"off", false, true}},
      {"tf32.cudnn",
       SwitchKind::Bool,
       {},
       "",
       "TF32 in cuDNN conv and RNN (torch.backends.cudnn.allow_tf32)",
       false,
       Affects::Cuda,
       {"off", false, true},
       {"off", false, true}},
      {"threads",
       SwitchKind::Threads,
       {},
       "OMP_NUM_THREADS",
       "intra-op threads (torch.set_num_threads)",
       false,
       Affects::Cpu,
       {"1", true, true},
       {"1", true, true}},
      {"mkl_cbwr",
       SwitchKind::Choice,
       {"unset", "AUTO", "COMPATIBLE", "SSE4_2", "AVX2", "AVX512"},
       "MKL_CBWR",
       "MKL conditional numerical reproducibility branch",
       false,
       Affects::Cpu,
       {"COMPATIBLE", true, false},
       {"COMPATIBLE", true, false}},
      // Scaled dot-product attention's fused backends. Deterministic mode switches flash and
      // memory-efficient attention to deterministic kernels, but not cuDNN attention: its backward
      // diverged under det on an H200 (docs/evidence/h200-2026-11-26), so only sdpa.cudnn=off fixes it.
      {"sdpa.cudnn",
       SwitchKind::Bool,
       {},
       "",
       "cuDNN attention in scaled_dot_product_attention (torch.backends.cuda.enable_cudnn_sdp)",
       false,
       Affects::Cuda,
       {"off", false, true},
       {}},
      {"sdpa.flash",
       SwitchKind::Bool,
       {},
       "",
       "flash attention in scaled_dot_product_attention (torch.backends.cuda.enable_flash_sdp)",
       false,
       Affects::Any,
       {"off", true, true},
       {}},
      {"sdpa.mem_efficient",
       SwitchKind::Bool,
       {},
       "",
       "memory-efficient attention in scaled_dot_product_attention (torch.backends.cuda.enable_mem_efficient_sdp)",
       false,
       Affects::Any,
       {"off", false, true},
       {}},
      // Reduced-precision reductions inside fp16 and bf16 cuBLAS GEMMs (split-K stays allowed):
      // reproducible run to run, but they change results with the problem's shape (batch size).
      {"cublas.fp16_reduction",
       SwitchKind::Bool,
       {},
       "",
       "reduced-precision reductions in fp16 GEMMs "
       "(torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction)",
       false,
       Affects::Cuda,
       {},
       {"off", false, true}},
      {"cublas.bf16_reduction",
       SwitchKind::Bool,
       {},
       "",
       "reduced-precision reductions in bf16 GEMMs "
       "(torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction)",
       false,
       Affects::Cuda,
       {},
       {"off", false, true}},
      {"tf32.override",
       SwitchKind::Choice,
       {"unset", "0", "1"},
       "NVIDIA_TF32_OVERRIDE",
       "NVIDIA_TF32_OVERRIDE (0: no TF32 in cuBLAS or cuDNN, whatever the program sets)",
       true,
       Affects::Cuda,
       {"0", false, true},
       {}},
      {"pythonhashseed",
       SwitchKind::Choice,
       {"unset", "0", "random"},
       "PYTHONHASHSEED",
       "Python's hash seed for str and bytes (set and dict iteration order)",
       true,
       Affects::Any,
       {"0", true, true},
       {}},
      // torch.compile and Inductor (audit/exec/compile_switches.h applies them: environment variables,
      // and the start-up hook where Inductor has none), then NCCL's collectives, in every rank's environment.
      {"compile",
       SwitchKind::Bool,
       {},
       "",
       "torch.compile (off: TORCH_COMPILE_DISABLE=1, torch.compile returns the eager function)",
       true,
       Affects::Any,
       {},
       {}},
      {"inductor.deterministic",
       SwitchKind::Bool,
       {},
       "",
       "Inductor's deterministic mode, no benchmarking that changes numerics (torch._inductor.config.deterministic)",
       true,
       Affects::Any,
       {"on", true, true},
       {}},
      {"inductor.fallback_random",
       SwitchKind::Bool,
       {},
       "",
       "compiled random ops draw what eager draws (torch._inductor.config.fallback_random)",
       true,
       Affects::Any,
       {"on", true, true},
       {}},
      {"inductor.autotune",
       SwitchKind::Choice,
       {"unset", "off"},
       "",
       "off: max-autotune and coordinate-descent tuning off, whatever torch.compile's mode asks",
       true,
       Affects::Any,
       {"off", true, true},
       {}},
      {"inductor.cache",
       SwitchKind::Choice,
       {"unset", "cold", "warm"},
       "",
       "Inductor's and Triton's caches: cold = a fresh folder per run, warm = one folder filled by an untimed warm-up "
       "run",
       true,
       Affects::Any,
       {"warm", true, true},
       {}},
      {"nccl.algo",
       SwitchKind::Choice,
       {"unset", "Ring", "Tree"},
       "NCCL_ALGO",
       "NCCL's collective algorithm (NCCL_ALGO)",
       true,
       Affects::Any,
       {"Ring", false, true},
       {}},
      {"nccl.proto",
       SwitchKind::Choice,
       {"unset", "Simple", "LL", "LL128"},
       "NCCL_PROTO",
       "NCCL's protocol (NCCL_PROTO)",
       true,
       Affects::Any,
       {"Simple", false, true},
       {}},
      {"nccl.nvls",
       SwitchKind::Choice,
       {"unset", "off"},
       "",
       "NVLink SHARP in NCCL (off: NCCL_NVLS_ENABLE=0)",
       true,
       Affects::Any,
       {"off", false, true},
       {}},
  };
  return table;
}

const SwitchInfo* find_switch(const std::string& key) {
  for (const auto& s : switch_table())
    if (s.key == key) return &s;
  return nullptr;
}

const std::vector<std::string>& preset_names() { return kPresets; }

Config parse_config(const std::string& item, unsigned cpus) {
  if (item.empty()) throw UsageError("empty configuration name in --configs");
  Config config{item, {}};
  const auto parts = split(item, '+');
  std::map<std::string, std::string> given;  // the keys this item sets itself, with their values
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const size_t eq = part.find('=');
    if (eq == std::string::npos) {
      if (i != 0)
        throw UsageError(fmt::format(
            "in configuration '{}': only the first item may be a preset, '{}' is not key=value", item, part));
      config.values = preset_values(part, cpus);
      continue;
    }
    const std::string key = part.substr(0, eq);
    const SwitchInfo* s = find_switch(key);
    if (s == nullptr) {
      std::vector<std::string> keys;
      for (const auto& sw : switch_table()) keys.push_back(sw.key);
      throw UsageError(
          fmt::format("unknown switch '{}' in configuration '{}' (keys: {})", key, item, fmt::join(keys, ", ")));
    }
    // A preset's value may be overridden (det+threads=2), but a key the item itself sets twice
    // with two values leaves no one value to apply: which one the user meant is theirs to say.
    const std::string value = canonical_value(*s, part.substr(eq + 1), cpus);
    if (const auto [it, fresh] = given.emplace(key, value); !fresh && it->second != value)
      throw UsageError(fmt::format("in configuration '{}': switch '{}' is given twice, as {} and as {}: give it once",
                                   item, key, it->second, value));
    config.values[key] = value;
  }
  return config;
}

std::vector<Config> parse_configs(const std::vector<std::string>& args, unsigned cpus) {
  std::vector<Config> out;
  std::set<std::string> seen;
  for (const auto& arg : args)
    for (const auto& item : split(arg, ',')) {
      if (!seen.insert(item).second) throw UsageError(fmt::format("configuration '{}' is given twice", item));
      out.push_back(parse_config(item, cpus));
    }
  if (out.empty()) throw UsageError("--configs names no configuration");
  return out;
}

std::vector<std::string> default_config_names(const Device& device) {
  if (device.is_cuda()) return {"default", "det"};
  return {"default", "threads-1"};
}

std::map<std::string, std::optional<std::string>> config_environment(const Config& config) {
  std::map<std::string, std::optional<std::string>> env;
  for (const auto& [key, value] : config.values) {
    const SwitchInfo* s = find_switch(key);
    if (s == nullptr || s->env_var.empty()) continue;
    if (value == "unset")
      env[s->env_var] = std::nullopt;
    else
      env[s->env_var] = value;
    if (key == "threads") env["MKL_NUM_THREADS"] = value;
  }
  return env;
}

Snippet switch_snippet(const std::string& key, const std::string& value) {
  const bool on = value == "on";
  const char* cpp_bool = on ? "true" : "false";
  const char* py_bool = on ? "True" : "False";
  if (key == "cudnn.benchmark")
    return {fmt::format("at::globalContext().setBenchmarkCuDNN({});", cpp_bool),
            fmt::format("torch.backends.cudnn.benchmark = {}", py_bool)};
  if (key == "cudnn.deterministic")
    return {fmt::format("at::globalContext().setDeterministicCuDNN({});", cpp_bool),
            fmt::format("torch.backends.cudnn.deterministic = {}", py_bool)};
  if (key == "cudnn.enabled")
    return {fmt::format("at::globalContext().setUserEnabledCuDNN({});", cpp_bool),
            fmt::format("torch.backends.cudnn.enabled = {}", py_bool)};
  if (key == "deterministic") {
    if (value == "off")
      return {"at::globalContext().setDeterministicAlgorithms(false, false);",
              "torch.use_deterministic_algorithms(False)"};
    if (value == "warn")
      return {"at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);",
              "torch.use_deterministic_algorithms(True, warn_only=True)"};
    return {"at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);",
            "torch.use_deterministic_algorithms(True)"};
  }
  if (key == "fill_uninitialized_memory")
    return {fmt::format("at::globalContext().setDeterministicFillUninitializedMemory({});", cpp_bool),
            fmt::format("torch.utils.deterministic.fill_uninitialized_memory = {}", py_bool)};
  if (key == "tf32.cublas")
    return {fmt::format("at::globalContext().setFloat32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL, "
                        "at::Float32Precision::{});",
                        on ? "TF32" : "IEEE"),
            fmt::format("torch.backends.cuda.matmul.allow_tf32 = {}", py_bool)};
  if (key == "tf32.cudnn")
    return {
        fmt::format("for (auto op : {{at::Float32Op::CONV, at::Float32Op::RNN}}) "
                    "at::globalContext().setFloat32Precision(at::Float32Backend::CUDA, op, at::Float32Precision::{});",
                    on ? "TF32" : "IEEE"),
        fmt::format("torch.backends.cudnn.allow_tf32 = {}", py_bool)};
  if (key == "threads")
    return {fmt::format("at::set_num_threads({});", value), fmt::format("torch.set_num_threads({})", value)};
  if (key == "sdpa.cudnn")
    return {fmt::format("at::globalContext().setSDPUseCuDNN({});", cpp_bool),
            fmt::format("torch.backends.cuda.enable_cudnn_sdp({})", py_bool)};
  if (key == "sdpa.flash")
    return {fmt::format("at::globalContext().setSDPUseFlash({});", cpp_bool),
            fmt::format("torch.backends.cuda.enable_flash_sdp({})", py_bool)};
  if (key == "sdpa.mem_efficient")
    return {fmt::format("at::globalContext().setSDPUseMemEfficient({});", cpp_bool),
            fmt::format("torch.backends.cuda.enable_mem_efficient_sdp({})", py_bool)};
  if (key == "cublas.fp16_reduction")
    return {fmt::format("at::globalContext().setAllowFP16ReductionCuBLAS({});", cpp_bool),
            fmt::format("torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = {}", py_bool)};
  if (key == "cublas.bf16_reduction")
    return {fmt::format("at::globalContext().setAllowBF16ReductionCuBLAS({});", cpp_bool),
            fmt::format("torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = {}", py_bool)};
  if (key == "compile")
    return {on ? "unsetenv(\"TORCH_COMPILE_DISABLE\");  // before torch is loaded"
               : "setenv(\"TORCH_COMPILE_DISABLE\", \"1\", 1);  // before torch is loaded",
            on ? "os.environ.pop(\"TORCH_COMPILE_DISABLE\", None)  # before torch is imported"
               : "os.environ[\"TORCH_COMPILE_DISABLE\"] = \"1\"  # before torch is imported (or "
                 "torch._dynamo.config.disable = True)"};
  if (key == "inductor.deterministic")
    return {fmt::format("setenv(\"TORCHINDUCTOR_DETERMINISTIC\", \"{}\", 1);  // before torch is loaded", on ? 1 : 0),
            fmt::format("torch._inductor.config.deterministic = {}", py_bool)};
  if (key == "inductor.fallback_random")
    return {"", fmt::format("torch._inductor.config.fallback_random = {}", py_bool)};
  if (key == "inductor.autotune")
    return {"",
            "torch._inductor.config.max_autotune = False; torch._inductor.config.coordinate_descent_tuning = False  "
            "# and no mode=\"max-autotune\" in torch.compile"};
  if (key == "inductor.cache") {
    if (value == "unset") return {"", ""};
    return {"",
            value == "cold"
                ? "os.environ[\"TORCHINDUCTOR_CACHE_DIR\"] = tempfile.mkdtemp()  # a fresh cache: every run compiles"
                : "os.environ[\"TORCHINDUCTOR_CACHE_DIR\"] = \"/path/to/one/cache\"  # shared, filled once"};
  }
  if (key == "nccl.nvls")
    return value == "off"
               ? Snippet{"setenv(\"NCCL_NVLS_ENABLE\", \"0\", 1);  // before the process group is made",
                         "os.environ[\"NCCL_NVLS_ENABLE\"] = \"0\"  # before init_process_group, in every rank"}
               : Snippet{"unsetenv(\"NCCL_NVLS_ENABLE\");", "os.environ.pop(\"NCCL_NVLS_ENABLE\", None)"};
  const SwitchInfo* s = find_switch(key);
  if (s != nullptr && !s->env_var.empty()) {
    const char* when = key == "cublas_workspace"    ? "before the first CUDA call"
                       : key == "pythonhashseed"    ? "in the environment Python starts with (too late inside it)"
                       : key.rfind("nccl.", 0) == 0 ? "before init_process_group, in every rank"
                                                    : "before torch is loaded";
    if (value == "unset")
      return {fmt::format("unsetenv(\"{}\");  // {}", s->env_var, when),
              fmt::format("os.environ.pop(\"{}\", None)  # {}", s->env_var, when)};
    return {fmt::format("setenv(\"{}\", \"{}\", 1);  // {}", s->env_var, value, when),
            fmt::format("os.environ[\"{}\"] = \"{}\"  # {}", s->env_var, value, when)};
  }
  return {"", ""};
}

unsigned logical_cpu_count() { return std::max(1u, std::thread::hardware_concurrency()); }

}  // namespace ra
