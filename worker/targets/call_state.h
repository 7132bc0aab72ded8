// SPDX-License-Identifier: Apache-2.0
// What one call of a model may change besides its outputs, digested so that `run --calls K` can tell
// a forward that changes it (worker/child/trial_child.cpp). The problem: a model that writes into its
// input, a plain attribute (`self.n += 1`) or a buffer changes what its next call computes from, so
// later calls differ from call 1 for a reason that is not warm-up; only its parameters and buffers
// were digested, so such a model was called warm-up-dependent and --trace named no op. The approach:
// every target digests, by name, its parameters ("param/w"), buffers ("buffer/count"), constants
// ("constant/c"), plain attributes ("attr/n": numbers, strings, None, tensors and containers of them)
// and positional inputs ("input/x") in Target::state_digests; the child compares them around every
// call. The cost: the model's state and inputs digested once per call.
#pragma once

#include "worker/runtime/child_support.h"

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/api/module.h>

#include <string>
#include <vector>

namespace ra::targets {

// Records `v` under `name`: a tensor as itself, a number, bool, string or None as a small tensor of
// its value, a list, tuple or dict entry by entry ("name/0", "name/key"); objects are skipped.
void record_state_value(Recorder& rec, const std::string& name, const c10::IValue& v);

// Records the positional inputs as "input/<name>" (names[i], else the position).
void record_inputs(Recorder& rec, const std::vector<c10::IValue>& args, const std::vector<std::string>& names);

// Records a TorchScript module's plain attributes, recursively ("attr/block.n"): neither parameters,
// buffers nor submodules, which have names of their own.
void record_attributes(Recorder& rec, const torch::jit::Module& module);

// What changed between two digests of a call's state, as the report names it: "buffer 'count'",
// "parameter 'w'", "attribute 'n'", "input 'x'", "constant 'c'", sorted. With `caches_allowed`, plain
// attributes are left out: call 1 may fill a lazily built cache (self.table = ...), which is the warm-up
// `--calls` looks for, not a mutation.
std::vector<std::string> changed_state(const std::vector<report::TensorDigest>& before,
                                       const std::vector<report::TensorDigest>& after, bool caches_allowed);

}  // namespace ra::targets
