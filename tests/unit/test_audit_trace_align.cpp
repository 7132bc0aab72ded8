// SPDX-License-Identifier: Apache-2.0
#include "audit/trace/op_stream.h"
#include "audit/trace/trace_align.h"
#include "audit/trace/trace_io.h"

#include "audit/common/files.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

using ra::trace::Record;
using ra::trace::TensorRef;
using ra::trace::Trace;

TensorRef t(const std::string& digest) { return {"float32", {4}, digest}; }

// Builds a trace record by record; `order` is the position.
struct Builder {
  Trace trace;

  Record& add(Record r) {
    r.order = trace.records.size();
    trace.records.push_back(std::move(r));
    return trace.records.back();
  }
  // A forward op reading digests `in` and writing `out`.
  Record& op(const std::string& name, const std::vector<std::string>& in, const std::vector<std::string>& out) {
    Record r;
    r.op = name;
    r.kind = "op";
    r.phase = "forward";
    for (const auto& d : in) r.inputs.push_back(t(d));
    for (const auto& d : out) r.outputs.push_back(t(d));
    return add(std::move(r));
  }
  Record& node(const std::string& name, int64_t seq, const std::vector<std::string>& grads) {
    Record r;
    r.op = name;
    r.kind = "node";
    r.phase = "backward";
    r.step = 1;
    r.seq = seq;
    r.thread = 0;
    for (const auto& d : grads) r.inputs.push_back(t(d));
    return add(std::move(r));
  }
  // An op inside the backward node recorded at `parent`.
  Record& inner(const std::string& name, uint64_t parent, const std::vector<std::string>& in,
                const std::vector<std::string>& out) {
    Record& r = op(name, in, out);
    r.phase = "backward";
    r.step = 1;
    r.parent = static_cast<int64_t>(parent);
    return r;
  }
};

// x -> A -> a -> B -> b -> C -> c -> D -> d, where B's output is `b` (the nondeterministic one).
Trace chain(const std::string& b, const std::string& e_out = "e") {
  Builder t;
  t.op("aten::linear", {"x"}, {"a"});
  t.op("ra_test::nondet_sum", {"a"}, {b});
  t.op("aten::relu", {b}, {"c" + b});
  t.op("aten::mul", {"c" + b}, {"d" + b});
  t.op("aten::index_add", {"x"}, {e_out});  // independent of the chain
  return t.trace;
}

