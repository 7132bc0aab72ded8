// SPDX-License-Identifier: Apache-2.0
#include "audit/runtime/switches.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <fmt/format.h>

#include <cstdlib>

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

std::string effective(const std::string& key) {
  auto& ctx = at::globalContext();
  if (key == "cudnn.benchmark") return onoff(ctx.benchmarkCuDNN());
  if (key == "cudnn.deterministic") return onoff(ctx.deterministicCuDNN());
  if (key == "cudnn.enabled") return onoff(ctx.userEnabledCuDNN());
  if (key == "deterministic")
    return !ctx.deterministicAlgorithms() ? "off" : (ctx.deterministicAlgorithmsWarnOnly() ? "warn" : "on");
  if (key == "fill_uninitialized_memory") return onoff(ctx.deterministicFillUninitializedMemory());
  if (key == "cublas_workspace") return env_or_unset("CUBLAS_WORKSPACE_CONFIG");
  if (key == "tf32.cublas") return onoff(tf32(at::Float32Op::MATMUL));
  if (key == "tf32.cudnn") return onoff(tf32(at::Float32Op::CONV) && tf32(at::Float32Op::RNN));
  if (key == "threads") return std::to_string(at::get_num_threads());
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
    if (key == "cudnn.benchmark") ctx.setBenchmarkCuDNN(on);
    else if (key == "cudnn.deterministic") ctx.setDeterministicCuDNN(on);
    else if (key == "cudnn.enabled") ctx.setUserEnabledCuDNN(on);
    else if (key == "deterministic") ctx.setDeterministicAlgorithms(value != "off", value == "warn");
    else if (key == "fill_uninitialized_memory") ctx.setDeterministicFillUninitializedMemory(on);
    else if (key == "tf32.cublas")
      ctx.setFloat32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL,
                              on ? at::Float32Precision::TF32 : at::Float32Precision::IEEE);
    else if (key == "tf32.cudnn")
      for (auto op : {at::Float32Op::CONV, at::Float32Op::RNN})
        ctx.setFloat32Precision(at::Float32Backend::CUDA, op, on ? at::Float32Precision::TF32 : at::Float32Precision::IEEE);
    else if (key == "threads") at::set_num_threads(std::stoi(value));
    // cublas_workspace and mkl_cbwr are environment switches, set by the parent before exec.
  }
}

std::vector<report::SwitchValue> read_switches(const Config& config) {
  std::vector<report::SwitchValue> out;
  for (const auto& s : switch_table()) {
    const auto it = config.values.find(s.key);
    out.push_back({s.key, it == config.values.end() ? "" : it->second, effective(s.key)});
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
