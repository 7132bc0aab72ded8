// SPDX-License-Identifier: Apache-2.0
#include "audit/tensor_io/tensor_file.h"

#include "audit/runtime/child_support.h"
#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/tensor_io/python_pickle.h"


#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace ra {
namespace {

std::string child_name(const std::string& name, const std::string& part) {
  return name.empty() ? part : fmt::format("{}/{}", name, part);
}

}  // namespace

namespace {

// Bounds on what one value may flatten to: a file may share one container many times over (a
// tuple of two references to a tuple of two references...), which Python loads as a small graph
// but which names exponentially many paths.
constexpr int64_t kMaxVisits = int64_t{1} << 18;
constexpr int64_t kMaxNameBytes = int64_t{1} << 24;

struct Flattener {
  NamedTensors& out;
  const std::string& what;
  int64_t visits = 0;
  int64_t name_bytes = 0;

  void add(const c10::IValue& v, const std::string& name, int depth) {
    if (depth > kMaxDepth) throw InputError(fmt::format("{} nests containers deeper than {} levels", what, kMaxDepth));
    if (++visits > kMaxVisits || (name_bytes += static_cast<int64_t>(name.size())) > kMaxNameBytes)
      throw InputError(fmt::format("{} holds more than {} entries (or {} bytes of names), more than repro-audit reads",
                                   what, kMaxVisits, kMaxNameBytes));
    if (v.isTensor()) {
      out.emplace_back(name, v.toTensor());
    } else if (v.isTuple()) {
      const auto& elems = v.toTupleRef().elements();
      for (size_t i = 0; i < elems.size(); ++i) add(elems[i], child_name(name, std::to_string(i)), depth + 1);
    } else if (v.isList()) {
      const auto list = v.toListRef();
      for (size_t i = 0; i < list.size(); ++i) add(list[i], child_name(name, std::to_string(i)), depth + 1);
    } else if (v.isGenericDict()) {
      std::vector<std::pair<std::string, c10::IValue>> items;
      for (const auto& kv : v.toGenericDict()) {
        if (!kv.key().isString()) throw InputError(fmt::format("{} holds a dict with a non-string key", what));
        items.emplace_back(kv.key().toStringRef(), kv.value());
      }
      std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (const auto& [k, val] : items) add(val, child_name(name, k), depth + 1);
    } else if (v.isNone()) {
      // None carries no bits.
    } else {
      throw InputError(fmt::format("{} holds a {}, not tensors", what, v.tagKind()));
    }
  }
};

}  // namespace

void flatten_tensors(const c10::IValue& v, const std::string& name, NamedTensors& out, const std::string& what) {
  Flattener{out, what}.add(v, name, 0);
}

c10::IValue load_torch_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(fmt::format("file '{}' does not exist", path));
  if (std::filesystem::is_directory(path, ec)) throw InputError(fmt::format("file '{}' is a directory", path));
  // Never LibTorch's unpickler: it trusts the file (audit/tensor_io/python_pickle.h).
  return load_python_pickle_file(path);
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
