// SPDX-License-Identifier: Apache-2.0
#include "audit/tensor_io/tensor_file.h"

#include "audit/runtime/child_support.h"
#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/tensor_io/python_pickle.h"

#include <torch/csrc/jit/serialization/pickle.h>

#include <fmt/format.h>

#include <algorithm>

namespace ra {
namespace {

std::string child_name(const std::string& name, const std::string& part) {
  return name.empty() ? part : fmt::format("{}/{}", name, part);
}

}  // namespace

void flatten_tensors(const c10::IValue& v, const std::string& name, NamedTensors& out, const std::string& what) {
  if (v.isTensor()) {
    out.emplace_back(name, v.toTensor());
  } else if (v.isTuple()) {
    const auto& elems = v.toTupleRef().elements();
    for (size_t i = 0; i < elems.size(); ++i) flatten_tensors(elems[i], child_name(name, std::to_string(i)), out, what);
  } else if (v.isList()) {
    const auto list = v.toListRef();
    for (size_t i = 0; i < list.size(); ++i) flatten_tensors(list[i], child_name(name, std::to_string(i)), out, what);
  } else if (v.isGenericDict()) {
    std::vector<std::pair<std::string, c10::IValue>> items;
    for (const auto& kv : v.toGenericDict()) {
      if (!kv.key().isString()) throw InputError(fmt::format("{} holds a dict with a non-string key", what));
      items.emplace_back(kv.key().toStringRef(), kv.value());
    }
    std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [k, val] : items) flatten_tensors(val, child_name(name, k), out, what);
  } else if (v.isNone()) {
    // None carries no bits.
  } else {
    throw InputError(fmt::format("{} holds a {}, not tensors", what, v.tagKind()));
  }
}

c10::IValue load_torch_file(const std::string& path) {
  const std::string text = read_file(path, "file");
  const std::vector<char> bytes(text.begin(), text.end());
  try {
    return torch::jit::pickle_load(bytes);
  } catch (const std::exception&) {
    // LibTorch's unpickler reads only what LibTorch writes and a subset of Python's pickles: it
    // turns collections.OrderedDict into None, so Python's state_dict() files fail. Those are read
    // by our own interpreter of the subset torch.save writes (audit/tensor_io/python_pickle.h), whose error
    // names the first thing it cannot read.
    return load_python_pickle(path, text);
  }
}

NamedTensors load_tensor_file(const std::string& path) {
  const c10::IValue value = load_torch_file(path);
  const std::string what = fmt::format("file '{}'", path);
  NamedTensors out;
  flatten_tensors(value, "", out, what);
  if (out.empty()) throw InputError(fmt::format("{} holds no tensors", what));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < out.size(); ++i) {
    if (i > 0 && out[i].first == out[i - 1].first)
      throw InputError(fmt::format("{} holds two tensors named '{}'", what, out[i].first));
    const at::Tensor& t = out[i].second;
    if (t.layout() != at::kStrided || t.is_quantized())
      throw InputError(fmt::format("{} holds a sparse or quantized tensor '{}', which cannot be compared", what,
                                   out[i].first));
  }
  return out;
}

}  // namespace ra
