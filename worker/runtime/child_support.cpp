// SPDX-License-Identifier: Apache-2.0
#include "worker/runtime/child_support.h"

#include "audit/common/errors.h"
#include "worker/digest/digest.h"
#include "worker/digest/tensor_stats.h"
#include "worker/runtime/library_error.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <ATen/record_function.h>
#include <torch/csrc/jit/codegen/fuser/interface.h>
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/csrc/jit/runtime/jit_exception.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <dlfcn.h>

namespace ra {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double ms_since_spawn() {
  const char* spawn = std::getenv("REPRO_AUDIT_SPAWN_NS");
  if (!spawn) return 0;
  return now_ms() - std::strtod(spawn, nullptr) / 1e6;
}

std::string error_text(const std::exception& e) {
  // What a TorchScript model raised: its class and its message, whole (a message of several lines, whose
  // last line alone once stood in the tool's error line as if the tool had said it; its line breaks are
  // escaped where it is printed), cut as a quoted value is.
  if (const auto* raised = dynamic_cast<const torch::jit::JITException*>(&e); raised && raised->getOriginalMsg())
    return excerpt(fmt::format("{}: {}", raised->getPythonClassName().value_or("Exception"), *raised->getOriginalMsg()),
                   kMaxRaised);
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10_error ? c10_error->what_without_backtrace() : e.what();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.rfind("The following operation failed in the TorchScript interpreter", 0) == 0) {
    const auto nl = text.rfind('\n');
    return nl == std::string::npos ? text : text.substr(nl + 1);
  }
  // LibTorch's zip errors go on about checkpoints after their first sentence; c10's own checks
  // invite an enhancement request.
  for (const char* tail : {". This is an internal miniz error", "  (Could this error message be improved?"})
    if (const auto cut = text.find(tail); cut != std::string::npos) text.resize(cut);
  const auto nl = text.find('\n');
  return nl == std::string::npos ? text : text.substr(0, nl);
}

std::optional<std::string> library_error_text(const std::exception& e, bool verbose) {
  const auto* c10 = dynamic_cast<const c10::Error*>(&e);
  if (!c10) return std::nullopt;
  return std::string(verbose ? c10->what() : c10->what_without_backtrace());
}

bool is_determinism_alert(const std::string& message) {
  return message.find("does not have a deterministic implementation") != std::string::npos;
}

void record_error(TrialResult& result, const std::exception& e) {
  result.status = report::TrialStatus::Error;
  if (const auto* input = dynamic_cast<const TrialInputError*>(&e)) {
    result.message = input->what();
    result.error_kind = input->kind;
  } else {
    result.message = error_text(e);
  }
}

void disable_jit_optimisations() {
  torch::jit::getProfilingMode() = false;
  torch::jit::getExecutorMode() = false;
  torch::jit::setGraphExecutorOptimize(false);
  torch::jit::overrideCanFuseOnCPU(false);
  torch::jit::overrideCanFuseOnGPU(false);
  torch::jit::setTensorExprFuserEnabled(false);
}

std::vector<void*> load_libraries(const std::vector<std::string>& paths) {
  std::vector<void*> handles;
  for (const auto& p : paths) {
    void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (h == nullptr) throw TrialInputError(fmt::format("cannot load library '{}': {}", p, dlerror()));
    handles.push_back(h);
  }
  return handles;
}

void seed_generators(uint64_t seed) {
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_current_seed(seed);
  }
  const auto& cuda = at::detail::getCUDAHooks();
  if (!cuda.hasCUDA()) return;
  for (int i = 0; i < cuda.deviceCount(); ++i) {
    auto gen = cuda.getDefaultGenerator(static_cast<c10::DeviceIndex>(i));
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_current_seed(seed);
  }
}

