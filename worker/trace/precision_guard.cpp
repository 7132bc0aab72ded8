// SPDX-License-Identifier: Apache-2.0
#include "worker/trace/precision_guard.h"

#include "worker/digest/digest.h"
#include "worker/trace/tracer.h"

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>

#include <fmt/format.h>

#include <mutex>
#include <optional>

namespace ra::trace {

// The first op that produced a floating tensor below float64, widened to the outermost op around it
// that did too (aten::to rather than the aten::_to_copy it calls), until an op around it ends clean.
struct PrecisionGuard::State {
  std::mutex mu;
  std::string first;
  int depth = 0;        // the op's nesting depth on its thread
  bool sealed = false;  // an op around `first` ended without a low-precision output
  at::CallbackHandle handle = 0;
};

namespace {

PrecisionGuard::State* g_guard = nullptr;

// The dtype of the first floating tensor in `v` below float64 (complex: below complex128), or none.
std::optional<at::ScalarType> below_float64(const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) return std::nullopt;
    const at::ScalarType s = t.scalar_type();
    if ((at::isFloatingType(s) && s != at::kDouble) || (at::isComplexType(s) && s != at::kComplexDouble)) return s;
    return std::nullopt;
  }
  if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector())
      if (auto s = below_float64(c10::IValue(t))) return s;
    return std::nullopt;
  }
  if (v.isList()) {
    for (const c10::IValue& e : v.toListRef())
      if (auto s = below_float64(e)) return s;
    return std::nullopt;
  }
  if (v.isTuple()) {
    for (const c10::IValue& e : v.toTupleRef().elements())
      if (auto s = below_float64(e)) return s;
  }
  return std::nullopt;
}

thread_local int t_depth = 0;  // ops open on this thread

std::unique_ptr<at::ObserverContext> on_guard_start(const at::RecordFunction&) {
  ++t_depth;
  return nullptr;
}

void on_guard_end(const at::RecordFunction& fn, at::ObserverContext*) {
  const int depth = t_depth--;
  PrecisionGuard::State* g = g_guard;
  if (g == nullptr) return;
  std::optional<at::ScalarType> low;
  for (const c10::IValue& out : fn.outputs())
    if ((low = below_float64(out))) break;
  std::lock_guard lock(g->mu);
  if (!low) {
    if (!g->first.empty() && depth < g->depth) g->sealed = true;
    return;
  }
  if (!g->first.empty() && (g->sealed || depth >= g->depth)) return;
  const OpLocation where = current_location();
  std::string place = where.source;
  if (!where.module.empty()) place = place.empty() ? where.module : fmt::format("{} in {}", place, where.module);
  g->first = fmt::format("not float64 throughout: {} produced {}{}", fn.name(), dtype_name(*low),
                         place.empty() ? "" : fmt::format(" ({})", place));
  g->depth = depth;
}

}  // namespace

PrecisionGuard::PrecisionGuard() : state_(std::make_unique<State>()) {
  TORCH_CHECK(g_guard == nullptr, "only one PrecisionGuard may watch at a time");
  g_guard = state_.get();
  state_->handle = at::addGlobalCallback(at::RecordFunctionCallback(on_guard_start, on_guard_end)
                                             .needsOutputs(true)
                                             .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
}

PrecisionGuard::~PrecisionGuard() {
  if (state_ && state_->handle != 0) at::removeCallback(state_->handle);
  if (g_guard == state_.get()) g_guard = nullptr;
}

std::string PrecisionGuard::first_below() const {
  std::lock_guard lock(state_->mu);
  return state_->first;
}

}  // namespace ra::trace