bool is_common_subsequence(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b,
                           const std::vector<std::pair<size_t, size_t>>& pairs) {
  for (size_t k = 0; k < pairs.size(); ++k) {
    if (a.at(pairs[k].first) != b.at(pairs[k].second)) return false;
    if (k > 0 && (pairs[k].first <= pairs[k - 1].first || pairs[k].second <= pairs[k - 1].second)) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("analyse_traces: identical runs have no root cause") {
  const auto s = ra::trace::analyse_traces({chain("b"), chain("b"), chain("b")}, {0, 1, 2});
  CHECK(s.records == 5);
  CHECK(s.runs_compared == 2);
  CHECK(s.runs_identical == 2);
  CHECK(s.root_causes.empty());
  CHECK(s.splits.empty());
}

TEST_CASE("compare_runs: the first op whose inputs matched and outputs did not is the root cause") {
  const auto c = ra::trace::compare_runs(chain("b"), chain("b2"));
  REQUIRE(c.root_cause);
  CHECK(*c.root_cause == 1);
  CHECK(*c.root_cause_other == 1);
  CHECK(c.differing_outputs == std::vector<int>{0});
  CHECK(c.propagated == 2);
  CHECK(c.independent_mismatches == 0);
  CHECK(c.output_mismatches == 3);
  CHECK(c.alignment.splits.empty());
  CHECK_FALSE(c.identical());
}

TEST_CASE("compare_runs: names the output index that differed") {
  Builder a, b;
  a.op("aten::linear", {"x"}, {"a"});
  a.op("aten::max", {"a"}, {"v", "i"});
  b.op("aten::linear", {"x"}, {"a"});
  b.op("aten::max", {"a"}, {"v", "i2"});
  const auto c = ra::trace::compare_runs(a.trace, b.trace);
  REQUIRE(c.root_cause);
  CHECK(*c.root_cause == 1);
  CHECK(c.differing_outputs == std::vector<int>{1});
}

TEST_CASE("compare_runs: a difference in the non-tensor arguments is not a root cause") {
  Trace a = chain("b"), b = chain("b2");
  a.records[1].scalars = "00000000000000aa";
  b.records[1].scalars = "00000000000000bb";
  const auto c = ra::trace::compare_runs(a, b);
  CHECK_FALSE(c.root_cause);  // B's inputs differ (scalars), and C reads B's differing output
  CHECK(c.output_mismatches == 3);
  CHECK(c.propagated == 0);
}

TEST_CASE("compare_runs: a later op with matching inputs is counted, not listed") {
  const auto c = ra::trace::compare_runs(chain("b", "e"), chain("b2", "e2"));
  REQUIRE(c.root_cause);
  CHECK(*c.root_cause == 1);
  CHECK(c.propagated == 3);
  CHECK(c.independent_mismatches == 1);
  const auto s = ra::trace::analyse_traces({chain("b", "e"), chain("b2", "e2")}, {});
  REQUIRE(s.root_causes.size() == 1);
  CHECK(s.root_causes[0].independent_mismatches == 1);
}

TEST_CASE("compare_runs: an op inserted in the other run is a split, and the root cause after it is found") {
  Builder a, b;
  a.op("aten::linear", {"x"}, {"a"});
  a.op("aten::relu", {"a"}, {"r"});
  a.op("aten::sum", {"r"}, {"s"});
  a.op("aten::mul", {"s"}, {"m"});
  b.op("aten::linear", {"x"}, {"a"});
  b.op("aten::relu", {"a"}, {"r"});
  b.op("aten::contiguous", {"r"}, {"r"});  // inserted
  b.op("aten::sum", {"r"}, {"s2"});        // diverges
  b.op("aten::mul", {"s2"}, {"m2"});
  const auto c = ra::trace::compare_runs(a.trace, b.trace);
  REQUIRE(c.alignment.splits.size() == 1);
  const auto& sp = c.alignment.splits[0];
  CHECK(sp.reference_position == 2);  // the insertion point: before the reference's aten::sum
  CHECK(sp.other_position == 2);
  CHECK(sp.unmatched_reference == 0);
  CHECK(sp.unmatched_other == 1);
  REQUIRE(c.root_cause);
  CHECK(*c.root_cause == 2);
  CHECK(*c.root_cause_other == 3);
  CHECK(c.propagated == 1);

  const auto s = ra::trace::analyse_traces({a.trace, b.trace}, {0, 4});
  REQUIRE(s.splits.size() == 1);
  CHECK(s.splits[0].reference_op.empty());
  CHECK(s.splits[0].other_op == "aten::contiguous");
  CHECK(s.splits[0].repeats == std::vector<int>{4});
  CHECK(s.runs_identical == 0);
  REQUIRE(s.root_causes.size() == 1);
  CHECK(s.root_causes[0].op == "aten::sum");
}

TEST_CASE("compare_runs: a reordered pair is still compared") {
  Builder a, b;
  a.op("aten::linear", {"x"}, {"a"});
  a.op("ra_test::nondet_sum", {"a"}, {"s"});
  a.op("aten::exp", {"x"}, {"e"});
  a.op("aten::add", {"s", "e"}, {"y"});
  b.op("aten::linear", {"x"}, {"a"});
  b.op("aten::exp", {"x"}, {"e"});
  b.op("ra_test::nondet_sum", {"a"}, {"s2"});
  b.op("aten::add", {"s2", "e"}, {"y2"});
  const auto c = ra::trace::compare_runs(a.trace, b.trace);
  CHECK(c.alignment.pairs.size() == 4);
  REQUIRE_FALSE(c.alignment.splits.empty());
  uint64_t reordered = 0;
  for (const auto& sp : c.alignment.splits) reordered += sp.reordered;
  CHECK(reordered == 2);
  REQUIRE(c.root_cause);
  CHECK(*c.root_cause == 1);
  CHECK(*c.root_cause_other == 2);
  CHECK(c.propagated == 1);
}

TEST_CASE("align_traces: threads are aligned separately") {
  Builder a, b;
  a.op("aten::linear", {"x"}, {"a"});
  a.node("MmBackward0", 3, {"g"}).thread = 1;
  a.op("aten::relu", {"a"}, {"r"});
  b.op("aten::linear", {"x"}, {"a"});
  b.op("aten::relu", {"a"}, {"r"});
  b.node("MmBackward0", 3, {"g"}).thread = 1;
  const auto al = ra::trace::align_traces(a.trace, b.trace);
  CHECK(al.splits.empty());
  CHECK(al.pairs == std::vector<std::pair<size_t, size_t>>{{0, 0}, {1, 2}, {2, 1}});
  const auto s = ra::trace::analyse_traces({a.trace, b.trace}, {});
  CHECK(s.runs_identical == 1);
}

TEST_CASE("provenance: a backward op names its node and the forward op that created it") {
  Builder a;
  Record& lin = a.op("aten::linear", {"x"}, {"h"});
  lin.seq = 10;
  lin.step = 1;
  lin.module = "proj";
  lin.source = "model.py:2";
  Record& ia = a.op("aten::index_add", {"h"}, {"y"});
  ia.seq = 11;
  ia.step = 1;
  ia.module = "enc";
  ia.source = "model.py:5";
  Record& comp = a.op("aten::layer_norm", {"y"}, {"z"});  // a composite: creates nodes 12 and 13
  comp.seq = 12;
  comp.step = 1;
  comp.source = "model.py:6";
  const uint64_t n_ln = a.node("NativeLayerNormBackward0", 13, {"gz"}).order;
  a.inner("aten::native_layer_norm_backward", n_ln, {"gz", "y"}, {"gy"});
  const uint64_t n_ia = a.node("IndexAddBackward0", 11, {"gy"}).order;
  a.inner("aten::index_add", n_ia, {"gy"}, {"gh"});
  const uint64_t n_mm = a.node("AddmmBackward0", 10, {"gh"}).order;
  a.inner("aten::mm", n_mm, {"gh", "x"}, {"gw"});

  Trace b = a.trace;
  b.records[6].outputs[0].digest = "gh2";  // aten::index_add inside IndexAddBackward0 diverges
  b.records[7].inputs[0].digest = "gh2";
  b.records[8].inputs[0].digest = "gh2";
  b.records[8].outputs[0].digest = "gw2";

  const auto ln = ra::trace::provenance(a.trace, 4);
  CHECK(ln.direction == "backward");
  CHECK(ln.node == "NativeLayerNormBackward0");
  CHECK(ln.forward_op == "aten::layer_norm");
  CHECK(ra::trace::provenance(a.trace, 1).direction == "forward");
  CHECK(ra::trace::provenance(a.trace, 7).node == "AddmmBackward0");  // a node itself

  const auto s = ra::trace::analyse_traces({a.trace, b, b}, {0, 1, 2});
  REQUIRE(s.root_causes.size() == 1);
  const auto& rc = s.root_causes[0];
  CHECK(rc.op == "aten::index_add");
  CHECK(rc.direction == "backward");
  CHECK(rc.phase == "backward");
  CHECK(rc.node == "IndexAddBackward0");
  CHECK(rc.forward_op == "aten::index_add");
  CHECK(rc.module == "enc");
  CHECK(rc.source == "model.py:5");
  CHECK(rc.position == 6);
  CHECK(rc.step == 1);
  CHECK(rc.inputs == std::vector<std::string>{"float32[4]"});
  CHECK(rc.differing_outputs == std::vector<int>{0});
  CHECK(rc.runs_diverged == 2);
  CHECK(rc.runs_compared == 2);
  CHECK(rc.repeats == std::vector<int>{1, 2});
  CHECK(rc.propagated == 1);  // aten::mm; the node AddmmBackward0 has no outputs
}

TEST_CASE("provenance: optimizer ops") {
  Builder a;
  a.op("aten::add_", {"p", "g"}, {"p2"}).phase = "optimizer";
  CHECK(ra::trace::provenance(a.trace, 0).direction == "optimizer");
}

TEST_CASE("analyse_traces: root causes at two positions, deduplicated, in reference order") {
  const Trace ref = chain("b", "e");
  const auto s = ra::trace::analyse_traces({ref, chain("b", "e2"), chain("b2", "e"), chain("b3", "e")}, {0, 1, 2, 3});
  CHECK(s.runs_compared == 3);
  CHECK(s.runs_identical == 0);
  REQUIRE(s.root_causes.size() == 2);
  CHECK(s.root_causes[0].op == "ra_test::nondet_sum");
  CHECK(s.root_causes[0].position == 1);
  CHECK(s.root_causes[0].runs_diverged == 2);
  CHECK(s.root_causes[0].repeats == std::vector<int>{2, 3});
  CHECK(s.root_causes[0].propagated == 2);
  CHECK(s.root_causes[0].direction == "forward");
  CHECK(s.root_causes[1].op == "aten::index_add");
  CHECK(s.root_causes[1].position == 4);
  CHECK(s.root_causes[1].runs_diverged == 1);
  CHECK(s.root_causes[1].runs_compared == 3);
  CHECK(s.root_causes[1].propagated == 0);
}

TEST_CASE("analyse_traces: figures from the traces") {
  Trace a = chain("b"), b = chain("b");
  a.dropped = 0;
  b.dropped = 3;
  a.memory_bytes = 100;
  b.memory_bytes = 200;
  a.capacity = b.capacity = 1000;
  const auto s = ra::trace::analyse_traces({a, b}, {});
  CHECK(s.dropped == 3);
  CHECK(s.memory_bytes == 200);
  CHECK(s.capacity == 1000);
  CHECK(ra::trace::analyse_traces({}, {}).runs_compared == 0);
}

TEST_CASE("align_sequences: 50k records with a few differences") {
  // How long it takes is bench's business, never a test's; a full table at this size would need
  // 2.5e9 cells.
  std::vector<uint32_t> a(50000), b;
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint32_t>(i % 37);  // repetitive, as layers are
  b = a;
  b.erase(b.begin() + 100);          // deleted
  b.insert(b.begin() + 25000, 999);  // inserted
  b[40000] = 998;                    // substituted
  const auto pairs = ra::trace::align_sequences(a, b);
  CHECK(pairs.size() == a.size() - 2);
  CHECK(is_common_subsequence(a, b, pairs));
}

TEST_CASE("align_sequences: a longest common subsequence") {
  std::mt19937 rng(7);
  const auto lcs_length = [](const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
    for (size_t i = 1; i <= a.size(); ++i)
      for (size_t j = 1; j <= b.size(); ++j)
        d[i][j] = a[i - 1] == b[j - 1] ? d[i - 1][j - 1] + 1 : std::max(d[i - 1][j], d[i][j - 1]);
    return d[a.size()][b.size()];
  };
  int wrong = 0;
  for (int round = 0; round < 500; ++round) {
    std::vector<uint32_t> a(rng() % 40), b(rng() % 40);
    const uint32_t alphabet = 1 + rng() % 5;
    for (auto& x : a) x = rng() % alphabet;
    for (auto& x : b) x = rng() % alphabet;
    const auto pairs = ra::trace::align_sequences(a, b);
    if (!is_common_subsequence(a, b, pairs) || pairs.size() != lcs_length(a, b)) ++wrong;
  }
  CHECK(wrong == 0);
}

TEST_CASE("align_sequences: streams with nothing in common stay bounded") {
  std::vector<uint32_t> a(20000), b(20000);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<uint32_t>(i % 7);
    b[i] = static_cast<uint32_t>(100 + i % 5);
  }
  CHECK(ra::trace::align_sequences(a, b).empty());
  // Mostly different, with scattered common keys: the result is a common subsequence.
  for (size_t i = 0; i < b.size(); i += 13) b[i] = a[(i * 7) % a.size()];
  const auto pairs = ra::trace::align_sequences(a, b);
  CHECK_FALSE(pairs.empty());
  CHECK(is_common_subsequence(a, b, pairs));
  CHECK(ra::trace::align_sequences({}, {1, 2}).empty());
  CHECK(ra::trace::align_sequences({1, 2, 3}, {1, 2, 3}).size() == 3);
}

TEST_CASE("describe: dtype and shape") {
  CHECK(ra::trace::describe({"float32", {8, 64}, "d"}) == "float32[8x64]");
  CHECK(ra::trace::describe({"int64", {}, "d"}) == "int64[]");
  CHECK(ra::trace::describe({"", {}, ""}) == "None");
}

TEST_CASE("read_trace: round trip of write_trace") {
  ra::ScratchDir dir;
  Builder b;
  Record& r = b.op("aten::index_add", {"x", ""}, {"y"});
  r.inputs[1] = {"", {}, ""};
  r.thread = 1;
  r.step = 2;
  r.seq = 41;
  r.module = "enc.layers.0";
  r.source = "model.py:12";
  r.scalars = "0123456789abcdef";
  b.node("IndexAddBackward0", 41, {"g"});
  b.inner("aten::index_add", 1, {"g"}, {"h"});
  b.trace.device = "cuda:0";
  b.trace.dropped = 2;
  b.trace.capacity = 1 << 20;
  b.trace.memory_bytes = 123456;
  const std::string path = dir.path() + "/t.trace";
  ra::trace::write_trace(path, b.trace);
  const Trace back = ra::trace::read_trace(path);
  CHECK(back.device == "cuda:0");
  CHECK(back.dropped == 2);
  CHECK(back.capacity == 1 << 20);
  CHECK(back.memory_bytes == 123456);
  REQUIRE(back.records.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    const Record &x = b.trace.records[i], &y = back.records[i];
    CHECK(x.thread == y.thread);
    CHECK(x.order == y.order);
    CHECK(x.op == y.op);
    CHECK(x.kind == y.kind);
    CHECK(x.phase == y.phase);
    CHECK(x.step == y.step);
    CHECK(x.seq == y.seq);
    CHECK(x.parent == y.parent);
    CHECK(x.module == y.module);
    CHECK(x.source == y.source);
    CHECK(x.scalars == y.scalars);
    REQUIRE(x.inputs.size() == y.inputs.size());
    for (size_t k = 0; k < x.inputs.size(); ++k) {
      CHECK(x.inputs[k].dtype == y.inputs[k].dtype);
      CHECK(x.inputs[k].shape == y.inputs[k].shape);
      CHECK(x.inputs[k].digest == y.inputs[k].digest);
    }
    REQUIRE(x.outputs.size() == y.outputs.size());
  }
}

TEST_CASE("read_trace: TraceError names the file and the line") {
  ra::ScratchDir dir;
  Builder b;
  b.op("aten::linear", {"x"}, {"a"});
  b.op("aten::relu", {"a"}, {"r"});
  const std::string path = dir.path() + "/t.trace";
  ra::trace::write_trace(path, b.trace);
  const std::string whole = ra::read_file(path, "trace");
  const auto error_of = [&](const std::string& contents) {
    std::ofstream(path, std::ios::trunc) << contents;
    try {
      ra::trace::read_trace(path);
    } catch (const ra::trace::TraceError& e) {
      CHECK(std::string(e.what()).find(path) != std::string::npos);
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const size_t second = whole.find('\n', whole.find('\n') + 1);
  CHECK(error_of(whole.substr(0, second + 1)).find("1 of 2 records") != std::string::npos);  // torn
  CHECK(error_of(whole.substr(0, second + 10)).find("line 3") != std::string::npos);         // a torn line
  CHECK(error_of(whole + "{\"th\":0}\n").find("line 4") != std::string::npos);               // one too many
  CHECK(error_of("{\"format\":\"something/else\",\"version\":1}\n").find("not a repro-audit trace") !=
        std::string::npos);
  CHECK(error_of("{\"format\":\"repro-audit/trace\",\"version\":7}\n").find("version 7") != std::string::npos);
  CHECK(error_of("").find("empty") != std::string::npos);
  std::string bad = whole;
  bad.replace(bad.find("\"op\":\"aten::relu\""), 17, "\"op\":17");
  CHECK(error_of(bad).find("line 3: malformed record") != std::string::npos);
  CHECK_THROWS_AS(ra::trace::read_trace(dir.path() + "/missing.trace"), ra::trace::TraceError);
}

TEST_CASE("op streams: 32 characters a record, a shared op table, and the first changed op named from them") {
  Builder a;
  a.op("aten::mm", {"x", "w"}, {"h"}).source = "model.py:3";
  a.op("aten::relu", {"h"}, {"r"});
  a.op("aten::sum", {"r"}, {"s"}).module = "head";
  a.op("aten::relu", {"h"}, {"r"});  // the same op again: one table entry
  const auto stream = ra::trace::pack_op_stream(a.trace);
  REQUIRE(stream.threads.size() == 1);
  CHECK(stream.threads[0].records == 4);
  CHECK(stream.threads[0].packed.size() == 4 * 32);
  CHECK(stream.threads[0].names.size() == 4 * 4);
  CHECK(stream.packed_bytes() == 128);
  CHECK(stream.ops.size() == 3);
  CHECK(stream.ops[0].source == "model.py:3");
  CHECK(ra::trace::compare_op_streams(stream, stream).identical());

  // relu now writes other bits from the same inputs: it is named, the ops after it propagate.
  Builder b;
  b.op("aten::mm", {"x", "w"}, {"h"});
  b.op("aten::relu", {"h"}, {"r2"});
  b.op("aten::sum", {"r2"}, {"s2"});
  b.op("aten::relu", {"h"}, {"r"});
  const auto changed = ra::trace::compare_op_streams(stream, ra::trace::pack_op_stream(b.trace));
  REQUIRE(changed.first_changed.has_value());
  CHECK(changed.first_changed->op == "aten::relu");
  CHECK(changed.first_changed->direction == "forward");
  CHECK(changed.first_changed->position == 1);
  CHECK(changed.changed_ops == 2);
  CHECK(changed.first_changed->propagated == 1);
  CHECK(changed.unmatched_baseline == 0);

  // An op inserted: counted as unmatched, the rest still aligned.
  Builder c;
  c.op("aten::mm", {"x", "w"}, {"h"});
  c.op("aten::clone", {"h"}, {"h"});
  c.op("aten::relu", {"h"}, {"r"});
  c.op("aten::sum", {"r"}, {"s"}).module = "head";
  c.op("aten::relu", {"h"}, {"r"});
  const auto inserted = ra::trace::compare_op_streams(stream, ra::trace::pack_op_stream(c.trace));
  CHECK(inserted.unmatched_current == 1);
  CHECK(inserted.unmatched_baseline == 0);
  CHECK_FALSE(inserted.first_changed.has_value());

  // Damaged streams are errors to report, not crashes.
  auto bad = stream;
  bad.threads[0].packed[5] = '*';
  CHECK_THROWS_AS(ra::trace::compare_op_streams(bad, stream), ra::trace::OpStreamError);
  auto beyond = stream;
  beyond.ops.resize(1);
  CHECK_THROWS_AS(ra::trace::compare_op_streams(stream, beyond), ra::trace::OpStreamError);
  // Without names (two baselines), the changed op is still found, by where it sits.
  const auto unnamed =
      ra::trace::compare_op_streams(stream.without_names(), ra::trace::pack_op_stream(b.trace).without_names());
  REQUIRE(unnamed.first_changed.has_value());
  CHECK(unnamed.first_changed->op == "record 1 of thread 0");
  auto short_stream = stream;
  short_stream.threads[0].packed.pop_back();
  CHECK_THROWS_AS(ra::trace::compare_op_streams(stream, short_stream), ra::trace::OpStreamError);
}

TEST_CASE("root cause: uninitialised memory from aten::empty is not a divergence; what reads it later is") {
  // NativeRT's static kernels allocate with aten::empty and fill without dispatching: the empty's
  // bits differ between runs and mean nothing. The index_put_ that reads the same zeros and writes
  // other sums is the root cause.
  Builder a, b;
  a.op("aten::empty", {}, {"garbage-a"});
  a.op("aten::index_put_", {"zeros", "idx", "v"}, {"sum-a"});
  b.op("aten::empty", {}, {"garbage-b"});
  b.op("aten::index_put_", {"zeros", "idx", "v"}, {"sum-b"});
  const auto s = ra::trace::analyse_traces({a.trace, b.trace}, {0, 1});
  REQUIRE(s.root_causes.size() == 1);
  CHECK(s.root_causes[0].op == "aten::index_put_");
}

// NativeRT's static kernels allocate outputs without the dispatcher, then traced ops view and
// fill them: the view's input and output are whatever memory held.
Trace static_kernel(const std::string& garbage, const std::string& filled = "zeros") {
  Builder t;
  t.op("aten::addmm", {"bias", "x", "w"}, {"h"});
  t.op("aten::as_strided", {garbage}, {garbage + "/view"});
  t.op("aten::fill_", {garbage + "/view"}, {filled});
  t.op("aten::div", {filled}, {"out"});
  return t.trace;
}

TEST_CASE("compare_runs: differences only in memory no traced op wrote do not count; what is computed from it does") {
  const auto benign = ra::trace::compare_runs(static_kernel("junk1"), static_kernel("junk2"));
  CHECK(benign.output_mismatches == 0);
  CHECK_FALSE(benign.root_cause);
  CHECK(benign.identical());
  // The same uninitialised memory read by an op that keeps its bits: the difference reaches a
  // written tensor, which the next op reads, and the runs are not identical.
  const auto read = ra::trace::compare_runs(static_kernel("junk1", "junk1/sum"), static_kernel("junk2", "junk2/sum"));
  CHECK(read.output_mismatches == 1);  // fill_, whose input as_strided wrote
  CHECK_FALSE(read.identical());
  // The same with the allocation traced: aten::empty writes nothing.
  const auto traced_empty = [](const std::string& garbage) {
    Builder t;
    t.op("aten::empty", {}, {garbage});
    t.op("aten::as_strided", {garbage}, {garbage + "/view"});
    t.op("aten::fill_", {garbage + "/view"}, {"zeros"});
    return t.trace;
  };
  CHECK(ra::trace::compare_runs(traced_empty("junk1"), traced_empty("junk2")).identical());
  // A tensor an earlier op wrote is never taken for unwritten memory.
  Builder a, b;
  a.op("aten::linear", {"x"}, {"a1"});
  a.op("aten::relu", {"a1"}, {"r1"});
  b.op("aten::linear", {"x"}, {"a2"});
  b.op("aten::relu", {"a2"}, {"r2"});
  const auto written = ra::trace::compare_runs(a.trace, b.trace);
  CHECK(written.output_mismatches == 2);
  REQUIRE(written.root_cause);
  CHECK(*written.root_cause == 0);
}
