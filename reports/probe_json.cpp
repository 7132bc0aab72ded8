// SPDX-License-Identifier: Apache-2.0
// The JSON writer and reader of what a probe target adds (reports/probe_model.h), side by side:
// each reader is the inverse of the writer above it, and names the JSON path of whatever it refuses.
#include "reports/json_parts.h"

namespace ra::report::detail {

json probe_json(const ProbeFacts& p) {
  json j = {{"family", p.family},
            {"op", p.op},
            {"direction", p.direction},
            {"role", p.role},
            {"form", p.form},
            {"knowledge_id", p.knowledge_id.empty() ? json(nullptr) : json(p.knowledge_id)},
            {"documented", p.documented},
            {"documented_device", p.documented_device.empty() ? json(nullptr) : json(p.documented_device)},
            {"doc_row", p.doc_row},
            {"advice", p.advice},
            {"census", p.census.empty() ? json(nullptr) : json(p.census)},
            {"alerts", p.alerts},
            {"disagreements", p.disagreements}};
  // Only the batch-invariance family has classes: other probes' documents stay as they were.
  for (const auto& b : p.batch_classes) j["batch_classes"].push_back({{"config", b.config}, {"classes", b.classes}});
  return j;
}

ProbeFacts read_probe(const Node& n) {
  ProbeFacts p;
  p.family = n.at("family").str();
  p.op = n.at("op").str();
  p.direction = n.at("direction").str();
  p.role = n.at("role").str();
  p.form = n.at("form").str();
  p.knowledge_id = n.at("knowledge_id").str_or_null();
  p.documented = n.at("documented").str();
  p.documented_device = n.at("documented_device").str_or_null();
  p.doc_row = n.at("doc_row").str();
  p.advice = n.at("advice").str();
  p.census = n.at("census").str_or_null();
  p.alerts = n.at("alerts").strings();
  p.disagreements = n.at("disagreements").strings();
  if (n.has("batch_classes"))
    p.batch_classes = n.at("batch_classes").list([](const Node& b) {
      return BatchClasses{b.at("config").str(), b.at("classes").list([](const Node& c) { return c.i64s(); })};
    });
  return p;
}

json census_json(const Census& c) {
  return {{"config", c.config},
          {"alerted_diverged", c.alerted_diverged},
          {"alerted_stable", c.alerted_stable},
          {"silent_diverged", c.silent_diverged},
          {"stable", c.stable},
          {"not_run", c.not_run}};
}

Census read_census(const Node& n) {
  Census c;
  c.config = n.at("config").str();
  c.alerted_diverged = n.at("alerted_diverged").strings();
  c.alerted_stable = n.at("alerted_stable").strings();
  c.silent_diverged = n.at("silent_diverged").strings();
  c.stable = n.at("stable").strings();
  c.not_run = n.at("not_run").strings();
  return c;
}

}  // namespace ra::report::detail
