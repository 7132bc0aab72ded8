// SPDX-License-Identifier: Apache-2.0
// The invariance report's JSON (share/schema/report-v1.schema.json, InvarianceReport) and its reader,
// side by side: every field the writer puts is read back, so `repro-audit report` re-renders it.
#include "reports/invariance_model.h"
#include "reports/json_node.h"
#include "reports/json_parts.h"

#include <cmath>

namespace ra::report {
namespace {

using detail::json;
using detail::Node;
using detail::number_or_null;

json switches_json(const std::vector<SwitchValue>& switches) {
  json out = json::array();
  for (const auto& s : switches)
    out.push_back({{"key", s.key},
                   {"requested", s.requested.empty() ? json(nullptr) : json(s.requested)},
                   {"effective", s.effective}});
  return out;
}

std::vector<SwitchValue> switches_from(const Node& n) {
  return n.list([](const Node& s) {
    return SwitchValue{s.at("key").str(), s.at("requested").str_or_null(), s.at("effective").str()};
  });
}

RowTrace row_trace_from(const Node& n) {
  RowTrace t;
  t.outcome = n.at("outcome").str();
  if (t.outcome != "found" && t.outcome != "stopped" && t.outcome != "none" && t.outcome != "not-traced")
    n.at("outcome").fail("expected found, stopped, none or not-traced");
  t.size = n.at("size").i64();
  t.anchor = n.at("anchor").i32();
  t.position = n.at("position").i64();
  t.op = n.at("op").str();
  t.module = n.at("module").str();
  t.source = n.at("source").str();
  t.inputs = n.at("inputs").strings();
  t.outputs = n.at("outputs").strings();
  t.compared = n.at("compared").u64();
  t.message = n.at("message").str();
  return t;
}

json config_json(const InvarianceConfig& c) {
  json classes = json::array();
  for (const auto& k : c.classes) classes.push_back(detail::size_class_json(k));
  json j = {{"config", c.config},
            {"verdict", c.verdict},
            {"message", c.message},
            {"switches", switches_json(c.switches)},
            {"classes", classes},
            {"position_dependent", c.position_dependent},
            {"warmup_dependent", c.warmup_dependent},
            {"advice", c.advice},
            {"cells", cells_to_json(c.cells)},
            {"timing",
             {{"forward_ms", c.timing.forward_ms},
              {"calls", c.timing.calls},
              {"sweep_ms", c.timing.sweep_ms},
              {"worker_ms", c.timing.worker_ms}}}};
  if (c.allowed_by) j["allowed_by"] = detail::allowed_by_json(*c.allowed_by);
  if (c.referee) j["referee"] = detail::class_summary_json(*c.referee);
  return j;
}

// The configuration with its --trace answer, when it has one.
json traced_config_json(const InvarianceConfig& c) {
  json out = config_json(c);
  if (c.trace) out["trace"] = row_trace_to_json(*c.trace);
  return out;
}

InvarianceConfig config_from(const Node& n) {
  InvarianceConfig c;
  detail::read_invariance_config_head(n, c);
  c.message = n.at("message").str();
  c.switches = switches_from(n.at("switches"));
  c.classes = n.at("classes").list(detail::read_size_class);
  c.advice = n.at("advice").strings();
  c.cells = cells_from_json(n.at("cells").v);
  const Node t = n.at("timing");
  c.timing = {t.at("forward_ms").num(), t.at("calls").i64(), t.at("sweep_ms").num(), t.at("worker_ms").num()};
  if (n.has("allowed_by")) c.allowed_by = detail::read_allowed_by(n.at("allowed_by"));
  if (n.has("trace")) c.trace = row_trace_from(n.at("trace"));
  if (n.has("referee")) c.referee = detail::read_class_summary(n.at("referee"));
  return c;
}

}  // namespace

namespace detail {

json size_class_json(const SizeClass& k) {
  json j = {{"sizes", k.sizes}, {"reference", k.reference}};
  if (!k.errors.empty()) {
    json errors = json::array();
    for (const auto& e : k.errors) errors.push_back(reference_error_to_json(e));
    j["errors"] = std::move(errors);
  }
  if (k.difference) j["difference"] = classified_json(*k.difference);
  return j;
}

SizeClass read_size_class(const Node& n) {
  SizeClass k{n.at("sizes").i64s(), n.at("reference").boolean(), {}, std::nullopt};
  if (n.has("errors")) k.errors = n.at("errors").list(read_reference_error);
  if (n.has("difference")) k.difference = read_classified(n.at("difference"));
  return k;
}

}  // namespace detail

json cells_to_json(const std::vector<InvarianceCell>& cells) {
  json out = json::array();
  for (const auto& cell : cells) {
    json rows = json::array();
    for (const auto& r : cell.rows) {
      json row = {{"anchor", r.anchor},
                  {"output", r.output},
                  {"position", r.position},
                  {"digest", r.digest},
                  {"equal", r.equal}};
      if (!r.equal) row["max_abs"] = number_or_null(r.max_abs), row["max_ulp"] = number_or_null(r.max_ulp);
      rows.push_back(std::move(row));
    }
    json entry = {{"size", cell.size}, {"placement", cell.placement}, {"rows", rows}};
    if (cell.start >= 0) entry["start"] = cell.start;  // the verify axis's blocks only
    out.push_back(std::move(entry));
  }
  return out;
}

std::vector<InvarianceCell> cells_from_json(const json& j) {
  const Node root{j, "cells"};
  return root.list([](const Node& n) {
    InvarianceCell cell;
    cell.size = n.at("size").i64();
    cell.placement = n.at("placement").str();
    if (n.has("start")) cell.start = n.at("start").i64();
    bool known = false;
    for (const char* p : kPlacements) known = known || cell.placement == p;
    if (!known) n.at("placement").fail("expected start, middle, end, permuted, second-call or block");
    cell.rows = n.at("rows").list([](const Node& r) {
      RowComparison row;
      row.anchor = r.at("anchor").i32();
      row.output = r.at("output").str();
      row.position = r.at("position").i64();
      row.digest = r.at("digest").str();
      row.equal = r.at("equal").boolean();
      if (!row.equal) row.max_abs = r.at("max_abs").num_or_nan(), row.max_ulp = r.at("max_ulp").num_or_nan();
      return row;
    });
    return cell;
  });
}

json row_trace_to_json(const RowTrace& t) {
  return {{"outcome", t.outcome}, {"size", t.size},         {"anchor", t.anchor},  {"position", t.position},
          {"op", t.op},           {"module", t.module},     {"source", t.source},  {"inputs", t.inputs},
          {"outputs", t.outputs}, {"compared", t.compared}, {"message", t.message}};
}

RowTrace row_trace_from_json(const json& j) { return row_trace_from(Node{j, "trace"}); }

json invariance_to_json(const Invariance& inv) {
  json configs = json::array();
  for (const auto& c : inv.configs) configs.push_back(traced_config_json(c));
  json out = {
      {"model", inv.model},     {"kind", inv.kind},
      {"device", inv.device},   {"input", inv.input},
      {"inputs", inv.inputs},   {"rows", inv.rows},
      {"filler", inv.filler},   {"axis", inv.axis},
      {"sizes", inv.sizes},     {"budget", inv.budget},
      {"outputs", inv.outputs}, {"excluded", inv.excluded},
      {"notes", inv.notes},     {"control", {{"detected", inv.control.detected}, {"evidence", inv.control.evidence}}},
      {"configs", configs},     {"fix", invariance_fix_to_json(inv.fix)}};
  if (inv.axis == "verify") out["draft"] = inv.draft, out["positions"] = inv.positions;
  if (!inv.runtime.empty()) out["runtime"] = inv.runtime;
  if (inv.referee) out["referee"] = detail::referee_json(*inv.referee);
  return out;
}

Invariance invariance_from_json(const json& j) {
  const Node n{j, "invariance"};
  Invariance inv;
  detail::read_invariance_head(n, inv);
  inv.input = n.at("input").str();
  if (n.has("runtime")) inv.runtime = n.at("runtime").str();  // a torch.export archive's only
  inv.excluded = n.at("excluded").strings();
  inv.notes = n.at("notes").strings();
  inv.control = {n.at("control").at("detected").boolean(), n.at("control").at("evidence").str()};
  inv.configs = n.at("configs").list(config_from);
  if (n.has("fix")) inv.fix = invariance_fix_from_json(n.at("fix").v);        // reports before the fix search have none
  if (n.has("referee")) inv.referee = detail::read_referee(n.at("referee"));  // reports before issue 53 have none
  return inv;
}

}  // namespace ra::report
