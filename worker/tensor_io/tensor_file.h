// SPDX-License-Identifier: Apache-2.0
// tensor_io/ (worker): reading tensor and pickle files, and `diff`.
// Tensors in `torch.save` files: reading the zip format that torch.save writes and flattening the
// value it holds (a tensor, or tuples, lists and string-keyed dicts of them, nested) into named
// tensors. Shared by the trial child (`--input` files, model outputs) and `repro-audit diff`.
#pragma once

#include "reports/diff_model.h"
#include "worker/tensor_io/model_file.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ra {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// Appends the tensors of `v` to `out`, named by their path below `name`: "input/0", "input/k";
// with an empty `name`, a top-level dict's entries are named by their keys ("layer1/0/weight") and
// a bare tensor gets "". Dict entries come in key order; None carries no bits and is skipped.
// Throws InputError naming `what` for anything else (a non-string key, an int, a string...), for
// nesting deeper than kMaxDepth, and for a value that names too many paths (shared containers).
void flatten_tensors(const c10::IValue& v, const std::string& name, NamedTensors& out, const std::string& what);

// A checkpoint's leaves: tensors, and plain values (int, float, bool, string, None) kept as they are.
using NamedLeaves = std::vector<std::pair<std::string, c10::IValue>>;

// flatten_tensors for checkpoints ({"model": ..., "optimizer": ..., "epoch": 3}): plain values are
// leaves too, compared by value, and int dict keys (an optimizer's per-parameter state) are named
// by their decimal. Same bounds and errors otherwise.
void flatten_leaves(const c10::IValue& v, const std::string& name, NamedLeaves& out, const std::string& what);

// The value at `key` below `v` ("model", "optimizer/state/0"): dict keys (strings, or ints by their
// decimal) and list or tuple indices, separated by '/'. InputError naming `what`, the missing part
// and what exists there.
c10::IValue select_key(const c10::IValue& v, const std::string& key, const std::string& what);

// Reads the torch.save file at `path` (zip format, as torch.save and torch::jit::pickle_save
// write it) with the checked reader (worker/tensor_io/python_pickle.h). Throws InputError naming the
// file when it is missing, unreadable, not such a file, or breaks one of that reader's checks.
c10::IValue load_torch_file(const std::string& path);

// load_torch_file + flatten_tensors with no prefix, sorted by name. Throws InputError naming the
// file when it holds no tensors, anything but tensors and containers of them, two tensors under
// one name, or tensors the digest cannot read (sparse, quantized).
NamedTensors load_tensor_file(const std::string& path);

// What `diff` compares in a file, by name: a TorchScript archive's parameters and buffers under
// their state-dict names ("0.weight"), a safetensors file's tensors, else a torch.save file's
// tensors and plain values (flatten_leaves), below `key` when one is given (torch.save only).
// InputError naming the file for anything it cannot read or compare (sparse, quantized).
std::map<std::string, c10::IValue> file_leaves(const std::string& path, const std::string& key = "");
// A plain leaf's type ("int", "float", "bool", "str", "None") and its exact text (floats in the
// shortest form that reads back as the same double, strings quoted).
std::string value_type(const c10::IValue& v);
std::string value_text(const c10::IValue& v);
// A leaf's dtype name (a tensor's, or value_type) and shape (empty for a plain value).
std::string type_of(const c10::IValue& v);
std::vector<int64_t> shape_of(const c10::IValue& v);
// One entry of `diff`: two leaves named `name` compared by digest (tensors) or exact value, with
// statistics (against `tolerance`, nullopt: each dtype's default) when tensor bits differ.
report::DiffEntry compare_leaves(const std::string& name, const c10::IValue& a, const c10::IValue& b,
                                 const std::optional<report::Tolerance>& tolerance);

}  // namespace ra
