// SPDX-License-Identifier: Apache-2.0
#include "worker/runtime/switches.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <fmt/format.h>

#include <cstdlib>
#include <string>

namespace ra {
namespace {

const char* onoff(bool b) { return b ? "on" : "off"; }

std::string env_or_unset(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string("unset");
}

bool tf32(at::Float32Op op) {
  return at::globalContext().float32Precision(at::Float32Backend::CUDA, op) == at::Float32Precision::TF32;
}

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string(v) == value;
}

// TF32 as the libraries will use it: torch's flag, unless an environment override wins over it.
// NVIDIA_TF32_OVERRIDE=0 turns TF32 off in cuBLAS and cuDNN whatever torch says;
// TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 turns it on for cuBLAS.
std::string tf32_state(bool flag, bool cublas) {
  if (env_is("NVIDIA_TF32_OVERRIDE", "0")) return flag ? "off (overridden by NVIDIA_TF32_OVERRIDE=0)" : "off";
  if (cublas && env_is("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "1"))
    return flag ? "on" : "on (overridden by TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1)";
  return onoff(flag);
}

// cuBLAS TF32 through both of torch's APIs: the legacy matmul precision and the new per-op one.
// Code that reads the legacy flag (TunableOp, allowTF32CuBLAS()) throws when the two disagree.
std::string tf32_cublas() {
  const bool now = tf32(at::Float32Op::MATMUL);
  try {
    const bool legacy = at::globalContext().float32MatmulPrecision() != at::Float32MatmulPrecision::HIGHEST;
    if (legacy != now) return fmt::format("mixed (legacy {}, new {})", onoff(legacy), onoff(now));
  } catch (const std::exception&) {
    return fmt::format("mixed (new {}, legacy inconsistent)", onoff(now));
  }
  return tf32_state(now, true);
}

// cuBLAS's reduced-precision reductions: on, off, or off with split-K refused too (what Python's
// `allow_fp16_reduced_precision_reduction = (False, False)` sets).
std::string reduction_state(at::CuBLASReductionOption option) {
  switch (option) {
    case at::CuBLASReductionOption::AllowReducedPrecisionWithSplitK:
      return "on";
    case at::CuBLASReductionOption::DisallowReducedPrecisionAllowSplitK:
      return "off";
    case at::CuBLASReductionOption::DisallowReducedPrecisionDisallowSplitK:
      return "off (split-K off too)";
  }
  return "?";
}

std::string effective(const std::string& key) {
  auto& ctx = at::globalContext();
  if (key == "cudnn.benchmark") return onoff(ctx.benchmarkCuDNN());
  if (key == "cudnn.deterministic") return onoff(ctx.deterministicCuDNN());
  if (key == "cudnn.enabled") return onoff(ctx.userEnabledCuDNN());
  if (key == "deterministic")
    return !ctx.deterministicAlgorithms() ? "off" : (ctx.deterministicAlgorithmsWarnOnly() ? "warn" : "on");
  if (key == "fill_uninitialized_memory") return onoff(ctx.deterministicFillUninitializedMemory());
  if (key == "cublas_workspace") return env_or_unset("CUBLAS_WORKSPACE_CONFIG");
  if (key == "tf32.cublas") return tf32_cublas();
  if (key == "tf32.cudnn") return tf32_state(tf32(at::Float32Op::CONV) && tf32(at::Float32Op::RNN), false);
  if (key == "threads") return std::to_string(at::get_num_threads());
  if (key == "sdpa.cudnn") return onoff(ctx.userEnabledCuDNNSDP());
  if (key == "sdpa.flash") return onoff(ctx.userEnabledFlashSDP());
  if (key == "sdpa.mem_efficient") return onoff(ctx.userEnabledMemEfficientSDP());
  if (key == "cublas.fp16_reduction") return reduction_state(ctx.allowFP16ReductionCuBLAS());
  if (key == "cublas.bf16_reduction") return reduction_state(ctx.allowBF16ReductionCuBLAS());
  if (key == "mkl_cbwr") {
    // MKL reads MKL_CBWR when it initialises; without MKL the variable has no effect.
    const std::string v = env_or_unset("MKL_CBWR");
    return (v != "unset" && !at::hasMKL()) ? "no effect (torch built without MKL)" : v;
  }
  return "?";
}

}  // namespace

void apply_switches(const Config& config) {
  auto& ctx = at::globalContext();
  for (const auto& [key, value] : config.values) {
    const bool on = value == "on";
    if (key == "cudnn.benchmark")
      ctx.setBenchmarkCuDNN(on);
    else if (key == "cudnn.deterministic")
      ctx.setDeterministicCuDNN(on);
    else if (key == "cudnn.enabled")
      ctx.setUserEnabledCuDNN(on);
    else if (key == "deterministic")
      ctx.setDeterministicAlgorithms(value != "off", value == "warn");
    else if (key == "fill_uninitialized_memory")
      ctx.setDeterministicFillUninitializedMemory(on);
    // TF32 through the legacy setters, which set the new per-op precision too: setting only the
    // new one leaves the two disagreeing, and every float32 GEMM then throws under TunableOp.
    else if (key == "tf32.cublas")
      ctx.setAllowTF32CuBLAS(on);
    else if (key == "tf32.cudnn") {
      ctx.setAllowTF32CuDNN(on);
      for (auto op : {at::Float32Op::CONV, at::Float32Op::RNN})
        ctx.setFloat32Precision(at::Float32Backend::CUDA, op,
                                on ? at::Float32Precision::TF32 : at::Float32Precision::IEEE);
    } else if (key == "threads")
      at::set_num_threads(std::stoi(value));
    else if (key == "sdpa.cudnn")
      ctx.setSDPUseCuDNN(on);
    else if (key == "sdpa.flash")
      ctx.setSDPUseFlash(on);
    else if (key == "sdpa.mem_efficient")
      ctx.setSDPUseMemEfficient(on);
    else if (key == "cublas.fp16_reduction")
      ctx.setAllowFP16ReductionCuBLAS(on);
    else if (key == "cublas.bf16_reduction")
      ctx.setAllowBF16ReductionCuBLAS(on);
    // cublas_workspace and mkl_cbwr are environment switches, set by the parent before exec.
  }
}

std::vector<report::SwitchValue> read_switches(const Config& config) {
  std::vector<report::SwitchValue> out;
  for (const auto& s : switch_table()) {
    if (s.exec_only) continue;
    const auto it = config.values.find(s.key);
    out.push_back({s.key, it == config.values.end() ? "" : it->second, effective(s.key), ""});
  }
  return out;
}

std::string switch_mismatches(const std::vector<report::SwitchValue>& switches) {
  std::string out;
  for (const auto& s : switches) {
    if (s.requested.empty() || s.requested == s.effective) continue;
    if (!out.empty()) out += "; ";
    out += fmt::format("switch '{}' asked for {} but {} is in effect", s.key, s.requested, s.effective);
  }
  return out;
}

}  // namespace ra
