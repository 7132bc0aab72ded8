// SPDX-License-Identifier: Apache-2.0
// Both files are loaded whole on the CPU (torch.save files hold CPU or device tensors; the reader
// maps everything to the CPU here; TorchScript archives are loaded onto it) before anything is
// compared, so that bad input in either file
// is reported before a line of output. Equality is decided by the digest (worker/digest/digest.h), which
// sees every bit (-0.0, NaN payloads) and ignores strides; statistics, the costly part, are
// computed only for entries whose digests differ with the same dtype and shape.
#include "worker/diff/tensor_diff.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/common/paths.h"
#include "worker/digest/digest.h"
#include "worker/digest/tensor_stats.h"
#include "worker/runtime/child_support.h"
#include "worker/tensor_io/safetensors.h"
#include "worker/tensor_io/tensor_file.h"

#include <fmt/format.h>
#include <torch/script.h>

#include <cstring>
#include <map>

namespace ra {
namespace {

using report::DiffEntry;
using report::DiffStatus;

std::vector<int64_t> sizes_of(const at::Tensor& t) { return t.sizes().vec(); }

}  // namespace

std::map<std::string, c10::IValue> file_leaves(const std::string& path, const std::string& key) {
  std::map<std::string, c10::IValue> out;
  const std::string what = fmt::format("file '{}'", path);
  // Before any reader opens it: a FIFO would hold the open until a writer came.
  check_readable(path, "file");
  if (looks_like_safetensors(path)) {
    if (!key.empty())
      throw InputError(fmt::format("--key selects inside torch.save files; {} is a safetensors file", what));
    for (auto& [name, t] : load_safetensors(path)) out.emplace(name, std::move(t));
    if (out.empty()) throw InputError(fmt::format("{} is a safetensors file with no tensors", what));
    return out;
  }
  if (archive_kind(path) == ArchiveKind::TorchScript) {
    if (!key.empty())
      throw InputError(fmt::format("--key selects inside torch.save files; {} is a TorchScript archive", what));
    torch::jit::Module m;
    try {
      m = torch::jit::load(path, at::kCPU);
    } catch (const std::exception& e) {
      throw InputError(fmt::format("{} is a TorchScript archive that cannot be loaded: {}", what, error_text(e)));
    }
    for (const auto& p : m.named_parameters(true)) out.emplace(p.name, p.value.detach());
    for (const auto& b : m.named_buffers(true)) out.emplace(b.name, b.value.detach());
    if (out.empty()) throw InputError(fmt::format("{} is a TorchScript archive with no parameters or buffers", what));
    return out;
  }
  const c10::IValue root = load_torch_file(path);
  const c10::IValue value = key.empty() ? root : select_key(root, key, what);
  NamedLeaves leaves;
  flatten_leaves(value, "", leaves, what);
  if (leaves.empty())
    throw InputError(fmt::format("{} holds no tensors or values{}", what, key.empty() ? "" : " under '" + key + "'"));
  for (auto& [name, leaf] : leaves) {
    if (leaf.isTensor() && (leaf.toTensor().layout() != at::kStrided || leaf.toTensor().is_quantized()))
      throw InputError(fmt::format("{} holds a sparse or quantized tensor '{}', which cannot be compared", what, name));
    if (!out.emplace(name.empty() ? kBareTensorName : name, leaf).second)
      throw InputError(fmt::format("{} holds two entries named '{}'", what, name));
  }
  return out;
}

namespace {

// A plain value's type and its exact text: floats in the shortest form that reads back as the
// same double, strings quoted. Equality is by type and bits, so -0.0 and 0.0 differ and NaN equals itself.
}  // namespace

std::string value_type(const c10::IValue& v) {
  if (v.isInt()) return "int";
  if (v.isDouble()) return "float";
  if (v.isBool()) return "bool";
  if (v.isString()) return "str";
  return "None";
}

std::string value_text(const c10::IValue& v) {
  if (v.isInt()) return std::to_string(v.toInt());
  if (v.isDouble()) return fmt::format("{}", v.toDouble());  // the shortest text that reads back as the same double
  if (v.isBool()) return v.toBool() ? "True" : "False";
  if (v.isString()) return fmt::format("'{}'", v.toStringRef());
  return "None";
}

namespace {

bool same_value(const c10::IValue& a, const c10::IValue& b) {
  if (value_type(a) != value_type(b)) return false;
  if (a.isDouble()) {
    const double x = a.toDouble(), y = b.toDouble();
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
  return value_text(a) == value_text(b);
}

}  // namespace

std::string type_of(const c10::IValue& v) {
  return v.isTensor() ? dtype_name(v.toTensor().scalar_type()) : value_type(v);
}
std::vector<int64_t> shape_of(const c10::IValue& v) {
  return v.isTensor() ? sizes_of(v.toTensor()) : std::vector<int64_t>{};
}

DiffEntry compare_leaves(const std::string& name, const c10::IValue& a, const c10::IValue& b,
                         const std::optional<report::Tolerance>& tolerance) {
  DiffEntry e;
  e.name = name;
  e.dtype = type_of(a);
  e.shape = shape_of(a);
  if (!a.isTensor() || !b.isTensor()) {
    if (a.isTensor() != b.isTensor()) {
      e.status = DiffStatus::DtypeDiffers;
      e.dtype_b = type_of(b);
      e.shape_b = shape_of(b);
    } else if (!same_value(a, b)) {
      e.status = value_type(a) == value_type(b) ? DiffStatus::Differs : DiffStatus::DtypeDiffers;
      if (e.status == DiffStatus::DtypeDiffers) e.dtype_b = value_type(b);
    }
    if (!a.isTensor()) e.value_a = value_text(a);
    if (!b.isTensor()) e.value_b = value_text(b);
    return e;
  }
  const at::Tensor& ta = a.toTensor();
  const at::Tensor& tb = b.toTensor();
  e.digest_a = digest(ta);
  e.digest_b = digest(tb);
  if (ta.scalar_type() != tb.scalar_type() || ta.sizes() != tb.sizes()) {
    e.status = ta.scalar_type() != tb.scalar_type() ? DiffStatus::DtypeDiffers : DiffStatus::ShapeDiffers;
    e.dtype_b = dtype_name(tb.scalar_type());
    e.shape_b = sizes_of(tb);
  } else if (e.digest_a != e.digest_b) {
    e.status = DiffStatus::Differs;
    e.stats = tensor_difference(ta, tb, tolerance);
  }
  return e;
}

namespace {

DiffEntry only(const std::string& name, const c10::IValue& v, DiffStatus status) {
  DiffEntry e;
  e.name = name;
  e.status = status;
  e.dtype = type_of(v);
  e.shape = shape_of(v);
  if (v.isTensor())
    (status == DiffStatus::OnlyA ? e.digest_a : e.digest_b) = digest(v.toTensor());
  else
    (status == DiffStatus::OnlyA ? e.value_a : e.value_b) = value_text(v);
  return e;
}

}  // namespace

report::DiffReport diff_tensor_files(const std::string& a, const std::string& b, const std::string& key,
                                     const std::optional<report::Tolerance>& tolerance, bool tolerant) {
  const auto ta = file_leaves(a, key);
  const auto tb = file_leaves(b, key);
  report::DiffReport r;
  r.tool_version = tool_version();
  r.a = a;
  r.b = b;
  r.key = key;
  r.tolerance = tolerance;
  r.tolerant = tolerant;
  auto ia = ta.begin();
  auto ib = tb.begin();
  while (ia != ta.end() || ib != tb.end()) {
    if (ib == tb.end() || (ia != ta.end() && ia->first < ib->first)) {
      r.entries.push_back(only(ia->first, ia->second, DiffStatus::OnlyA));
      ++ia;
    } else if (ia == ta.end() || ib->first < ia->first) {
      r.entries.push_back(only(ib->first, ib->second, DiffStatus::OnlyB));
      ++ib;
    } else {
      r.entries.push_back(compare_leaves(ia->first, ia->second, ib->second, tolerance));
      ++ia;
      ++ib;
    }
  }
  r.exit_code = 0;
  for (const auto& e : r.entries) {
    const bool accepted = tolerant && e.status == DiffStatus::Differs && e.stats && report::within_tolerance(*e.stats);
    if (e.status != DiffStatus::Identical && !accepted) r.exit_code = 1;
  }
  return r;
}

}  // namespace ra
