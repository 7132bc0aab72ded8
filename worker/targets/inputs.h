// SPDX-License-Identifier: Apache-2.0
// A target's inputs: read from a torch.save file (a tensor, a tuple or list of them, or a dict of
// keyword arguments) or made from --shape specs with their own seeded generator, so that they do
// not depend on what the model draws. Shared by every kind of model target.
//
// A --shape without a dtype takes the one the model declares for that input (an export archive's
// signature says int64 for token ids), else float32. Integer inputs are drawn from [0, N): N is
// --vocab, else the rows of the embedding the input indexes where the graph shows one, else 10.
#pragma once

#include "audit/trial/trial_spec.h"
#include "worker/runtime/child_support.h"
#include "worker/tensor_io/tensor_file.h"

#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace ra::targets {

// What a target knows of one input before it is made (an export archive's signature).
struct InputHint {
  std::optional<at::ScalarType> dtype;  // as exported
  int64_t vocab = 0;                    // token ids: the rows of the embedding they index (0: none found)
  std::string name;                     // the input's name, for messages
};

struct Inputs {
  std::vector<c10::IValue> args;
  std::unordered_map<std::string, c10::IValue> kwargs;
  std::vector<std::string> descriptions;
};

// Reads or makes the spec's inputs on `device`; `hints`, by position, are the model's own words on
// the --shape inputs. For the float64 referee (TrialSpec::precision), the same inputs made the same
// way, then their floating tensors cast to float64. Throws TrialInputError.
Inputs load_inputs(const TrialSpec& spec, const c10::Device& device, const std::vector<InputHint>& hints = {});

// Flattens an IValue of tensors into (name, tensor) pairs (worker/tensor_io/tensor_file.h); throws
// TrialInputError for anything else. `what` names the value in messages.
void collect_tensors(const c10::IValue& v, const std::string& name, NamedTensors& out, const char* what);

// The loss a train-mode step differentiates, for every kind of model target: the output if it is a
// scalar, else the sum of every floating output's sum. Throws TrialInputError for an output without
// a floating tensor.
at::Tensor train_loss(const c10::IValue& out);

// The preflight's check of a model's output: tensors only (in tuples, lists and dicts; None is
// skipped). Anything else (an int, a string) is a property of the model, not a crash of a trial:
// TrialInputError naming where it sits, so the audit exits 3 before any trial runs.
void check_output(const c10::IValue& out);

// Flattens a model's output into named tensors ("output", "output/0", ...) and records each.
void record_value(Recorder& rec, const std::string& name, const c10::IValue& v);

// The digest of a model's weights by name ("param/fc.weight" ...): its part of the model's
// identity by content (audit/baseline/identity.h).
std::string weights_identity(const NamedTensors& weights);

}  // namespace ra::targets
