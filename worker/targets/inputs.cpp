// SPDX-License-Identifier: Apache-2.0
#include "worker/targets/inputs.h"

#include "audit/baseline/identity.h"
#include "audit/common/errors.h"
#include "worker/digest/digest.h"
#include "worker/runtime/child_support.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

namespace ra::targets {
namespace {

at::ScalarType scalar_type_of(const std::string& name) {
  static const std::map<std::string, at::ScalarType> types = {
      {"float32", at::kFloat}, {"float64", at::kDouble}, {"float16", at::kHalf}, {"bfloat16", at::kBFloat16},
      {"int8", at::kChar},     {"uint8", at::kByte},     {"int16", at::kShort},  {"int32", at::kInt},
      {"int64", at::kLong},    {"bool", at::kBool}};
  return types.at(name);
}

std::string describe(const at::Tensor& t) {
  return fmt::format("{}[{}]", dtype_name(t.scalar_type()), fmt::join(t.sizes(), "x"));
}

}  // namespace

void collect_tensors(const c10::IValue& v, const std::string& name, NamedTensors& out, const char* what) {
  try {
    flatten_tensors(v, name, out, what);
  } catch (const InputError& e) {
    throw TrialInputError(e.what());
  }
}

at::Tensor train_loss(const c10::IValue& out) {
  NamedTensors flat;
  collect_tensors(out, "output", flat, "the model's output");
  if (flat.empty()) throw TrialInputError("train mode needs the model to return at least one tensor");
  if (flat.size() == 1 && flat[0].second.numel() == 1) return flat[0].second.reshape({});
  at::Tensor loss;
  for (const auto& [name, t] : flat) {
    if (!at::isFloatingType(t.scalar_type())) continue;
    loss = loss.defined() ? loss + t.sum() : t.sum();
  }
  if (!loss.defined()) throw TrialInputError("train mode needs a floating-point output to differentiate");
  return loss;
}

void record_value(Recorder& rec, const std::string& name, const c10::IValue& v) {
  NamedTensors flat;
  collect_tensors(v, name, flat, "the model's output");
  for (const auto& [n, t] : flat) rec.add(n, t);
}

Inputs load_inputs(const TrialSpec& spec, const c10::Device& device) {
  Inputs in;
  if (!spec.input_file.empty()) {
    c10::IValue value;
    try {
      value = load_torch_file(spec.input_file);
    } catch (const InputError& e) {
      throw TrialInputError(fmt::format("input {}", e.what()));
    }
    std::vector<std::pair<std::string, at::Tensor>> check;
    const std::string what = fmt::format("input file '{}'", spec.input_file);
    collect_tensors(value, "input", check, what.c_str());
    if (check.empty()) throw TrialInputError(fmt::format("{} holds no tensors", what));
    if (value.isTensor()) {
      in.args.push_back(value.toTensor().to(device));
    } else if (value.isTuple() || value.isList()) {
      const auto elems = value.isTuple() ? value.toTupleRef().elements().vec() : value.toListRef().vec();
      for (const auto& e : elems) in.args.push_back(e.isTensor() ? c10::IValue(e.toTensor().to(device)) : e);
    } else if (value.isGenericDict()) {
      for (const auto& kv : value.toGenericDict())
        in.kwargs[kv.key().toStringRef()] =
            kv.value().isTensor() ? c10::IValue(kv.value().toTensor().to(device)) : kv.value();
    } else {
      throw TrialInputError(
          fmt::format("{} holds a {}, not a tensor, tuple, list or dict of tensors", what, value.tagKind()));
    }
    for (const auto& [name, t] : check) in.descriptions.push_back(fmt::format("{}={}", name, describe(t)));
    return in;
  }
  // Synthetic inputs from their own generator, so they do not depend on the model's RNG use.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(spec.seed ^ 0x5eedull);
  for (const auto& shape : spec.shapes) {
    const at::ScalarType type = scalar_type_of(shape.dtype);
    at::Tensor t;
    if (at::isFloatingType(type))
      t = at::randn(shape.sizes, gen, at::TensorOptions().dtype(at::kFloat)).to(type);
    else if (type == at::kBool)
      t = at::randint(0, 2, shape.sizes, gen, at::TensorOptions().dtype(at::kLong)).to(at::kBool);
    else
      t = at::randint(0, 10, shape.sizes, gen, at::TensorOptions().dtype(type));
    in.descriptions.push_back(describe(t));
    in.args.push_back(t.to(device));
  }
  return in;
}

std::string weights_identity(const NamedTensors& weights) {
  std::vector<WeightLine> lines;
  for (const auto& [name, t] : weights)
    lines.push_back({name, dtype_name(t.scalar_type()), t.sizes().vec(), digest(t)});
  return weights_digest(std::move(lines));
}

}  // namespace ra::targets
