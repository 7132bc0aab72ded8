// SPDX-License-Identifier: Apache-2.0
// The JSON writer and reader of what `run --trace` adds (reports/trace_model.h), side by side: each
// reader is the inverse of the writer above it, and names the JSON path of whatever it refuses.
#include "reports/json_parts.h"
#include "reports/render.h"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <utility>

namespace ra::report::detail {
namespace {

StructuralSplit read_split(const Node& n) {
  StructuralSplit s;
  const uint64_t thread = n.at("thread").u64();
  if (thread > std::numeric_limits<uint32_t>::max()) n.at("thread").fail("integer out of range");
  s.thread = uint32_t(thread);
  s.reference_position = n.at("reference_position").u64();
  s.other_position = n.at("other_position").u64();
  s.reference_op = n.at("reference_op").str_or_null();
  s.other_op = n.at("other_op").str_or_null();
  s.unmatched_reference = n.at("unmatched_reference").u64();
  s.unmatched_other = n.at("unmatched_other").u64();
  s.reordered = n.at("reordered").u64();
  s.runs = n.at("runs").i32();
  s.repeats = n.at("repeats").i32s();
  return s;
}

FixCandidate read_candidate(const Node& n) {
  FixCandidate c;
  c.config = n.at("config").str();
  c.stage = n.at("stage").str();
  const Node toggles = n.at("toggles");
  if (!toggles.v.is_object()) toggles.fail("expected an object");
  for (const auto& [key, value] : toggles.v.items())
    c.toggles.emplace_back(key, Node{value, toggles.path + "." + key}.str());
  c.verdict = verdict(n.at("verdict"));
  c.message = n.at("message").str();
  c.fixes = n.at("fixes_root_causes").u64s();
  c.fixes_all = n.at("reproducible").boolean();
  c.minimal = n.at("minimal").boolean();
  c.cpp = n.at("snippet").at("cpp").str();
  c.python = n.at("snippet").at("python").str();
  if (n.has("error_vs_reference")) c.accuracy = read_fix_accuracy(n.at("error_vs_reference"));
  return c;
}

}  // namespace

json root_cause_json(const RootCause& r) {
  json j = {{"op", r.op},
            {"direction", r.direction},
            {"node", or_null(r.node)},
            {"forward_op", or_null(r.forward_op)},
            {"module", or_null(r.module)},
            {"source", or_null(r.source)},
            {"phase", r.phase},
            {"step", r.step},
            {"thread", r.thread},
            {"position", r.position},
            {"inputs", r.inputs},
            {"outputs", r.outputs},
            {"differing_outputs", r.differing_outputs},
            {"runs_diverged", r.runs_diverged},
            {"runs_compared", r.runs_compared},
            {"repeats", r.repeats},
            {"propagated", r.propagated},
            {"independent_mismatches", r.independent_mismatches},
            {"stats", r.stats ? stats_to_json(*r.stats) : json(nullptr)},
            {"fixed_by", r.fixed_by}};
  if (r.referee) j["referee"] = classified_json(*r.referee);
  return j;
}

RootCause read_root_cause(const Node& n) {
  RootCause r;
  r.op = n.at("op").str();
  r.direction = n.at("direction").str();
  r.node = n.at("node").str_or_null();
  r.forward_op = n.at("forward_op").str_or_null();
  r.module = n.at("module").str_or_null();
  r.source = n.at("source").str_or_null();
  r.phase = n.at("phase").str();
  r.step = n.at("step").i32();
  const uint64_t thread = n.at("thread").u64();
  if (thread > std::numeric_limits<uint32_t>::max()) n.at("thread").fail("integer out of range");
  r.thread = uint32_t(thread);
  r.position = n.at("position").u64();
  r.inputs = n.at("inputs").strings();
  r.outputs = n.at("outputs").strings();
  r.differing_outputs = n.at("differing_outputs").i32s();
  r.runs_diverged = n.at("runs_diverged").i32();
  r.runs_compared = n.at("runs_compared").i32();
  r.repeats = n.at("repeats").i32s();
  r.propagated = n.at("propagated").u64();
  r.independent_mismatches = n.at("independent_mismatches").u64();
  r.stats = read_opt_stats(n.at("stats"));
  r.fixed_by = n.at("fixed_by").sizes();
  if (n.has("referee")) r.referee = read_classified(n.at("referee"));
  return r;
}

json trace_json(const TraceSummary& t) {
  json causes = json::array();
  for (const auto& r : t.root_causes) causes.push_back(root_cause_json(r));
  json splits = json::array();
  for (const auto& s : t.splits)
    splits.push_back({{"thread", s.thread},
                      {"reference_position", s.reference_position},
                      {"other_position", s.other_position},
                      {"reference_op", or_null(s.reference_op)},
                      {"other_op", or_null(s.other_op)},
                      {"unmatched_reference", s.unmatched_reference},
                      {"unmatched_other", s.unmatched_other},
                      {"reordered", s.reordered},
                      {"runs", s.runs},
                      {"repeats", s.repeats}});
  return {{"records", t.records},
          {"dropped", t.dropped},
          {"capacity", t.capacity},
          {"memory_bytes", t.memory_bytes},
          {"runs_compared", t.runs_compared},
          {"runs_identical", t.runs_identical},
          {"root_causes", causes},
          {"splits", splits}};
}

TraceSummary read_trace(const Node& n) {
  TraceSummary t;
  t.records = n.at("records").u64();
  t.dropped = n.at("dropped").u64();
  t.capacity = n.at("capacity").u64();
  t.memory_bytes = n.at("memory_bytes").u64();
  t.runs_compared = n.at("runs_compared").i32();
  t.runs_identical = n.at("runs_identical").i32();
  t.root_causes = n.at("root_causes").list(read_root_cause);
  t.splits = n.at("splits").list(read_split);
  return t;
}

// Deterministic facts only: medians and cost ratios go to the timing section (add_fix_times).
json fix_search_json(const FixSearch& f) {
  json candidates = json::array();
  for (const auto& c : f.candidates) {
    json toggles = json::object();
    for (const auto& [k, v] : c.toggles) toggles[k] = v;
    candidates.push_back({{"config", c.config},
                          {"stage", c.stage},
                          {"toggles", toggles},
                          {"verdict", to_string(c.verdict)},
                          {"message", c.message},
                          {"fixes_root_causes", c.fixes},
                          {"reproducible", c.fixes_all},
                          {"minimal", c.minimal},
                          {"snippet", {{"cpp", c.cpp}, {"python", c.python}}}});
    if (c.accuracy) candidates.back()["error_vs_reference"] = fix_accuracy_json(*c.accuracy);
  }
  json none = json::array();
  for (const auto& n : f.no_deterministic)
    none.push_back({{"op", n.op}, {"message", n.message}, {"advice", n.advice}, {"alternatives", n.alternatives}});
  json j = {{"from", f.from}, {"repeats", f.repeats}};
  if (f.repeats_auto) j["repeats_auto"] = true;
  j["timed_runs"] = f.timed_runs;
  j["conclusion"] = f.conclusion;
  j["minimal_fixes"] = f.best;
  j["no_deterministic_implementation"] = none;
  j["candidates"] = candidates;
  return j;
}

FixSearch read_fix_search(const Node& n) {
  FixSearch f;
  f.from = n.at("from").str();
  f.repeats = n.at("repeats").i32();
  if (n.has("repeats_auto")) f.repeats_auto = n.at("repeats_auto").boolean();
  f.timed_runs = n.at("timed_runs").i32();
  f.conclusion = n.at("conclusion").str();
  f.best = n.at("minimal_fixes").sizes();
  f.no_deterministic = n.at("no_deterministic_implementation").list([](const Node& m) {
    return NoDeterministicImplementation{m.at("op").str(), m.at("message").str(), m.at("advice").str(),
                                         m.at("alternatives").strings()};
  });
  f.candidates = n.at("candidates").list(read_candidate);
  return f;
}

void add_fix_times(json& entry, const FixSearch& f) {
  json fixes = json::array();
  for (const auto& cand : f.candidates)
    if (cand.median_ms)
      fixes.push_back({{"config", cand.config},
                       {"median_ms", *cand.median_ms},
                       {"cost_ratio", cand.cost_ratio ? json(*cand.cost_ratio) : json(nullptr)},
                       {"cost_low", cand.cost_low ? json(*cand.cost_low) : json(nullptr)},
                       {"cost_high", cand.cost_high ? json(*cand.cost_high) : json(nullptr)},
                       {"cost_measurable", cost_measurable(cand.cost_low, cand.cost_high)}});
  entry["baseline_median_ms"] = f.baseline_median_ms ? json(*f.baseline_median_ms) : json(nullptr);
  entry["candidates"] = fixes;
}

void read_fix_times(const Node& entry, FixSearch& f) {
  f.baseline_median_ms = entry.at("baseline_median_ms").opt_num();
  const Node cands = entry.at("candidates");
  for (size_t k = 0; k < cands.size(); ++k) {
    const Node m = cands[k];
    const std::string name = m.at("config").str();
    FixCandidate* found = nullptr;
    for (auto& cand : f.candidates)
      if (cand.config == name && !cand.median_ms) {
        found = &cand;
        break;
      }
    if (!found) m.at("config").fail(fmt::format("no candidate '{}' in the fix search", name));
    found->median_ms = m.at("median_ms").num();
    found->cost_ratio = m.at("cost_ratio").opt_num();
    if (m.has("cost_low")) found->cost_low = m.at("cost_low").opt_num();
    if (m.has("cost_high")) found->cost_high = m.at("cost_high").opt_num();
  }
}

json op_stream_json(const OpStream& s) {
  json ops = json::array();
  for (const auto& o : s.ops)
    ops.push_back({{"op", o.op},
                   {"phase", o.phase},
                   {"direction", o.direction},
                   {"node", o.node},
                   {"forward_op", o.forward_op},
                   {"module", o.module},
                   {"source", o.source}});
  json threads = json::array();
  for (const auto& t : s.threads) {
    threads.push_back({{"thread", t.thread}, {"records", t.records}, {"packed", t.packed}});
    if (!t.names.empty()) threads.back()["names"] = t.names;
  }
  json out = {{"format", 1}, {"threads", threads}};
  if (!s.ops.empty()) out["ops"] = ops;
  return out;
}

OpStream read_op_stream(const Node& o) {
  if (o.at("format").i32() != 1) o.at("format").fail("unknown op stream format");
  OpStream stream;
  if (o.has("ops"))
    stream.ops = o.at("ops").list([](const Node& op) {
      return OpStreamOp{op.at("op").str(),         op.at("phase").str(),  op.at("direction").str(), op.at("node").str(),
                        op.at("forward_op").str(), op.at("module").str(), op.at("source").str()};
    });
  stream.threads = o.at("threads").list([](const Node& t) {
    OpStreamThread th;
    const uint64_t thread = t.at("thread").u64();
    if (thread > UINT32_MAX) t.at("thread").fail("expected a thread number below 2^32");
    th.thread = static_cast<uint32_t>(thread);
    th.records = t.at("records").u64();
    th.packed = t.at("packed").str();
    // 24 bytes a record in base64 without padding: 32 characters each; names 4 each.
    if (th.packed.size() % 32 != 0 || th.packed.size() / 32 != th.records)
      t.at("packed").fail("length does not match the record count");
    if (t.has("names")) {
      th.names = t.at("names").str();
      if (th.names.size() % 4 != 0 || th.names.size() / 4 != th.records)
        t.at("names").fail("length does not match the record count");
    }
    return th;
  });
  return stream;
}

}  // namespace ra::report::detail
