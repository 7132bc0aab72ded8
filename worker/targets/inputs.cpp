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

#include <limits>
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

// The end of the range integer input `k` is drawn from: --vocab, else the embedding's rows, else 10.
// An id past the embedding's rows, or past what the dtype holds, is refused in one line.
int64_t token_range(int64_t vocab, const InputHint& hint, size_t k, at::ScalarType type) {
  const std::string what =
      hint.name.empty() ? fmt::format("input {}", k + 1) : fmt::format("input {} ({})", k + 1, hint.name);
  if (vocab > 0 && hint.vocab > 0 && vocab > hint.vocab)
    throw TrialInputError(fmt::format("--vocab {}: {} indexes an embedding of {} rows, so ids from {} on are out of "
                                      "range: give --vocab {} or less",
                                      vocab, what, hint.vocab, hint.vocab, hint.vocab),
                          "usage");
  const int64_t high = vocab > 0 ? vocab : hint.vocab > 0 ? hint.vocab : 10;
  const int64_t most = type == at::kByte    ? 256
                       : type == at::kChar  ? 128
                       : type == at::kShort ? 32768
                       : type == at::kInt   ? (int64_t{1} << 31)
                                            : std::numeric_limits<int64_t>::max();
  if (high > most)
    throw TrialInputError(
        fmt::format("--vocab {}: {} is {}, which holds ids up to {}", high, what, dtype_name(type), most - 1), "usage");
  return high;
}

// The float64 referee's copy of an input (TrialSpec::precision): its floating tensors cast to
// float64 (complex to complex128), in tuples, lists and dicts alike; everything else as it is.
c10::IValue referee_input(const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) return v;
    if (at::isFloatingType(t.scalar_type())) return t.to(at::kDouble);
    if (at::isComplexType(t.scalar_type())) return t.to(at::kComplexDouble);
    return v;
  }
  if (v.isTuple()) {
    std::vector<c10::IValue> elems;
    for (const auto& e : v.toTupleRef().elements()) elems.push_back(referee_input(e));
    return c10::ivalue::Tuple::create(std::move(elems));
  }
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : v.toTensorVector()) out.push_back(referee_input(c10::IValue(t)).toTensor());
    return out;
  }
  if (v.isList()) {
    c10::impl::GenericList out(c10::AnyType::get());
    for (const auto& e : v.toListRef()) out.push_back(referee_input(e));
    return out;
  }
  if (v.isGenericDict()) {
    const c10::impl::GenericDict in = v.toGenericDict();
    c10::impl::GenericDict out(in.keyType(), in.valueType());
    for (const auto& kv : in) out.insert(kv.key(), referee_input(kv.value()));
    return out;
  }
  return v;
}

Inputs referee_inputs(const TrialSpec& spec, Inputs in) {
  if (spec.precision != "float64") return in;
  for (auto& a : in.args) a = referee_input(a);
  for (auto& [k, v] : in.kwargs) v = referee_input(v);
  return in;
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

void check_output(const c10::IValue& out) {
  NamedTensors flat;
  try {
    flatten_tensors(out, "output", flat, "the model's output");
  } catch (const InputError& e) {
    throw TrialInputError(
        fmt::format("{}: repro-audit compares the tensors a model returns; return a tensor, or a "
                    "tuple, list or dict of tensors",
                    e.what()));
  }
}

void record_value(Recorder& rec, const std::string& name, const c10::IValue& v) {
  NamedTensors flat;
  collect_tensors(v, name, flat, "the model's output");
  for (const auto& [n, t] : flat) rec.add(n, t);
}

Inputs load_inputs(const TrialSpec& spec, const c10::Device& device, const std::vector<InputHint>& hints) {
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
    return referee_inputs(spec, std::move(in));
  }
  // Synthetic inputs from their own generator, so they do not depend on the model's RNG use.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(spec.seed ^ 0x5eedull);
  for (size_t k = 0; k < spec.shapes.size(); ++k) {
    const ShapeSpec& shape = spec.shapes[k];
    const InputHint hint = k < hints.size() ? hints[k] : InputHint{};
    const at::ScalarType type = !shape.dtype.empty() ? scalar_type_of(shape.dtype) : hint.dtype.value_or(at::kFloat);
    at::Tensor t;
    std::string range;
    if (at::isFloatingType(type) || at::isComplexType(type)) {
      t = at::randn(shape.sizes, gen, at::TensorOptions().dtype(at::kFloat)).to(type);
    } else if (type == at::kBool) {
      t = at::randint(0, 2, shape.sizes, gen, at::TensorOptions().dtype(at::kLong)).to(at::kBool);
    } else {
      const int64_t high = token_range(spec.vocab, hint, k, type);
      t = at::randint(0, high, shape.sizes, gen, at::TensorOptions().dtype(type));
      if (spec.vocab > 0 || hint.vocab > 0) range = fmt::format(" in [0, {})", high);
    }
    in.descriptions.push_back(describe(t) + range);
    in.args.push_back(t.to(device));
  }
  return referee_inputs(spec, std::move(in));
}

std::string weights_identity(const NamedTensors& weights) {
  std::vector<WeightLine> lines;
  for (const auto& [name, t] : weights)
    lines.push_back({name, dtype_name(t.scalar_type()), t.sizes().vec(), digest(t)});
  return weights_digest(std::move(lines));
}

}  // namespace ra::targets
