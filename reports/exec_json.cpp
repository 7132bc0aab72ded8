// SPDX-License-Identifier: Apache-2.0
// The JSON writer and reader of what an `exec` target adds (reports/exec_model.h), side by side:
// the reader is the inverse of the writer above it, and names the JSON path of whatever it refuses.
#include "reports/json_parts.h"

#include <fmt/format.h>

#include <algorithm>

namespace ra::report::detail {

json exec_json(const ExecFacts& e) {
  json artifacts = json::array(), metrics = json::array(), checklist = json::array();
  for (const auto& a : e.artifacts)
    artifacts.push_back(
        {{"name", a.name}, {"pattern", a.pattern}, {"kind", a.kind}, {"note", a.note}, {"bytes", a.bytes}});
  for (const auto& m : e.metrics)
    metrics.push_back({{"name", m.name}, {"regex", m.regex}, {"occurrences", m.occurrences}});
  for (const auto& c : e.checklist)
    checklist.push_back({{"id", c.id},
                         {"status", c.status},
                         {"text", c.text},
                         {"where", c.where},
                         {"ranks", c.ranks},
                         {"artifact", c.artifact}});
  json ranks = nullptr;
  if (e.ranks_equal)
    ranks = {{"equal", e.ranks_equal->equal},       {"compared", e.ranks_equal->compared},
             {"config", e.ranks_equal->config},     {"repeat", e.ranks_equal->repeat},
             {"artifact", e.ranks_equal->artifact}, {"rank", e.ranks_equal->rank},
             {"tensor", e.ranks_equal->tensor}};
  return {{"command", e.command},
          {"executable", e.executable},
          {"working_directory", e.working_directory},
          {"artifacts", artifacts},
          {"metrics", metrics},
          {"hook", e.hook},
          {"hook_note", e.hook_note},
          {"checklist", checklist},
          {"world_size", e.world_size},
          {"backend", e.backend},
          {"launcher_set", e.launcher_set},
          {"ranks_equal", ranks}};
}

ExecFacts read_exec(const Node& n) {
  ExecFacts e;
  e.command = n.at("command").strings();
  e.executable = n.at("executable").str();
  e.working_directory = n.at("working_directory").str();
  e.artifacts = n.at("artifacts").list([](const Node& a) {
    return ExecArtifact{a.at("name").str(), a.at("pattern").str(), a.at("kind").str(), a.at("note").str(),
                        a.at("bytes").i64()};
  });
  e.metrics = n.at("metrics").list([](const Node& m) {
    return ExecMetric{m.at("name").str(), m.at("regex").str(), m.at("occurrences").i32()};
  });
  e.hook = n.at("hook").str();
  e.hook_note = n.at("hook_note").str();
  e.checklist = n.at("checklist").list([](const Node& c) {
    ChecklistItem item;
    item.id = c.at("id").str();
    item.status = c.at("status").str();
    if (item.status != "ok" && item.status != "missing" && item.status != "not-applicable" && item.status != "note")
      c.at("status").fail(fmt::format("unknown checklist status '{}'", item.status));
    item.text = c.at("text").str();
    item.where = c.at("where").str();
    item.ranks = c.at("ranks").list([](const Node& r) { return r.i32(); });
    item.artifact = c.at("artifact").str();
    return item;
  });
  e.world_size = n.at("world_size").i32();
  e.backend = n.at("backend").str();
  const Node launcher = n.at("launcher_set");
  if (!launcher.v.is_object()) launcher.fail("expected an object of strings");
  for (const auto& item : launcher.v.items()) e.launcher_set[item.key()] = launcher.at(item.key()).str();
  if (const Node r = n.at("ranks_equal"); !r.null())
    e.ranks_equal =
        RanksEqual{r.at("equal").boolean(), r.at("config").str(), r.at("repeat").i32(),  r.at("artifact").str(),
                   r.at("rank").i32(),      r.at("tensor").str(), r.at("compared").i32()};
  return e;
}

ExecCompared compared_from_digests(const ExecFacts& e, const std::vector<TensorDigest>& reference) {
  ExecCompared out;
  for (const auto& d : reference) out.metrics += d.name.rfind("metric:", 0) == 0;
  for (const auto& a : e.artifacts)
    out.files += std::any_of(reference.begin(), reference.end(), [&](const TensorDigest& d) {
      return d.name == a.name || (d.name.size() > a.name.size() && d.name.compare(0, a.name.size(), a.name) == 0 &&
                                  d.name[a.name.size()] == ':');
    });
  return out;
}

}  // namespace ra::report::detail
