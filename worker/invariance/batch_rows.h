// SPDX-License-Identifier: Apache-2.0
// invariance_worker/ (worker): batch invariance measured inside one process. This header: the rows
// a batch is made of, and the model's timed call on them, which every axis's sweep makes. The input file's inputs are split by their batch dimension into anchor rows
// (the first R) and filler rows (the input's other rows, or seeded random rows of the same shape and
// dtype); a batch of any size is one index_select per input on the model's device, so building a
// batch never copies through the host.
#pragma once

#include "audit/invariance/invariance_protocol.h"
#include "worker/targets/inputs.h"
#include "worker/targets/target.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace ra::invariance {

struct BatchRows {
  std::vector<c10::IValue> whole;         // each input as loaded (the ones without a batch dim are passed as they are)
  std::vector<int64_t> dims;              // batch dim per input; -1: passed whole
  std::vector<at::Tensor> pools;          // per input with a batch dim: rows to select from (anchors first)
  int64_t count = 0;                      // rows in the input file
  int anchors = 0;                        // R
  std::vector<int64_t> fillers;           // pool rows that fill a batch, in order
  std::vector<std::string> descriptions;  // "input/0=float32[16x8] (batch dim 0)"
  std::vector<std::string> notes;
};

// Splits the loaded inputs as the request says, with filler for batches up to `max_size`. Throws
// TrialInputError: a dict of inputs, a batch dim an input lacks, inputs whose row counts disagree,
// no input with a batch dim, --rows larger than the input.
BatchRows split_rows(const InvarianceRequest& request, const targets::Inputs& in, int64_t max_size,
                     const c10::Device& device);

// --axis pad-right / pad-left (issue 41, item 6): the filler rows become padded copies of
// themselves, appended to the pools, so that the anchors (which may also fill) stay whole. Filler
// t keeps S-1-(t mod (S-1)) of its S tokens (S-1, S-2, …, 1, then again); on the padded side its
// attention_mask is 0, its input_ids 0 (when the model has that input), and its position_ids, when
// the model takes them, count from its first real token, as transformers' generate() makes them.
// `names` are the model's input names. Throws TrialInputError when no input is named
// attention_mask, or it is not [batch x sequence] with sequences of 2 or more.
void pad_fillers(BatchRows& b, const std::vector<std::string>& names, bool left);

// The model's arguments for a batch whose row j is pool row `rows[j]`.
std::vector<c10::IValue> make_batch(const BatchRows& b, const std::vector<int64_t>& rows, const c10::Device& device);

// The model's outputs for `args`, flattened by name. The call alone is timed, its device
// synchronised on both sides, and added to `forward_ms` and `calls`. The model's own exception goes
// to `failed`, which throws the sweep's error for it; a TrialInputError passes through as it is.
NamedTensors timed_call(targets::Target& target, const std::vector<c10::IValue>& args, const c10::Device& device,
                        double& forward_ms, int64_t& calls, const std::function<void(const std::exception&)>& failed);

}  // namespace ra::invariance
