// SPDX-License-Identifier: Apache-2.0
// The JSON writer and reader of the referee's part of a report (reports/referee_model.h), side by
// side: each reader is the inverse of the writer above it. Every field is optional in the report
// (share/schema/report-v1.schema.json): a report written with --referee off, or before the referee
// existed, has none.
#include "reports/json_parts.h"
#include "reports/referee_model.h"

namespace ra::report {

nlohmann::ordered_json reference_error_to_json(const ReferenceError& e) {
  using detail::number_or_null;
  detail::json j = {{"name", e.name},
                    {"dtype", e.dtype},
                    {"numel", e.numel},
                    {"max_ulp", number_or_null(e.max_ulp)},
                    {"max_abs", number_or_null(e.max_abs)},
                    {"max_rel", number_or_null(e.max_rel)},
                    {"nonfinite", e.nonfinite},
                    {"nan_result", e.nan_result},
                    {"nan_reference", e.nan_reference},
                    // Derived (referee_own_ulp), for readers of the JSON; not read back.
                    {"referee_own_ulp", number_or_null(referee_own_ulp(e.dtype, e.max_ulp))}};
  if (!e.note.empty()) j["note"] = e.note;
  return j;
}

ReferenceError reference_error_from_json(const nlohmann::ordered_json& j) {
  return detail::read_reference_error(detail::Node{j, ""});
}

namespace detail {

ReferenceError read_reference_error(const Node& n) {
  ReferenceError e;
  e.name = n.at("name").str();
  e.dtype = n.at("dtype").str();
  e.numel = n.at("numel").i64();
  e.max_ulp = n.at("max_ulp").num_or_nan();
  e.max_abs = n.at("max_abs").num_or_nan();
  e.max_rel = n.at("max_rel").num_or_nan();
  e.nonfinite = n.at("nonfinite").i64();
  e.nan_result = n.at("nan_result").i64();
  e.nan_reference = n.at("nan_reference").i64();
  if (n.has("note")) e.note = n.at("note").str();
  return e;
}

json referee_json(const Referee& r) {
  return {{"mode", r.mode}, {"device", r.device}, {"ran", r.ran}, {"note", r.note}};
}

Referee read_referee(const Node& n) {
  Referee r;
  r.mode = n.at("mode").str();
  r.device = n.at("device").str();
  r.ran = n.at("ran").boolean();
  r.note = n.at("note").str();
  return r;
}

DifferenceClass read_difference_class(const Node& n) {
  const auto c = difference_class_from_string(n.str());
  if (!c) n.fail(fmt::format("unknown class '{}'", n.str()));
  return *c;
}

json classified_json(const Classified& c) {
  json j = {{"class", to_string(c.cls)},
            {"why", c.why},
            {"a_run", c.a_run},
            {"b_run", c.b_run},
            {"a", c.a ? reference_error_to_json(*c.a) : json(nullptr)},
            {"b", c.b ? reference_error_to_json(*c.b) : json(nullptr)}};
  if (!c.op.empty()) j["op"] = c.op;
  if (c.index_count > 0) j["indices"] = {{"first", c.indices}, {"count", c.index_count}};
  return j;
}

Classified read_classified(const Node& n) {
  Classified c;
  c.cls = read_difference_class(n.at("class"));
  c.why = n.at("why").str();
  c.a_run = n.at("a_run").str();
  c.b_run = n.at("b_run").str();
  if (const Node a = n.at("a"); !a.null()) c.a = read_reference_error(a);
  if (const Node b = n.at("b"); !b.null()) c.b = read_reference_error(b);
  if (n.has("op")) c.op = n.at("op").str();
  if (n.has("indices")) {
    c.indices = n.at("indices").at("first").i64s();
    c.index_count = n.at("indices").at("count").i64();
  }
  return c;
}

json class_summary_json(const ClassSummary& s) {
  json counts = json::object();
  for (int i = 0; i < kDifferenceClasses; ++i)
    counts[to_string(static_cast<DifferenceClass>(i))] = s.counts[static_cast<size_t>(i)];
  return {{"class", to_string(s.cls)}, {"tensor", s.tensor}, {"why", s.why}, {"counts", counts}};
}

ClassSummary read_class_summary(const Node& n) {
  ClassSummary s;
  s.cls = read_difference_class(n.at("class"));
  s.tensor = n.at("tensor").str();
  s.why = n.at("why").str();
  const Node counts = n.at("counts");
  for (int i = 0; i < kDifferenceClasses; ++i)
    s.counts[static_cast<size_t>(i)] = counts.at(to_string(static_cast<DifferenceClass>(i))).i32();
  return s;
}

json config_referee_json(const ConfigReferee& c) {
  json errors = json::array();
  for (const auto& e : c.errors) errors.push_back(reference_error_to_json(e));
  return {{"errors", errors}, {"summary", c.summary ? class_summary_json(*c.summary) : json(nullptr)}};
}

ConfigReferee read_config_referee(const Node& n) {
  ConfigReferee c;
  c.errors = n.at("errors").list(read_reference_error);
  if (const Node s = n.at("summary"); !s.null()) c.summary = read_class_summary(s);
  return c;
}

json fix_accuracy_json(const FixAccuracy& a) {
  json errors = json::array();
  for (const auto& e : a.errors) errors.push_back(reference_error_to_json(e));
  return {{"change", to_string(a.change)},
          {"downgrade", a.downgrade()},  // derived from "change", for readers of the JSON; not read back
          {"tensor", a.tensor},
          {"max_ulp", number_or_null(a.max_ulp)},
          {"from_max_ulp", number_or_null(a.from_ulp)},
          {"errors", errors}};
}

FixAccuracy read_fix_accuracy(const Node& n) {
  FixAccuracy a;
  const auto change = accuracy_change_from_string(n.at("change").str());
  if (!change) n.at("change").fail(fmt::format("unknown change '{}'", n.at("change").str()));
  a.change = *change;
  a.tensor = n.at("tensor").str();
  a.max_ulp = n.at("max_ulp").num_or_nan();
  a.from_ulp = n.at("from_max_ulp").num_or_nan();
  a.errors = n.at("errors").list(read_reference_error);
  return a;
}

}  // namespace detail
}  // namespace ra::report
