// SPDX-License-Identifier: Apache-2.0
#include "worker/trace/op_referee.h"

#include "worker/digest/digest.h"
#include "worker/digest/tensor_stats.h"
#include "worker/runtime/child_support.h"
#include "worker/tensor_io/kept_read.h"
#include "worker/trace/tracer.h"

#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <ATen/TensorIndexing.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

namespace ra::trace {
namespace {

constexpr size_t kFirstWrittenTwice = 8;  // how many of the elements written more than once the report names

std::optional<Tracer::Call> read_call(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const c10::IValue v = torch::jit::pickle_load(bytes);
  const auto& t = v.toTupleRef().elements();
  if (t.size() != 3) return std::nullopt;
  Tracer::Call call{t[0].toStringRef(), t[1].toStringRef(), {}};
  for (const c10::IValue& a : t[2].toListRef()) call.arguments.push_back(a);
  return call;
}

// The op's name without its in-place mark: "aten::index_put_" and "aten::index_put" are one write.
std::string base_name(std::string name) {
  if (!name.empty() && name.back() == '_') name.pop_back();
  return name;
}

// Where each write of a non-accumulating index write lands (flat offsets into the written tensor) and
// the value it carries; nullopt for any other op, and for an accumulating one (its duplicates add up,
// which is reordering, not a race).
struct Writes {
  at::Tensor where, value;
};

std::optional<Writes> index_writes(const Tracer::Call& call) {
  const std::string op = base_name(call.name);
  const auto& args = call.arguments;
  const auto tensor = [&](size_t i) { return args.at(i).toTensor(); };
  const auto offsets = [](const at::Tensor& self) { return at::arange(self.numel(), at::kLong).view(self.sizes()); };
  if (op == "aten::index_put" || op == "aten::_index_put_impl") {
    if (args.size() < 4 || args[3].toBool()) return std::nullopt;
    c10::List<std::optional<at::Tensor>> indices;
    for (const c10::IValue& e : args[1].toListRef())
      indices.push_back(e.isNone() ? std::nullopt : std::optional<at::Tensor>(e.toTensor()));
    const at::Tensor where = offsets(tensor(0)).index(indices);
    return Writes{where, at::broadcast_to(tensor(2), where.sizes())};
  }
  if (op == "aten::index_copy" && args.size() >= 4) {
    const at::Tensor where = offsets(tensor(0)).index_select(args[1].toInt(), tensor(2));
    return Writes{where, at::broadcast_to(tensor(3), where.sizes())};
  }
  if (op == "aten::scatter" && (call.overload == "src" || call.overload == "value") && args.size() == 4) {
    const at::Tensor self = tensor(0), index = tensor(2);
    const at::Tensor where = offsets(self).gather(args[1].toInt(), index);
    if (call.overload == "value") return Writes{where, at::full(where.sizes(), args[3].toScalar(), self.options())};
    at::Tensor src = tensor(3);
    for (int64_t d = 0; d < index.dim(); ++d) src = src.narrow(d, 0, index.size(d));
    return Writes{where, src};
  }
  if (op == "aten::put" && args.size() >= 4 && !args[3].toBool()) {
    const at::Tensor self = tensor(0), index = tensor(1).reshape(-1);
    return Writes{at::where(index < 0, index + self.numel(), index), tensor(2).reshape(-1)};
  }
  return std::nullopt;
}

// A floating tensor's bits as integers of its width, so that equality is bitwise (NaN included).
at::Tensor bits(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kDouble:
      return t.view(at::kLong);
    case at::kFloat:
      return t.view(at::kInt);
    case at::kHalf:
    case at::kBFloat16:
      return t.view(at::kShort);
    default:
      return t;
  }
}

std::vector<int64_t> first_values(const at::Tensor& t, size_t n) {
  const at::Tensor head = t.slice(0, 0, static_cast<int64_t>(n)).contiguous();
  return {head.data_ptr<int64_t>(), head.data_ptr<int64_t>() + head.numel()};
}

// The elements written more than once, and whether every element that differs between `a` and `b`
// is one of them and holds, in both, one of the values written to it.
void race_facts(const Writes& w, const at::Tensor& a, const at::Tensor& b, OpClassAnswer& out) {
  out.index_write = true;
  const at::Tensor where = w.where.reshape(-1);
  const auto counted = at::unique_consecutive(std::get<0>(at::sort(where)), false, true);
  const at::Tensor twice = std::get<0>(counted).masked_select(std::get<2>(counted) > 1);
  out.written_twice = twice.numel();
  out.first_written_twice = first_values(twice, kFirstWrittenTwice);
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return;
  const at::Tensor fa = bits(a).reshape(-1), fb = bits(b).reshape(-1);
  const at::Tensor differing = (fa != fb).nonzero().reshape(-1);
  out.differing = differing.numel();
  if (out.differing == 0 || out.written_twice == 0 || !at::isin(differing, twice).all().item<bool>()) return;
  const at::Tensor landing = at::isin(where, differing);
  const at::Tensor to = where.masked_select(landing);
  const at::Tensor carried = bits(w.value.reshape(-1).to(a.scalar_type())).masked_select(landing);
  const auto holds = [&](const at::Tensor& flat) {
    const at::Tensor match = flat.index_select(0, to) == carried;
    const at::Tensor held = at::zeros({flat.numel()}, at::kBool).index_fill_(0, to.masked_select(match), true);
    return held.index_select(0, differing).all().item<bool>();
  };
  out.differing_hold_written_values = holds(fa) && holds(fb);
}

bool is_scalar_type(const c10::TypePtr& type) {
  if (!type) return false;
  if (type->kind() == c10::TypeKind::OptionalType)
    return type->expectRef<c10::OptionalType>().getElementType()->kind() == c10::TypeKind::ScalarTypeType;
  return type->kind() == c10::TypeKind::ScalarTypeType;
}

// An argument in float64: floating tensors cast, a floating dtype argument made float64, lists rebuilt
// with the element type the schema names (the pickle gives them none).
c10::IValue promoted(const c10::IValue& v, const c10::TypePtr& type) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) return v;
    if (t.is_floating_point()) return t.to(at::kDouble);
    if (t.is_complex()) return t.to(at::kComplexDouble);
    return t;
  }
  if (v.isList()) {
    c10::TypePtr element = v.toList().elementType();
    if (type && type->kind() == c10::TypeKind::ListType) element = type->expectRef<c10::ListType>().getElementType();
    c10::impl::GenericList out(element);
    for (const c10::IValue& e : v.toListRef()) out.push_back(promoted(e, element));
    return out;
  }
  if (v.isInt() && is_scalar_type(type)) {
    const auto st = static_cast<at::ScalarType>(v.toInt());
    if (at::isFloatingType(st)) return static_cast<int64_t>(at::kDouble);
    if (at::isComplexType(st)) return static_cast<int64_t>(at::kComplexDouble);
  }
  return v;
}

