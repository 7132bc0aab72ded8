// SPDX-License-Identifier: Apache-2.0
#include "worker/train/checkpoint.h"

#include "worker/digest/digest.h"

#include <ATen/Context.h>
#include <ATen/core/grad_mode.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <ATen/record_function.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <fmt/format.h>

#include <algorithm>
#include <mutex>

namespace ra {
namespace {

// Every default generator: the CPU one, then each CUDA device's, as (report name, archive key, device).
struct GeneratorSlot {
  std::string name;
  std::string key;
  c10::Device device;
};

std::vector<GeneratorSlot> generator_slots() {
  std::vector<GeneratorSlot> slots = {{"generator/cpu", "generator/cpu", c10::Device(c10::kCPU)}};
  const auto& cuda = at::detail::getCUDAHooks();
  if (!cuda.hasCUDA()) return slots;
  for (int i = 0; i < cuda.deviceCount(); ++i)
    slots.push_back({fmt::format("generator/cuda:{}", i), fmt::format("generator/cuda_{}", i),
                     c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(i))});
  return slots;
}

at::Tensor generator_state(const c10::Device& device) {
  auto gen = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_generator_state(const c10::Device& device, const at::Tensor& state) {
  auto gen = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state.to(at::kCPU));
}

std::vector<at::Tensor> buffers_of(const torch::jit::Module& module) {
  std::vector<at::Tensor> out;
  for (const auto& b : module.named_buffers(true)) out.push_back(b.value);
  return out;
}

std::vector<at::Tensor> params_of(const torch::jit::Module& module) {
  std::vector<at::Tensor> out;
  for (const auto& p : module.named_parameters(true)) out.push_back(p.value);
  return out;
}

void write_tensors(torch::serialize::OutputArchive& archive, const std::string& kind,
                   const std::vector<at::Tensor>& ts) {
  archive.write(kind + "/size",
                at::scalar_tensor(static_cast<int64_t>(ts.size()), at::TensorOptions().dtype(at::kLong)),
                /*is_buffer=*/true);
  for (size_t i = 0; i < ts.size(); ++i)
    archive.write(fmt::format("{}/{}", kind, i), ts[i].detach(), /*is_buffer=*/true);
}

// Copies the archive's tensors into `targets`, which must match them in number, shape and dtype.
void read_tensors(torch::serialize::InputArchive& archive, const std::string& kind,
                  const std::vector<at::Tensor>& targets) {
  at::Tensor size;
  archive.read(kind + "/size", size, /*is_buffer=*/true);
  if (size.item<int64_t>() != static_cast<int64_t>(targets.size()))
    throw std::runtime_error(
        fmt::format("the checkpoint holds {} {}s, the model {}", size.item<int64_t>(), kind, targets.size()));
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < targets.size(); ++i) {
    at::Tensor t;
    archive.read(fmt::format("{}/{}", kind, i), t, /*is_buffer=*/true);
    if (t.sizes() != targets[i].sizes() || t.scalar_type() != targets[i].scalar_type())
      throw std::runtime_error(fmt::format("{} {} of the checkpoint does not fit the model", kind, i));
    targets[i].copy_(t);
  }
}

}  // namespace

CheckpointOmissions checkpoint_omissions(const std::vector<std::string>& omit) {
  const auto has = [&](const char* o) { return std::find(omit.begin(), omit.end(), o) != omit.end(); };
  return {has("rng"), has("optimizer")};
}

NamedTensors training_state(const torch::jit::Module& module, const ModelOptimizer& optimizer) {
  NamedTensors out;
  for (const auto& p : module.named_parameters(true)) out.emplace_back("param/" + p.name, p.value.detach());
  for (const auto& b : module.named_buffers(true)) out.emplace_back("buffer/" + b.name, b.value);
  for (auto& [name, t] : optimizer.state()) out.emplace_back("optimizer/" + name, t);
  for (const auto& slot : generator_slots()) out.emplace_back(slot.name, generator_state(slot.device));
  return out;
}

std::vector<report::TensorDigest> training_state_digests(const torch::jit::Module& module,
                                                         const ModelOptimizer& optimizer) {
  at::RecordFunctionGuard not_traced(false);  // bookkeeping, not the model: `run --trace` leaves it out
  std::vector<report::TensorDigest> out;
  for (const auto& [name, t] : training_state(module, optimizer))
    out.push_back({name, dtype_name(t.scalar_type()), t.sizes().vec(), digest(t)});
  return out;
}

void save_checkpoint(const std::string& path, const torch::jit::Module& module, const ModelOptimizer& optimizer,
                     CheckpointOmissions omit) {
  torch::serialize::OutputArchive archive;
  write_tensors(archive, "param", params_of(module));
  write_tensors(archive, "buffer", buffers_of(module));
  if (!omit.optimizer) {
    torch::serialize::OutputArchive nested;
    optimizer.save(nested);
    archive.write("optimizer", nested);
  }
  if (!omit.generators)
    for (const auto& slot : generator_slots())
      archive.write(slot.key, generator_state(slot.device), /*is_buffer=*/true);
  archive.save_to(path);
}

void restore_checkpoint(const std::string& path, torch::jit::Module& module, ModelOptimizer& optimizer,
                        CheckpointOmissions omit, const c10::Device& device) {
  torch::serialize::InputArchive archive;
  archive.load_from(path, device);
  read_tensors(archive, "param", params_of(module));
  read_tensors(archive, "buffer", buffers_of(module));
  if (!omit.optimizer) {
    torch::serialize::InputArchive nested;
    archive.read("optimizer", nested);
    optimizer.load(nested);
  }
  if (!omit.generators)
    for (const auto& slot : generator_slots()) {
      at::Tensor state;
      archive.read(slot.key, state, /*is_buffer=*/true);
      set_generator_state(slot.device, state);
    }
}

}  // namespace ra
