// SPDX-License-Identifier: Apache-2.0
// See audit/invariance/invariance_trace.h for the design.
#include "audit/invariance/invariance_trace.h"

#include "audit/common/paths.h"
#include "audit/trace/trace_align.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <unordered_map>

namespace ra::invariance {
namespace {

using trace::Record;
using trace::TensorRef;
using trace::Trace;

// How a tensor of the batch-of-1 trace relates to its twin in the batch's trace.
enum class Relation { Same, Batch, Lost };

bool top(const Record& r) { return r.kind == "op" && r.parent < 0 && r.phase == "forward"; }

// What makes two records the same op at both sizes: the shapes without dim 0.
std::string key(const Record& r) {
  std::string k = r.op;
  for (const TensorRef& t : r.inputs) {
    k += fmt::format("|{}:{}", t.dtype, t.shape.size());
    for (size_t d = 1; d < t.shape.size(); ++d) k += fmt::format(",{}", t.shape[d]);
  }
  return k;
}

Relation relation(const TensorRef& a, const TensorRef& b, int64_t size) {
  if (a.dtype != b.dtype || a.shape.size() != b.shape.size()) return Relation::Lost;
  if (a.shape == b.shape) return Relation::Same;
  if (a.shape[0] == 1 && b.shape[0] == size && std::equal(a.shape.begin() + 1, a.shape.end(), b.shape.begin() + 1))
    return Relation::Batch;
  return Relation::Lost;
}

bool same_bits(const TensorRef& a, const TensorRef& b, Relation rel) {
  return rel == Relation::Batch ? a.digest == b.row_digest : a.digest == b.digest;
}

std::vector<std::string> described(const std::vector<TensorRef>& ts) {
  std::vector<std::string> out;
  for (const auto& t : ts) out.push_back(trace::describe(t));
  return out;
}

std::string where(const Record& r) {
  const std::string module = r.module.empty() ? "the model's top level" : r.module;
  return r.source.empty() ? module : fmt::format("{} ({})", module, r.source);
}

// What one aligned pair says: nothing yet, the cause, or where the batch is lost.
struct Verdict {
  std::string outcome;  // "" (go on), "found", "stopped"
  std::string why;      // stopped: how the batch was lost
};

Verdict judge(const Record& a, const Record& b, int64_t size) {
  bool batch_in = false, inputs_equal = true;
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    const Relation rel = relation(a.inputs[i], b.inputs[i], size);
    if (rel == Relation::Lost)
      return {"stopped", fmt::format("its input {} is {} alone but {} in the batch", i, trace::describe(a.inputs[i]),
                                     trace::describe(b.inputs[i]))};
    batch_in = batch_in || rel == Relation::Batch;
    inputs_equal = inputs_equal && same_bits(a.inputs[i], b.inputs[i], rel);
  }
  if (a.outputs.size() != b.outputs.size())
    return {"stopped",
            fmt::format("it returns {} tensors alone but {} in the batch", a.outputs.size(), b.outputs.size())};
  bool outputs_equal = true;
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    const Relation rel = relation(a.outputs[i], b.outputs[i], size);
    if (rel == Relation::Lost || (batch_in && rel == Relation::Same && !a.outputs[i].dtype.empty()))
      return {"stopped", fmt::format("it turns the batch into an output of {} alone and {} in the batch of {}, which "
                                     "does not keep the batch at dim 0",
                                     trace::describe(a.outputs[i]), trace::describe(b.outputs[i]), size)};
    outputs_equal = outputs_equal && same_bits(a.outputs[i], b.outputs[i], rel);
  }
  const bool garbage = trace::returns_uninitialised(a.op);  // bits of the allocator, written later
  return {inputs_equal && !outputs_equal && !garbage ? "found" : "", ""};
}

std::vector<size_t> top_records(const Trace& t) {
  std::vector<size_t> out;
  for (size_t i = 0; i < t.records.size(); ++i)
    if (top(t.records[i])) out.push_back(i);
  return out;
}

}  // namespace

report::RowTrace explain_row(const Trace& alone, const Trace& batched, int64_t size) {
  const std::vector<size_t> ia = top_records(alone), ib = top_records(batched);
  std::unordered_map<std::string, uint32_t> ids;
  const auto keys = [&](const Trace& t, const std::vector<size_t>& idx) {
    std::vector<uint32_t> k;
    for (size_t i : idx) k.push_back(ids.emplace(key(t.records[i]), static_cast<uint32_t>(ids.size())).first->second);
    return k;
  };
  const std::vector<uint32_t> ka = keys(alone, ia), kb = keys(batched, ib);
  const auto pairs = trace::align_sequences(ka, kb);
  report::RowTrace out;
  out.outcome = "none";
  for (const auto& [x, y] : pairs) {
    const Record& a = alone.records[ia[x]];
    const Record& b = batched.records[ib[y]];
    ++out.compared;
    const Verdict v = judge(a, b, size);
    if (v.outcome.empty()) continue;
    out.outcome = v.outcome;
    Record shown = a;  // its place in source as reports show it (audit/common/paths.h)
    shown.source = shown_source(traced_source(a.source), working_directory());
    out.op = a.op, out.module = a.module, out.source = shown.source;
    out.inputs = described(a.inputs), out.outputs = described(a.outputs);
    out.message =
        v.outcome == "found"
            ? fmt::format(
                  "{} at {} gives the anchor row other bits in a batch of {} than alone, from inputs whose "
                  "anchor rows matched",
                  a.op, where(shown), size)
            : fmt::format("batch dimension not followed past {} at {}: {}; the first difference is at or after it",
                          a.op, where(shown), v.why);
    return out;
  }
  out.message = fmt::format(
      "no traced op gave the anchor row other bits in a batch of {} than alone from matching inputs ({} of {} ops "
      "aligned); the difference lies in code the tracer does not see, or did not recur while traced",
      size, pairs.size(), std::max(ia.size(), ib.size()));
  return out;
}

}  // namespace ra::invariance