void flatten(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) {
    out.push_back(v.toTensor());
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector()) out.push_back(t);
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef())
      if (e.isTensor() || e.isNone()) out.push_back(e.isTensor() ? e.toTensor() : at::Tensor());
  } else if (v.isTuple()) {
    for (const c10::IValue& e : v.toTupleRef().elements()) flatten(e, out);
  }
}

// The op called once more on its arguments in float64, on the CPU, deterministic, on one thread: its
// outputs in the order the tracer captured them.
std::vector<at::Tensor> rerun_float64(const c10::OperatorHandle& op, const Tracer::Call& call) {
  const auto& schema = op.schema().arguments();
  torch::jit::Stack stack;
  for (size_t i = 0; i < call.arguments.size(); ++i)
    stack.push_back(promoted(call.arguments[i], i < schema.size() ? schema[i].type() : nullptr));
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);
  at::set_num_threads(1);
  at::NoGradGuard no_grad;
  op.callBoxed(stack);
  std::vector<at::Tensor> outputs;
  for (const c10::IValue& v : stack) flatten(v, outputs);
  return outputs;
}

void answer(const OpClassRequest& r, OpClassAnswer& out) {
  const std::string name = fmt::format("output/{}", r.output);
  std::string problem;
  const auto a = read_own_dump(r.dump_a, problem);
  const auto b = a ? read_own_dump(r.dump_b, problem) : std::nullopt;
  if (!a || !b || !a->count(name) || !b->count(name)) {
    out.note = fmt::format("the capture runs' outputs could not be read{}", problem.empty() ? "" : ": " + problem);
    return;
  }
  const at::Tensor& ta = a->at(name);
  const at::Tensor& tb = b->at(name);
  const std::optional<Tracer::Call> call = read_call(r.call);
  if (!call) {
    out.note = "the op's call was not kept (an argument torch cannot save)";
    return;
  }
  const auto op = c10::Dispatcher::singleton().findSchema({call->name, call->overload});
  if (!op) {
    out.note = fmt::format("{} is not an op the dispatcher knows here", call->name);
    return;
  }
  try {
    if (const auto writes = index_writes(*call)) race_facts(*writes, ta, tb, out);
  } catch (const std::exception&) {
    out.index_write = false;  // no claim of a race from arguments that could not be read as a write
  }
  if (!ta.is_floating_point()) {
    out.note =
        fmt::format("a {} output: compared bit for bit only, without error figures", dtype_name(ta.scalar_type()));
    return;
  }
  std::vector<at::Tensor> reference;
  try {
    reference = rerun_float64(*op, *call);
  } catch (const std::exception& e) {
    out.note = fmt::format("its float64 rerun raised: {}", error_text(e));
    return;
  }
  if (static_cast<size_t>(r.output) >= reference.size() || !reference[static_cast<size_t>(r.output)].defined()) {
    out.note = fmt::format("its float64 rerun gave no output {}", r.output);
    return;
  }
  out.a = reference_error(name, ta, reference[static_cast<size_t>(r.output)]);
  out.b = reference_error(name, tb, reference[static_cast<size_t>(r.output)]);
}

}  // namespace

void write_call(const std::string& path, const Tracer& tracer) {
  const Tracer::Call& call = tracer.captured_call();
  if (call.name.empty()) return;
  try {
    c10::impl::GenericList arguments(c10::AnyType::get());
    for (const c10::IValue& a : call.arguments) arguments.push_back(a);
    const std::vector<char> bytes =
        torch::jit::pickle_save(c10::ivalue::Tuple::create({call.name, call.overload, arguments}));
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) std::remove(path.c_str());
  } catch (const std::exception&) {
    std::remove(path.c_str());
  }
}

OpClassAnswer op_class(const OpClassRequest& request) {
  OpClassAnswer out;
  try {
    answer(request, out);
  } catch (const std::exception& e) {
    out = OpClassAnswer{};
    out.note = fmt::format("the op could not be examined: {}", error_text(e));
  }
  return out;
}

}  // namespace ra::trace
