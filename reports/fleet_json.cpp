// SPDX-License-Identifier: Apache-2.0
// The JSON writer and reader of a shard's place in its plan and of a merged report's fleet
// (reports/fleet_model.h), side by side: each reader is the inverse of the writer above it, and
// names the JSON path of whatever it refuses.
#include "reports/json_parts.h"

namespace ra::report::detail {

json shard_json(const ShardInfo& s) {
  json variables = json::object();
  for (const auto& [k, v] : s.variables) variables[k] = v;
  json census = json::array();
  for (const auto& c : s.census)
    census.push_back({{"target", c.target}, {"completed", c.completed}, {"alerts", c.alerts}});
  return {{"plan", s.plan},           {"index", s.index},
          {"count", s.count},         {"plan_cells", s.plan_cells},
          {"configs", s.configs},     {"first_cell", s.first_cell},
          {"last_cell", s.last_cell}, {"source", s.source},
          {"variables", variables},   {"host", s.host},
          {"tensors", s.tensors},     {"census", census}};
}

ShardInfo read_shard(const Node& n) {
  ShardInfo sh;
  sh.plan = n.at("plan").str();
  sh.index = n.at("index").i32();
  sh.count = n.at("count").i32();
  if (sh.count < 1 || sh.index < 1 || sh.index > sh.count) n.at("index").fail("not a shard K of N with 1 <= K <= N");
  sh.plan_cells = n.at("plan_cells").u64();
  sh.configs = n.at("configs").strings();
  if (sh.configs.empty() ? sh.plan_cells != 0 : sh.plan_cells % sh.configs.size() != 0)
    n.at("plan_cells").fail("not a whole number of targets x configurations");
  sh.first_cell = n.at("first_cell").u64();
  sh.last_cell = n.at("last_cell").u64();
  if (sh.first_cell > sh.last_cell || sh.last_cell > sh.plan_cells)
    n.at("last_cell").fail("not a range of the plan's cells");
  sh.source = n.at("source").str();
  const Node variables = n.at("variables");
  if (!variables.v.is_object()) variables.fail("expected an object");
  for (const auto& item : variables.v.items()) sh.variables.emplace_back(item.key(), variables.at(item.key()).str());
  sh.host = n.at("host").str();
  sh.tensors = n.at("tensors").str();
  sh.census = n.at("census").list([](const Node& c) {
    return CensusRecord{c.at("target").str(), c.at("completed").boolean(), c.at("alerts").strings()};
  });
  return sh;
}

json fleet_json(const Fleet& f) {
  json shards = json::array(), machines = json::array(), failures = json::array(), cells = json::array();
  for (const auto& s : f.shards)
    shards.push_back({{"index", s.index},
                      {"host", s.host},
                      {"source", s.source},
                      {"first_cell", s.first_cell},
                      {"last_cell", s.last_cell},
                      {"machine", s.machine},
                      {"wall_ms", s.wall_ms}});
  for (const auto& m : f.machines) {
    json changes = json::array();
    for (const auto& c : m.changes) changes.push_back(change_json(c));
    machines.push_back({{"shards", m.shards}, {"changes", changes}, {"environment", m.environment}});
  }
  for (const auto& x : f.failures)
    failures.push_back({{"target", x.target},
                        {"config", x.config},
                        {"status", x.status},
                        {"host", x.host},
                        {"shard", x.shard},
                        {"machine", x.machine}});
  for (const auto& c : f.cells)
    cells.push_back({{"target", c.target}, {"config", c.config}, {"outcomes", c.outcomes}, {"same", c.same}});
  return {{"count", f.count}, {"plan", f.plan},       {"replicated", f.replicated},
          {"shards", shards}, {"machines", machines}, {"failures", failures},
          {"cells", cells},   {"notes", f.notes}};
}

Fleet read_fleet(const Node& n) {
  Fleet f;
  f.count = n.at("count").i32();
  f.plan = n.at("plan").str();
  f.replicated = n.at("replicated").boolean();
  f.shards = n.at("shards").list([](const Node& s) {
    return FleetShard{s.at("index").i32(),     s.at("host").str(),    s.at("source").str(), s.at("first_cell").u64(),
                      s.at("last_cell").u64(), s.at("machine").i32(), s.at("wall_ms").num()};
  });
  f.machines = n.at("machines").list([](const Node& m) {
    FleetMachine out;
    out.shards = m.at("shards").list([](const Node& k) { return k.i32(); });
    out.changes = m.at("changes").list([](const Node& c) { return read_change(c); });
    const Node env = m.at("environment");
    if (!env.v.is_object()) env.fail("expected an object (the environment fingerprint)");
    out.environment = env.v;
    return out;
  });
  f.failures = n.at("failures").list([](const Node& x) {
    return FleetFailure{x.at("target").str(), x.at("config").str(), x.at("status").str(),
                        x.at("host").str(),   x.at("shard").i32(),  x.at("machine").i32()};
  });
  f.cells = n.at("cells").list([](const Node& c) {
    return FleetCell{c.at("target").str(), c.at("config").str(), c.at("outcomes").strings(), c.at("same").boolean()};
  });
  f.notes = n.at("notes").strings();
  return f;
}

}  // namespace ra::report::detail
