// SPDX-License-Identifier: Apache-2.0
// The training state that restart-replay (audit/train/replay.h) checkpoints and restores, in one file
// written with torch::serialize::OutputArchive:
//   model/param/I, model/buffer/I   the module's parameters and buffers, by position
//                                   (named_parameters / named_buffers order, recursive);
//   optimizer                       the optimizer's own archive (ModelOptimizer::save);
//   generator/cpu, generator/cuda_N the state of the CPU generator and of every CUDA device's
//                                   default generator (at::Generator::get_state).
// The same state, as named tensors, is what the children digest: param/NAME, buffer/NAME,
// optimizer/PARAM/KEY, generator/cpu, generator/cuda:N, in that order (training_state).
#pragma once

#include "reports/core_model.h"
#include "worker/train/optimizer.h"

#include <c10/core/Device.h>

#include <string>
#include <vector>

namespace ra {

// What a checkpoint leaves out (`--replay-omit`), to see whether training depends on it. The
// checkpointing child does not save it and the resumed child does not restore it: the generators
// keep their freshly seeded state, the optimizer starts without state.
struct CheckpointOmissions {
  bool generators = false;  // "rng"
  bool optimizer = false;   // "optimizer"
};
CheckpointOmissions checkpoint_omissions(const std::vector<std::string>& omit);

// The training state as named tensors, in the fixed order above.
NamedTensors training_state(const torch::jit::Module& module, const ModelOptimizer& optimizer);
// Digests of training_state().
std::vector<report::TensorDigest> training_state_digests(const torch::jit::Module& module,
                                                         const ModelOptimizer& optimizer);

void save_checkpoint(const std::string& path, const torch::jit::Module& module, const ModelOptimizer& optimizer,
                     CheckpointOmissions omit);
// Restores what the checkpoint at `path` holds, except what `omit` names; tensors are loaded onto
// `device`. Throws when the checkpoint does not fit the model.
void restore_checkpoint(const std::string& path, torch::jit::Module& module, ModelOptimizer& optimizer,
                        CheckpointOmissions omit, const c10::Device& device);

}  // namespace ra
