// SPDX-License-Identifier: Apache-2.0
#include "worker/train/optimizer.h"

#include "worker/runtime/child_support.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <fmt/format.h>

namespace ra {

ModelOptimizer::ModelOptimizer(const torch::jit::Module& module, const std::string& name, double lr) {
  std::vector<at::Tensor> tensors;
  for (const auto& p : module.named_parameters(true))
    if (at::isFloatingType(p.value.scalar_type())) {
      p.value.requires_grad_(true);
      params_.emplace_back(p.name, p.value);
      tensors.push_back(p.value);
    }
  if (params_.empty()) throw TrialInputError("train mode needs a model with floating-point parameters");
  if (name == "adam")
    optimizer_ = std::make_unique<torch::optim::Adam>(tensors, torch::optim::AdamOptions(lr));
  else if (name == "sgd")
    optimizer_ = std::make_unique<torch::optim::SGD>(tensors, torch::optim::SGDOptions(lr));
  else
    throw TrialInputError(fmt::format("unknown optimizer '{}' (use sgd or adam)", name), "usage");
}

ModelOptimizer::~ModelOptimizer() = default;

void ModelOptimizer::zero_grad() { optimizer_->zero_grad(/*set_to_none=*/true); }

void ModelOptimizer::step() { optimizer_->step(); }

NamedTensors ModelOptimizer::state() const {
  NamedTensors out;
  const auto& states = optimizer_->state();
  for (const auto& [name, p] : params_) {
    const auto it = states.find(p.unsafeGetTensorImpl());
    if (it == states.end()) continue;
    const auto add = [&, &pname = name](const char* key, const at::Tensor& t) {
      if (t.defined()) out.emplace_back(fmt::format("{}/{}", pname, key), t);
    };
    if (const auto* adam = dynamic_cast<const torch::optim::AdamParamState*>(it->second.get())) {
      add("step", at::scalar_tensor(adam->step(), at::TensorOptions().dtype(at::kLong)));
      add("exp_avg", adam->exp_avg());
      add("exp_avg_sq", adam->exp_avg_sq());
      add("max_exp_avg_sq", adam->max_exp_avg_sq());
    } else if (const auto* sgd = dynamic_cast<const torch::optim::SGDParamState*>(it->second.get())) {
      add("momentum_buffer", sgd->momentum_buffer());
    }
  }
  return out;
}

void ModelOptimizer::save(torch::serialize::OutputArchive& archive) const { optimizer_->save(archive); }

void ModelOptimizer::load(torch::serialize::InputArchive& archive) { optimizer_->load(archive); }

}  // namespace ra
