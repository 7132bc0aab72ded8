// SPDX-License-Identifier: Apache-2.0
#include "reports/baseline.h"

#include "reports/json_node.h"
#include "reports/json_read.h"

#include <fmt/format.h>

namespace ra::report {
namespace {

using json = nlohmann::ordered_json;
using detail::Node;
using detail::verdict;

json or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

json config_json(const ConfigResult& c) {
  json switches = json::array();
  for (const auto& s : c.switches)
    switches.push_back({{"key", s.key}, {"requested", or_null(s.requested)}, {"effective", s.effective}});
  json tensors = json::array();
  for (const auto& t : c.reference)
    tensors.push_back({{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"digest", t.digest}});
  return {{"config", c.name},
          {"verdict", to_string(c.verdict)},
          {"message", c.message},
          {"repeats", c.repeats},
          {"completed", c.completed},
          {"divergence", {{"diverging_repeats", c.diverging_repeats},
                          {"rate", c.divergence_rate},
                          {"ci95", {c.rate_ci_low, c.rate_ci_high}},
                          {"distinct_outcomes", c.distinct_outcomes}}},
          {"switches", switches},
          {"reference_digests", tensors}};
}

json target_json(const Target& t) {
  json configs = json::array();
  for (const auto& c : t.configs) configs.push_back(config_json(c));
  return {{"name", t.name},
          {"kind", t.kind},
          {"model_digest", or_null(t.model_digest)},
          {"input_digest", or_null(t.input_digest)},
          {"device", t.device},
          {"mode", t.mode},
          {"steps", t.steps},
          {"optimizer", t.optimizer.empty() ? json(nullptr) : json({{"name", t.optimizer}, {"lr", t.lr}})},
          {"seed", t.seed},
          {"inputs", t.inputs},
          {"verdict", to_string(t.verdict)},
          {"configs", configs}};
}

ConfigResult config(const Node& n) {
  ConfigResult c;
  c.name = n.at("config").str();
  c.verdict = verdict(n.at("verdict"));
  c.message = n.at("message").str();
  c.repeats = n.at("repeats").i32();
  c.completed = n.at("completed").i32();
  const Node d = n.at("divergence");
  c.diverging_repeats = d.at("diverging_repeats").i32();
  c.divergence_rate = d.at("rate").num();
  const Node ci = d.at("ci95");
  if (ci.size() != 2) ci.fail("expected two numbers");
  c.rate_ci_low = ci[0].num();
  c.rate_ci_high = ci[1].num();
  c.distinct_outcomes = d.at("distinct_outcomes").i32();
  c.switches = n.at("switches").list([](const Node& s) {
    return SwitchValue{s.at("key").str(), s.at("requested").str_or_null(), s.at("effective").str()};
  });
  c.reference = n.at("reference_digests").list([](const Node& t) {
    return TensorDigest{t.at("name").str(), t.at("dtype").str(), t.at("shape").i64s(), t.at("digest").str()};
  });
  c.tensor_count = c.reference.size();
  return c;
}

Target target(const Node& n) {
  Target t;
  t.name = n.at("name").str();
  t.kind = n.at("kind").str();
  t.model_digest = n.at("model_digest").str_or_null();
  t.input_digest = n.at("input_digest").str_or_null();
  t.device = n.at("device").str();
  t.mode = n.at("mode").str();
  t.steps = n.at("steps").i32();
  if (const Node o = n.at("optimizer"); !o.null()) {
    t.optimizer = o.at("name").str();
    t.lr = o.at("lr").num();
  }
  t.seed = n.at("seed").u64();
  t.inputs = n.at("inputs").strings();
  t.verdict = verdict(n.at("verdict"));
  t.configs = n.at("configs").list(config);
  return t;
}

// The schema's name, or "" when the document has none.
std::string schema_of(const json& j) {
  return j.is_object() && j.contains("schema") && j["schema"].is_string() ? j["schema"].get<std::string>() : "";
}

}  // namespace

json baseline_to_json(const Report& r) {
  json targets = json::array();
  for (const auto& t : r.targets) targets.push_back(target_json(t));
  return {{"schema", kBaselineSchema},
          {"schema_version", kBaselineSchemaVersion},
          {"tool", {{"name", "repro-audit"}, {"version", r.tool_version}}},
          {"command", r.command},
          {"verdict", to_string(r.verdict)},
          {"environment", r.environment},
          {"targets", targets}};
}

std::string render_baseline(const Report& r) {
  return baseline_to_json(r).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

Report baseline_from_json(const json& j) {
  const Node root{j, ""};
  if (schema_of(j) != kBaselineSchema)
    throw ReportError(schema_of(j).empty() ? fmt::format("not a repro-audit baseline (no \"schema\": \"{}\")", kBaselineSchema)
                                           : fmt::format("not a repro-audit baseline (its schema is '{}')", schema_of(j)));
  const Node version = root.at("schema_version");
  if (!version.v.is_number_integer()) version.fail("expected an integer");
  if (version.v.get<int64_t>() != kBaselineSchemaVersion)
    throw ReportError(fmt::format("baseline schema version {} is not supported by this repro-audit (it reads version {})",
                                  version.v.dump(), kBaselineSchemaVersion));
  Report r;
  r.tool_version = root.at("tool").at("version").str();
  r.command = root.at("command").strings();
  r.verdict = verdict(root.at("verdict"));
  const Node env = root.at("environment");
  if (!env.v.is_object()) env.fail("expected an object");
  r.environment = env.v;
  r.targets = root.at("targets").list(target);
  return r;
}

Report results_from_json(const json& j, std::string& schema) {
  schema = schema_of(j);
  if (schema == kBaselineSchema) return baseline_from_json(j);
  if (schema == kReportSchema) return report_from_json(j);
  throw ReportError(schema.empty() ? std::string("not a repro-audit baseline or report (no \"schema\")")
                                   : fmt::format("not a repro-audit baseline or report (its schema is '{}')", schema));
}

}  // namespace ra::report
