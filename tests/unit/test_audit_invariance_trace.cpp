// SPDX-License-Identifier: Apache-2.0
// `invariance --trace`'s comparison on hand-made traces (audit/invariance/invariance_trace.h): the
// op named, the honest stop where the batch dimension is merged or reduced, and the JSON round trip.
#include "audit/invariance/invariance_trace.h"

#include <doctest/doctest.h>

namespace {

using ra::trace::Record;
using ra::trace::TensorRef;
using ra::trace::Trace;

// A float32 tensor; in the batch's trace `row` is its anchor row's digest.
TensorRef t(std::vector<int64_t> shape, std::string digest, std::string row = "") {
  return TensorRef{"float32", std::move(shape), std::move(digest), std::move(row)};
}

Record op(const char* name, const char* module, std::vector<TensorRef> in, std::vector<TensorRef> out) {
  Record r;
  r.op = name, r.kind = "op", r.phase = "forward", r.module = module, r.source = "model.py:7: y = f(x)";
  r.inputs = std::move(in), r.outputs = std::move(out);
  return r;
}

Trace of(std::vector<Record> records) {
  Trace tr;
  for (size_t i = 0; i < records.size(); ++i) records[i].order = i;
  tr.records = std::move(records);
  return tr;
}

// LayerNorm -> Linear -> ReLU alone and in a batch of 4 whose Linear gives the anchor row other
// bits; the Linear's weight has 4 rows, as many as the batch, and is compared whole.
Trace alone() {
  return of({op("aten::layer_norm", "norm", {t({1, 8}, "x"), t({8}, "g")}, {t({1, 8}, "n")}),
             op("aten::linear", "proj", {t({1, 8}, "n"), t({4, 8}, "w")}, {t({1, 4}, "y")}),
             op("aten::relu", "", {t({1, 4}, "y")}, {t({1, 4}, "r")})});
}

Trace batch(const std::string& linear_row) {
  return of({op("aten::layer_norm", "norm", {t({4, 8}, "X", "x"), t({8}, "g")}, {t({4, 8}, "N", "n")}),
             op("aten::linear", "proj", {t({4, 8}, "N", "n"), t({4, 8}, "w", "w0")}, {t({4, 4}, "Y", linear_row)}),
             op("aten::relu", "", {t({4, 4}, "Y", linear_row)}, {t({4, 4}, "R", linear_row == "y" ? "r" : "r'")})});
}

}  // namespace

TEST_CASE("invariance trace: the first op whose row differs from matching rows is named") {
  const auto r = ra::invariance::explain_row(alone(), batch("y'"), 4);
  CHECK(r.outcome == "found");
  CHECK(r.op == "aten::linear");
  CHECK(r.module == "proj");
  CHECK(r.source == "model.py:7: y = f(x)");
  CHECK(r.inputs == std::vector<std::string>{"float32[1x8]", "float32[4x8]"});
  CHECK(r.compared == 2);
  CHECK(r.message.find("aten::linear at proj (model.py:7") != std::string::npos);
}

TEST_CASE("invariance trace: rows that match everywhere name no op") {
  const auto r = ra::invariance::explain_row(alone(), batch("y"), 4);
  CHECK(r.outcome == "none");
  CHECK(r.op.empty());
  CHECK(r.compared == 3);
}

TEST_CASE("invariance trace: a reshape that merges the batch stops the walk there") {
  const Trace a = of({op("aten::layer_norm", "norm", {t({1, 8}, "x")}, {t({1, 8}, "n")}),
                      op("aten::reshape", "", {t({1, 8}, "n")}, {t({8}, "n")}),
                      op("aten::linear", "proj", {t({8}, "n"), t({4, 8}, "w")}, {t({4}, "y")})});
  const Trace b = of({op("aten::layer_norm", "norm", {t({4, 8}, "X", "x")}, {t({4, 8}, "N", "n")}),
                      op("aten::reshape", "", {t({4, 8}, "N", "n")}, {t({32}, "N")}),
                      op("aten::linear", "proj", {t({32}, "N"), t({4, 8}, "w", "w0")}, {t({16}, "Y")})});
  const auto r = ra::invariance::explain_row(a, b, 4);
  CHECK(r.outcome == "stopped");
  CHECK(r.op == "aten::reshape");
  CHECK(r.compared == 2);
  CHECK(r.message.find("batch dimension not followed past aten::reshape at the model's top level") == 0);
  CHECK(r.message.find("the first difference is at or after it") != std::string::npos);
}

TEST_CASE("invariance trace: a reduction over the batch stops the walk there") {
  const Trace a = of({op("aten::sum", "", {t({1, 8}, "x")}, {t({8}, "s")})});
  const Trace b = of({op("aten::sum", "", {t({4, 8}, "X", "x")}, {t({8}, "S")})});
  const auto r = ra::invariance::explain_row(a, b, 4);
  CHECK(r.outcome == "stopped");
  CHECK(r.op == "aten::sum");
}

TEST_CASE("invariance trace: uninitialised memory (aten::empty) is not a difference") {
  const Trace a =
      of({op("aten::empty", "", {}, {t({1, 8}, "junk")}), op("aten::sum", "", {t({1, 8}, "x")}, {t({1}, "s")})});
  const Trace b = of({op("aten::empty", "", {}, {t({4, 8}, "J", "other junk")}),
                      op("aten::sum", "", {t({4, 8}, "X", "x")}, {t({4}, "S", "s'")})});
  const auto r = ra::invariance::explain_row(a, b, 4);
  CHECK(r.outcome == "found");
  CHECK(r.op == "aten::sum");
}

TEST_CASE("invariance trace: the answer goes through the report's JSON and its renderers") {
  ra::report::RowTrace r = ra::invariance::explain_row(alone(), batch("y'"), 4);
  r.size = 4, r.anchor = 0, r.position = 0;
  const auto back = ra::report::row_trace_from_json(ra::report::row_trace_to_json(r));
  CHECK(back.outcome == r.outcome);
  CHECK(back.op == r.op);
  CHECK(back.module == r.module);
  CHECK(back.source == r.source);
  CHECK(back.inputs == r.inputs);
  CHECK(back.outputs == r.outputs);
  CHECK(back.compared == r.compared);
  CHECK(back.message == r.message);
  auto bad = ra::report::row_trace_to_json(r);
  bad["outcome"] = "maybe";
  CHECK_THROWS(ra::report::row_trace_from_json(bad));
}
