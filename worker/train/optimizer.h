// SPDX-License-Identifier: Apache-2.0
// The optimizer of a train-mode trial: LibTorch's SGD or Adam over the model's floating-point
// parameters, taken from the TorchScript module. Only optimizer.cpp includes the torch/optim
// headers (slow to compile); the trial child (worker/child/trial_child.cpp) and the checkpoint code
// (worker/train/checkpoint.cpp) see this small interface.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace torch::jit {
struct Module;
}
namespace torch::optim {
class Optimizer;
}
namespace torch::serialize {
class InputArchive;
class OutputArchive;
}  // namespace torch::serialize

namespace ra {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

class ModelOptimizer {
 public:
  // Takes the module's floating-point parameters (recursively, in named_parameters order), makes
  // them require grad, and builds `name` ("sgd": no momentum or weight decay; "adam": PyTorch's
  // defaults) with learning rate `lr`. Throws TrialInputError when there is no such parameter.
  ModelOptimizer(const torch::jit::Module& module, const std::string& name, double lr);
  ~ModelOptimizer();
  ModelOptimizer(const ModelOptimizer&) = delete;
  ModelOptimizer& operator=(const ModelOptimizer&) = delete;

  const NamedTensors& params() const { return params_; }
  void zero_grad();  // sets every gradient to none
  void step();       // one update from the current gradients

  // The optimizer's state tensors in parameter order, named "PARAM/KEY" (Adam: step, exp_avg,
  // exp_avg_sq; SGD without momentum has none). A parameter that has not been stepped has none.
  NamedTensors state() const;
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);

 private:
  NamedTensors params_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace ra
