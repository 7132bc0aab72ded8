// SPDX-License-Identifier: Apache-2.0
#include "audit/trial/config.h"

#include "audit/common/errors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
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

// The form of a snippet for `value`: the one labelled with it, else the last (config.h's SwitchInfo).
std::string form_for(std::string_view text, const std::string& value) {
  while (true) {
    const size_t bar = text.find(" | ");
    const std::string_view form = text.substr(0, bar);
    if (bar == std::string_view::npos) return std::string(form);
    if (form == value + ":") return "";
    if (form.substr(0, value.size() + 2) == value + ": ") return std::string(form.substr(value.size() + 2));
    text.remove_prefix(bar + 3);
  }
}

}  // namespace

std::span<const SwitchInfo> switch_table() {
  using enum SwitchKind;
  using enum Applied;
  using enum Affects;
  constexpr FixToggle none{};
  // clang-format off
  static const SwitchInfo table[] = {
      // key                        kind     applied      exec   affects run_fix                        invariance_fix               choices, env_var, help, when, cpp, python (config.h)
      {"cudnn.benchmark",           Bool,    Context,     false, Cuda,   {"off", false, true},          none,                        {}, "", "torch.backends.cudnn.benchmark", "", "at::globalContext().setBenchmarkCuDNN({on});", "torch.backends.cudnn.benchmark = {On}"},
      {"cudnn.deterministic",       Bool,    Context,     false, Cuda,   {"on", false, true},           none,                        {}, "", "torch.backends.cudnn.deterministic", "", "at::globalContext().setDeterministicCuDNN({on});", "torch.backends.cudnn.deterministic = {On}"},
      {"cudnn.enabled",             Bool,    Context,     false, Cuda,   {"off", false, true},          none,                        {}, "", "torch.backends.cudnn.enabled", "", "at::globalContext().setUserEnabledCuDNN({on});", "torch.backends.cudnn.enabled = {On}"},
      {"deterministic",             Choice,  Context,     false, Any,    {"on", true, true},            {"on", true, true},          {"off", "warn", "on"}, "", "torch.use_deterministic_algorithms (warn = warn_only=True)", "", "off: at::globalContext().setDeterministicAlgorithms(false, false); | warn: at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true); | at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);", "off: torch.use_deterministic_algorithms(False) | warn: torch.use_deterministic_algorithms(True, warn_only=True) | torch.use_deterministic_algorithms(True)"},
      {"fill_uninitialized_memory", Bool,    Context,     false, Any,    {"on", true, true},            none,                        {}, "", "torch.utils.deterministic.fill_uninitialized_memory", "", "at::globalContext().setDeterministicFillUninitializedMemory({on});", "torch.utils.deterministic.fill_uninitialized_memory = {On}"},
      {"cublas_workspace",          Choice,  Environment, false, Cuda,   {":4096:8", false, true},      {":16:8", false, true},      {"unset", ":4096:8", ":16:8"}, "CUBLAS_WORKSPACE_CONFIG", "CUBLAS_WORKSPACE_CONFIG", "before the first CUDA call"},
      {"tf32.cublas",               Bool,    Context,     false, Cuda,   {"off", false, true},          {"off", false, true},        {}, "", "TF32 in cuBLAS matmul (torch.backends.cuda.matmul.allow_tf32)", "", "at::globalContext().setFloat32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL, at::Float32Precision::{tf32});", "torch.backends.cuda.matmul.allow_tf32 = {On}"},
      {"tf32.cudnn",                Bool,    Context,     false, Cuda,   {"off", false, true},          {"off", false, true},        {}, "", "TF32 in cuDNN conv and RNN (torch.backends.cudnn.allow_tf32)", "", "for (auto op : {{at::Float32Op::CONV, at::Float32Op::RNN}}) at::globalContext().setFloat32Precision(at::Float32Backend::CUDA, op, at::Float32Precision::{tf32});", "torch.backends.cudnn.allow_tf32 = {On}"},
      {"threads",                   Threads, Context,     false, Cpu,    {"1", true, true},             {"1", true, true},           {}, "OMP_NUM_THREADS", "intra-op threads (torch.set_num_threads)", "", "at::set_num_threads({value});", "torch.set_num_threads({value})"},
      {"mkl_cbwr",                  Choice,  Environment, false, Cpu,    {"COMPATIBLE", true, false},   {"COMPATIBLE", true, false}, {"unset", "AUTO", "COMPATIBLE", "SSE4_2", "AVX2", "AVX512"}, "MKL_CBWR", "MKL conditional numerical reproducibility branch", "before torch is loaded"},
      // Scaled dot-product attention's fused backends. Deterministic mode switches flash and
      // memory-efficient attention to deterministic kernels, but not cuDNN attention: its backward
      // diverged under det on an H200 (docs/evidence/h200-2026-11-26), so only sdpa.cudnn=off fixes it.
      {"sdpa.cudnn",                Bool,    Context,     false, Cuda,   {"off", false, true},          none,                        {}, "", "cuDNN attention in scaled_dot_product_attention (torch.backends.cuda.enable_cudnn_sdp)", "", "at::globalContext().setSDPUseCuDNN({on});", "torch.backends.cuda.enable_cudnn_sdp({On})"},
      {"sdpa.flash",                Bool,    Context,     false, Any,    {"off", true, true},           none,                        {}, "", "flash attention in scaled_dot_product_attention (torch.backends.cuda.enable_flash_sdp)", "", "at::globalContext().setSDPUseFlash({on});", "torch.backends.cuda.enable_flash_sdp({On})"},
      {"sdpa.mem_efficient",        Bool,    Context,     false, Any,    {"off", false, true},          none,                        {}, "", "memory-efficient attention in scaled_dot_product_attention (torch.backends.cuda.enable_mem_efficient_sdp)", "", "at::globalContext().setSDPUseMemEfficient({on});", "torch.backends.cuda.enable_mem_efficient_sdp({On})"},
      // Reduced-precision reductions inside fp16 and bf16 cuBLAS GEMMs (split-K stays allowed):
      // reproducible run to run, but they change results with the problem's shape (batch size).
      {"cublas.fp16_reduction",     Bool,    Context,     false, Cuda,   none,                          {"off", false, true},        {}, "", "reduced-precision reductions in fp16 GEMMs (torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction)", "", "at::globalContext().setAllowFP16ReductionCuBLAS({on});", "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = {On}"},
      {"cublas.bf16_reduction",     Bool,    Context,     false, Cuda,   none,                          {"off", false, true},        {}, "", "reduced-precision reductions in bf16 GEMMs (torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction)", "", "at::globalContext().setAllowBF16ReductionCuBLAS({on});", "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = {On}"},
      {"tf32.override",             Choice,  Environment, true,  Cuda,   {"0", false, true},            none,                        {"unset", "0", "1"}, "NVIDIA_TF32_OVERRIDE", "NVIDIA_TF32_OVERRIDE (0: no TF32 in cuBLAS or cuDNN, whatever the program sets)", "before torch is loaded"},
      {"pythonhashseed",            Choice,  Environment, true,  Any,    {"0", true, true},             none,                        {"unset", "0", "random"}, "PYTHONHASHSEED", "Python's hash seed for str and bytes (set and dict iteration order)", "in the environment Python starts with (too late inside it)"},
      // torch.compile and Inductor (audit/exec/compile_switches.h applies them: environment variables,
      // and the start-up hook where Inductor has none), then NCCL's collectives, in every rank's environment.
      {"compile",                   Bool,    Compile,     true,  Any,    none,                          none,                        {}, "", "torch.compile (off: TORCH_COMPILE_DISABLE=1, torch.compile returns the eager function)", "", R"(on: unsetenv("TORCH_COMPILE_DISABLE");  // before torch is loaded | setenv("TORCH_COMPILE_DISABLE", "1", 1);  // before torch is loaded)", R"(on: os.environ.pop("TORCH_COMPILE_DISABLE", None)  # before torch is imported | os.environ["TORCH_COMPILE_DISABLE"] = "1"  # before torch is imported (or torch._dynamo.config.disable = True))"},
      {"inductor.deterministic",    Bool,    Compile,     true,  Any,    {"on", true, true},            none,                        {}, "", "Inductor's deterministic mode, no benchmarking that changes numerics (torch._inductor.config.deterministic)", "", R"(setenv("TORCHINDUCTOR_DETERMINISTIC", "{bit}", 1);  // before torch is loaded)", "torch._inductor.config.deterministic = {On}"},
      {"inductor.fallback_random",  Bool,    Compile,     true,  Any,    {"on", true, true},            none,                        {}, "", "compiled random ops draw what eager draws (torch._inductor.config.fallback_random)", "", "", "torch._inductor.config.fallback_random = {On}"},
      {"inductor.autotune",         Choice,  Compile,     true,  Any,    {"off", true, true},           none,                        {"unset", "off"}, "", "off: max-autotune and coordinate-descent tuning off, whatever torch.compile's mode asks", "", "", R"(torch._inductor.config.max_autotune = False; torch._inductor.config.coordinate_descent_tuning = False  # and no mode="max-autotune" in torch.compile)"},
      {"inductor.cache",            Choice,  Compile,     true,  Any,    {"warm", true, true},          none,                        {"unset", "cold", "warm"}, "", "Inductor's and Triton's caches: cold = a fresh folder per run, warm = one folder filled by an untimed warm-up run", "", "", R"(unset: | cold: os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp()  # a fresh cache: every run compiles | os.environ["TORCHINDUCTOR_CACHE_DIR"] = "/path/to/one/cache"  # shared, filled once)"},
      {"nccl.algo",                 Choice,  Environment, true,  Any,    {"Ring", false, true},         none,                        {"unset", "Ring", "Tree"}, "NCCL_ALGO", "NCCL's collective algorithm (NCCL_ALGO)", "before init_process_group, in every rank"},
      {"nccl.proto",                Choice,  Environment, true,  Any,    {"Simple", false, true},       none,                        {"unset", "Simple", "LL", "LL128"}, "NCCL_PROTO", "NCCL's protocol (NCCL_PROTO)", "before init_process_group, in every rank"},
      {"nccl.nvls",                 Choice,  Compile,     true,  Any,    {"off", false, true},          none,                        {"unset", "off"}, "", "NVLink SHARP in NCCL (off: NCCL_NVLS_ENABLE=0)", "", R"(off: setenv("NCCL_NVLS_ENABLE", "0", 1);  // before the process group is made | unsetenv("NCCL_NVLS_ENABLE");)", R"(off: os.environ["NCCL_NVLS_ENABLE"] = "0"  # before init_process_group, in every rank | os.environ.pop("NCCL_NVLS_ENABLE", None))"},
  };
  // clang-format on
  // A new switch: its row above, then its rows in the tables the recipe "A switch" in docs/ARCHITECTURE.md
  // names (the torch, hook, compile and selftest halves; unit tests check each against this one).
  static_assert(std::size(table) == 25, "a switch was added or removed: see the recipe in docs/ARCHITECTURE.md");
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
  const SwitchInfo* s = find_switch(key);
  if (s == nullptr) return {"", ""};
  if (s->applied == Applied::Environment) {
    if (value == "unset")
      return {fmt::format("unsetenv(\"{}\");  // {}", s->env_var, s->when),
              fmt::format("os.environ.pop(\"{}\", None)  # {}", s->env_var, s->when)};
    return {fmt::format("setenv(\"{}\", \"{}\", 1);  // {}", s->env_var, value, s->when),
            fmt::format("os.environ[\"{}\"] = \"{}\"  # {}", s->env_var, value, s->when)};
  }
  const bool on = value == "on";
  const auto fill = [&](const char* text) {
    return fmt::format(fmt::runtime(form_for(text, value)), fmt::arg("on", on ? "true" : "false"),
                       fmt::arg("On", on ? "True" : "False"), fmt::arg("bit", on ? 1 : 0),
                       fmt::arg("tf32", on ? "TF32" : "IEEE"), fmt::arg("value", value));
  };
  return {fill(s->cpp), fill(s->python)};
}

unsigned logical_cpu_count() { return std::max(1u, std::thread::hardware_concurrency()); }

}  // namespace ra
