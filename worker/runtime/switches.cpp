// SPDX-License-Identifier: Apache-2.0
#include "worker/runtime/switches.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <fmt/format.h>

#include <cstdlib>
#include <string>

namespace ra {
namespace {

std::string onoff(bool b) { return b ? "on" : "off"; }

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

// MKL reads MKL_CBWR when it initialises; without MKL the variable has no effect.
std::string mkl_cbwr_state() {
  const std::string v = env_or_unset("MKL_CBWR");
  return (v != "unset" && !at::hasMKL()) ? "no effect (torch built without MKL)" : v;
}

// TF32 through the legacy setters, which set the new per-op precision too: setting only the new one
// leaves the two disagreeing, and every float32 GEMM then throws under TunableOp.
void set_tf32_cudnn(at::Context& ctx, bool on) {
  ctx.setAllowTF32CuDNN(on);
  for (auto op : {at::Float32Op::CONV, at::Float32Op::RNN})
    ctx.setFloat32Precision(at::Float32Backend::CUDA, op, on ? at::Float32Precision::TF32 : at::Float32Precision::IEEE);
}

// The torch half of a row of switch_table (audit/trial/config.h), by its key: how the worker sets
// it (null for an environment switch, which the parent set before exec) and reads it back. Every
// in-process row (Applied::Context) has one; tests/unit/test_audit_switches.cpp checks each value.
struct TorchSwitch {
  const char* key;
  void (*set)(at::Context& ctx, const std::string& value);
  std::string (*get)(at::Context& ctx);
};

using Ctx = at::Context;
using Value = const std::string&;

// clang-format off
const TorchSwitch kTorchSwitches[] = {
    {"cudnn.benchmark",           [](Ctx& c, Value v) { c.setBenchmarkCuDNN(v == "on"); },                          [](Ctx& c) { return onoff(c.benchmarkCuDNN()); }},
    {"cudnn.deterministic",       [](Ctx& c, Value v) { c.setDeterministicCuDNN(v == "on"); },                      [](Ctx& c) { return onoff(c.deterministicCuDNN()); }},
    {"cudnn.enabled",             [](Ctx& c, Value v) { c.setUserEnabledCuDNN(v == "on"); },                        [](Ctx& c) { return onoff(c.userEnabledCuDNN()); }},
    {"deterministic",             [](Ctx& c, Value v) { c.setDeterministicAlgorithms(v != "off", v == "warn"); },  [](Ctx& c) -> std::string { return !c.deterministicAlgorithms() ? "off" : c.deterministicAlgorithmsWarnOnly() ? "warn" : "on"; }},
    {"fill_uninitialized_memory", [](Ctx& c, Value v) { c.setDeterministicFillUninitializedMemory(v == "on"); },    [](Ctx& c) { return onoff(c.deterministicFillUninitializedMemory()); }},
    {"tf32.cublas",               [](Ctx& c, Value v) { c.setAllowTF32CuBLAS(v == "on"); },                         [](Ctx&) { return tf32_cublas(); }},
    {"tf32.cudnn",                [](Ctx& c, Value v) { set_tf32_cudnn(c, v == "on"); },                            [](Ctx&) { return tf32_state(tf32(at::Float32Op::CONV) && tf32(at::Float32Op::RNN), false); }},
    {"threads",                   [](Ctx&, Value v) { at::set_num_threads(std::stoi(v)); },                         [](Ctx&) { return std::to_string(at::get_num_threads()); }},
    {"mkl_cbwr",                  nullptr,                                                                          [](Ctx&) { return mkl_cbwr_state(); }},
    {"sdpa.cudnn",                [](Ctx& c, Value v) { c.setSDPUseCuDNN(v == "on"); },                             [](Ctx& c) { return onoff(c.userEnabledCuDNNSDP()); }},
    {"sdpa.flash",                [](Ctx& c, Value v) { c.setSDPUseFlash(v == "on"); },                             [](Ctx& c) { return onoff(c.userEnabledFlashSDP()); }},
    {"sdpa.mem_efficient",        [](Ctx& c, Value v) { c.setSDPUseMemEfficient(v == "on"); },                      [](Ctx& c) { return onoff(c.userEnabledMemEfficientSDP()); }},
    {"cublas.fp16_reduction",     [](Ctx& c, Value v) { c.setAllowFP16ReductionCuBLAS(v == "on"); },                [](Ctx& c) { return reduction_state(c.allowFP16ReductionCuBLAS()); }},
    {"cublas.bf16_reduction",     [](Ctx& c, Value v) { c.setAllowBF16ReductionCuBLAS(v == "on"); },                [](Ctx& c) { return reduction_state(c.allowBF16ReductionCuBLAS()); }},
};
// clang-format on
static_assert(std::size(kTorchSwitches) == 14, "the in-process rows of switch_table, and mkl_cbwr's read-back");

const TorchSwitch* torch_switch(const std::string& key) {
  for (const auto& t : kTorchSwitches)
    if (key == t.key) return &t;
  return nullptr;
}

// The value in effect now: torch's own, or the environment's for a switch the parent set there.
std::string effective(const SwitchInfo& s) {
  if (const TorchSwitch* t = torch_switch(s.key)) return t->get(at::globalContext());
  return s.env_var.empty() ? "?" : env_or_unset(s.env_var.c_str());
}

}  // namespace

void apply_switches(const Config& config) {
  for (const auto& [key, value] : config.values) {
    const SwitchInfo* s = find_switch(key);
    if (s == nullptr || s->applied != Applied::Context) continue;  // the environment's were set before exec
    if (const TorchSwitch* t = torch_switch(key); t != nullptr && t->set != nullptr) t->set(at::globalContext(), value);
  }
}

std::vector<report::SwitchValue> read_switches(const Config& config) {
  std::vector<report::SwitchValue> out;
  for (const auto& s : switch_table()) {
    if (s.exec_only) continue;
    const auto it = config.values.find(s.key);
    out.push_back({s.key, it == config.values.end() ? "" : it->second, effective(s), ""});
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