c10::Device checked_device(const Device& asked) {
  if (!asked.is_cuda()) return c10::Device(c10::kCPU);
  const std::string text = asked.to_string();
  const auto& cuda = at::detail::getCUDAHooks();
  if (!cuda.hasCUDA() || cuda.deviceCount() == 0)
    throw TrialInputError(fmt::format("--device {} was asked for, but this machine has no CUDA device", text), "usage");
  if (asked.index >= cuda.deviceCount())
    throw TrialInputError(
        fmt::format("--device {} was asked for, but this machine has {} CUDA device(s)", text, cuda.deviceCount()),
        "usage");
  if (asked.index < 0) return c10::Device(c10::kCUDA);
  const c10::Device device(c10::kCUDA, static_cast<c10::DeviceIndex>(asked.index));
  // Make cuda:N current, so that a model's own `.cuda()` or `device="cuda"` lands on N too. Through
  // c10's guard registry: CUDAHooks has no setCurrentDevice in torch 2.11 (it would throw).
  c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->setDevice(device);
  return device;
}

void synchronize(const c10::Device& device) {
  if (device.is_cuda()) at::detail::getCUDAHooks().deviceSynchronize(device.has_index() ? device.index() : 0);
}

namespace {

// A top-level record of the model's state before it runs (its weights, constants, attributes), not
// a result it computed.
bool model_state(const std::string& name) {
  for (const char* prefix : {"param/", "buffer/", "constant/", "attr/"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

void Recorder::add(const std::string& name, const at::Tensor& t) {
  if (!enabled_) return;
  at::RecordFunctionGuard not_traced(false);  // the tracer records the model, not the recorder
  tensors_.push_back({name, dtype_name(t.scalar_type()), t.sizes().vec(), digest(t)});
  const auto ref = reference_.find(name);
  if (dump_ && (ref == reference_.end() || ref->second != tensors_.back().digest) &&
      !(results_only_ && model_state(name))) {
    names_.push_back(name);
    // A copy, never the tensor itself: on the CPU, .to(kCPU) and .contiguous() give back the live
    // tensor, a parameter or buffer that the next optimizer step or forward changes in place, so
    // a dump held the last step's values under every step's name (issue 51).
    values_.push_back(t.detach().to(at::TensorOptions().device(at::kCPU), /*non_blocking=*/false, /*copy=*/true,
                                    at::MemoryFormat::Contiguous));
  }
  if (compare_ && (at::isFloatingType(t.scalar_type()) || t.is_complex()) && !model_state(name)) {
    const auto it = referee_.find(name);
    if (it == referee_.end()) {
      report::ReferenceError e;
      e.name = name;
      e.dtype = tensors_.back().dtype;
      e.numel = t.numel();
      e.note = referee_missing_;
      errors_.push_back(std::move(e));
    } else {
      errors_.push_back(reference_error(name, t, it->second));
      referee_.erase(it);
    }
  }
}

void Recorder::compare_with(std::map<std::string, at::Tensor> reference, std::string missing) {
  compare_ = true;
  referee_ = std::move(reference);
  referee_missing_ = std::move(missing);
}

std::string Recorder::write_dump(const std::string& path) const {
  if (!dump_) return "";
  c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
  for (size_t i = 0; i < names_.size(); ++i) dict.insert(names_[i], values_[i]);
  const std::vector<char> bytes = torch::jit::pickle_save(dict);
  errno = 0;
  std::FILE* out = std::fopen(path.c_str(), "wb");
  bool written = out != nullptr && std::fwrite(bytes.data(), 1, bytes.size(), out) == bytes.size();
  if (out != nullptr && std::fclose(out) != 0) written = false;  // a full disk often shows only here
  if (written) return "";
  const int error = errno;
  std::remove(path.c_str());
  const std::string why = error != 0 ? std::strerror(error) : "write failed";
  std::fprintf(stderr, "repro-audit: warning: cannot write the dump %s (%zu bytes): %s\n", path.c_str(), bytes.size(),
               why.c_str());
  return why;
}

}  // namespace ra
