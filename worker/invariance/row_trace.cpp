// SPDX-License-Identifier: Apache-2.0
// See worker/invariance/row_trace.h.
#include "worker/invariance/row_trace.h"

#include "audit/invariance/invariance_trace.h"
#include "worker/trace/tracer.h"

#include <fmt/format.h>

#include <optional>

namespace ra::invariance {
namespace {

// Tensor digests a trace may hold (16 bytes each on the CPU, reserved up front).
constexpr uint64_t kCapacity = uint64_t{1} << 20;

trace::Trace traced(targets::Target& target, const std::vector<c10::IValue>& args, const c10::Device& device,
                    std::optional<trace::RowSlice> rows) {
  trace::Trace t;
  {
    trace::Tracer tracer(device, kCapacity, rows);
    (void)target.call(args);
    t = tracer.finish();
  }
  (void)target.annotate(t);
  return t;
}

}  // namespace

report::RowTrace not_traced(std::string why) {
  report::RowTrace out;
  out.outcome = "not-traced";
  out.message = std::move(why);
  return out;
}

report::RowTrace trace_row(targets::Target& target, const RowTraceCall& call, const c10::Device& device) {
  report::RowTrace out;
  if (target.tracing() != targets::Tracing::OpByOp)
    return not_traced(fmt::format("{} cannot be traced op by op: no op named", target.kind()));
  const trace::Trace alone = traced(target, call.alone, device, std::nullopt);
  const trace::Trace batched = traced(target, call.batch, device, trace::RowSlice{call.size, call.position});
  out = explain_row(alone, batched, call.size);
  out.size = call.size, out.anchor = call.anchor, out.position = call.position;
  if (alone.dropped > 0 || batched.dropped > 0)
    out.message += fmt::format(" (the trace was full: {} records dropped)", alone.dropped + batched.dropped);
  return out;
}

}  // namespace ra::invariance
