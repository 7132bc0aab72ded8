// SPDX-License-Identifier: Apache-2.0
// The JSON writer and reader of the comparison with a baseline that a report carries
// (reports/baseline_model.h), side by side: the reader is the inverse of the writer above it, and
// names the JSON path of whatever it refuses. The baseline file itself is baseline_file.cpp.
#include "reports/json_parts.h"
#include "reports/render.h"

#include <fmt/format.h>

namespace ra::report::detail {
namespace {

json tensor_digest_json(const std::optional<TensorDigest>& t) {
  if (!t) return nullptr;
  return {{"dtype", t->dtype}, {"shape", t->shape}, {"digest", t->digest}};
}

std::optional<TensorDigest> tensor_digest(const Node& n, const std::string& name) {
  if (n.null()) return std::nullopt;
  return TensorDigest{name, n.at("dtype").str(), n.at("shape").i64s(), n.at("digest").str()};
}

json verdict_or_null(const std::optional<Verdict>& v) { return v ? json(to_string(*v)) : json(nullptr); }

std::optional<Verdict> opt_verdict(const Node& n) {
  return n.null() ? std::nullopt : std::optional<Verdict>(verdict(n));
}

json group_json(const DirectionGroup& g) {
  return {{"count", g.count}, {"tensor", g.tensor}, {"baseline_ulp", g.baseline_ulp}, {"current_ulp", g.current_ulp}};
}

DirectionGroup read_group(const Node& n) {
  return DirectionGroup{n.at("count").i32(), n.at("tensor").str(), n.at("baseline_ulp").num(),
                        n.at("current_ulp").num()};
}

json direction_json(const BaselineDirection& d) {
  return {{"note", d.note},
          {"reordering", d.reordering},
          {"baseline_max_ulp", d.baseline_max_ulp},
          {"current_max_ulp", d.current_max_ulp},
          {"further", group_json(d.further)},
          {"closer", group_json(d.closer)},
          {"unclassified", d.unclassified},
          {"unclassified_why", d.unclassified_why}};
}

BaselineDirection read_direction(const Node& n) {
  BaselineDirection d;
  d.note = n.at("note").str();
  d.reordering = n.at("reordering").i32();
  d.baseline_max_ulp = n.at("baseline_max_ulp").num();
  d.current_max_ulp = n.at("current_max_ulp").num();
  d.further = read_group(n.at("further"));
  d.closer = read_group(n.at("closer"));
  d.unclassified = n.at("unclassified").i32();
  d.unclassified_why = n.at("unclassified_why").str();
  return d;
}

json result_json(const BaselineResult& r) {
  json switches = json::array(), tensors = json::array();
  for (const auto& c : r.switch_changes) switches.push_back(change_json(c));
  for (const auto& t : r.differing_tensors) {
    json entry = {
        {"name", t.name}, {"baseline", tensor_digest_json(t.baseline)}, {"current", tensor_digest_json(t.current)}};
    if (t.stats) entry["stats"] = stats_to_json(*t.stats);  // only where measured: older reports stay as they were
    if (t.referee) entry["referee"] = classified_json(*t.referee);  // likewise, where classed
    tensors.push_back(std::move(entry));
  }
  json j = {{"target", r.target},
            {"config", r.config},
            {"status", to_string(r.status)},
            {"baseline_verdict", verdict_or_null(r.baseline_verdict)},
            {"verdict", verdict_or_null(r.current_verdict)},
            {"reason", r.reason},
            {"switch_changes", switches},
            {"explained_by", r.explained_by},
            {"tensors", r.tensors},
            {"differing", r.differing},
            {"differing_tensors", tensors},
            {"first_changed_op", r.first_changed_op ? root_cause_json(*r.first_changed_op) : json(nullptr)},
            {"op_note", r.op_note}};
  const auto repeats = [](const RepeatEvidence& e) {
    return json{{"completed", e.completed}, {"diverging", e.diverging}, {"ci95", {e.rate_low, e.rate_high}}};
  };
  if (r.baseline_repeats && r.current_repeats)  // only where both are known: older reports stay as they were
    j["repeats"] = {{"baseline", repeats(*r.baseline_repeats)}, {"current", repeats(*r.current_repeats)}};
  if (r.direction) j["direction"] = direction_json(*r.direction);  // digests differ; older reports lack it
  return j;
}

BaselineResult read_result(const Node& n) {
  BaselineResult r;
  r.target = n.at("target").str();
  r.config = n.at("config").str();
  const Node status = n.at("status");
  const auto s = baseline_status_from_string(status.str());
  if (!s) status.fail(fmt::format("unknown baseline status '{}'", status.str()));
  r.status = *s;
  r.baseline_verdict = opt_verdict(n.at("baseline_verdict"));
  r.current_verdict = opt_verdict(n.at("verdict"));
  r.reason = n.at("reason").str();
  r.switch_changes = n.at("switch_changes").list([](const Node& c) { return read_change(c); });
  r.explained_by = n.at("explained_by").strings();
  r.tensors = size_t(n.at("tensors").u64());
  r.differing = size_t(n.at("differing").u64());
  r.differing_tensors = n.at("differing_tensors").list([](const Node& t) {
    const std::string name = t.at("name").str();
    BaselineTensor out{name, tensor_digest(t.at("baseline"), name), tensor_digest(t.at("current"), name), {}};
    if (t.has("stats")) out.stats = read_stats(t.at("stats"));
    if (t.has("referee")) out.referee = read_classified(t.at("referee"));
    return out;
  });
  // Reports written before op streams have neither.
  if (n.has("first_changed_op") && !n.at("first_changed_op").null())
    r.first_changed_op = read_root_cause(n.at("first_changed_op"));
  if (n.has("op_note")) r.op_note = n.at("op_note").str();
  if (n.has("repeats")) {
    const auto repeats = [](const Node& e) {
      const Node ci = e.at("ci95");
      if (ci.size() != 2) ci.fail("expected two numbers");
      return RepeatEvidence{e.at("completed").i32(), e.at("diverging").i32(), ci[0].num(), ci[1].num()};
    };
    r.baseline_repeats = repeats(n.at("repeats").at("baseline"));
    r.current_repeats = repeats(n.at("repeats").at("current"));
  }
  if (n.has("direction")) r.direction = read_direction(n.at("direction"));
  return r;
}

}  // namespace

json baseline_json(const BaselineComparison& b) {
  json changes = json::array(), ignored = json::array(), results = json::array();
  for (const auto& c : b.changes) changes.push_back(change_json(c));
  for (const auto& c : b.ignored) ignored.push_back(change_json(c, false));
  json models = json::array();
  for (const auto& m : b.models)
    models.push_back({{"target", m.target}, {"relation", m.relation}, {"reason", m.reason}});
  for (const auto& r : b.results) results.push_back(result_json(r));
  json stack = json::array();
  for (const auto& v : b.stack) stack.push_back({{"name", v.name}, {"baseline", v.baseline}, {"current", v.current}});
  return {{"source", b.source},
          {"schema", b.schema},
          {"tool_version", b.tool_version},
          {"environment_changes", changes},
          {"ignored_changes", ignored},
          {"stack", stack},
          {"models", models},
          {"fail_on_explained", b.fail_on_explained},
          {"results", results}};
}

BaselineComparison read_baseline(const Node& n) {
  BaselineComparison b;
  b.source = n.at("source").str();
  b.schema = n.at("schema").str();
  b.tool_version = n.at("tool_version").str();
  b.changes = n.at("environment_changes").list([](const Node& c) { return read_change(c); });
  b.ignored = n.at("ignored_changes").list([](const Node& c) { return read_change(c, false); });
  // Reports written before the stack was named have none.
  if (n.has("stack"))
    b.stack = n.at("stack").list([](const Node& v) {
      return StackVersion{v.at("name").str(), v.at("baseline").str(), v.at("current").str()};
    });
  // Reports written before identities by content have none.
  if (n.has("models"))
    b.models = n.at("models").list([](const Node& m) {
      const std::string relation = m.at("relation").str();
      if (relation != "resaved" && relation != "other_weights")
        m.at("relation").fail("expected resaved or other_weights");
      return ModelChange{m.at("target").str(), relation, m.at("reason").str()};
    });
  b.results = n.at("results").list(read_result);
  if (n.has("fail_on_explained")) b.fail_on_explained = n.at("fail_on_explained").boolean();
  return b;
}

}  // namespace ra::report::detail
