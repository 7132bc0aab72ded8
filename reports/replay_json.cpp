// SPDX-License-Identifier: Apache-2.0
// The JSON writer and reader of restart-replay (reports/replay_model.h), side by side: the reader
// is the inverse of the writer above it, and names the JSON path of whatever it refuses.
#include "reports/json_parts.h"

#include <fmt/format.h>

namespace ra::report::detail {
namespace {

ReplayVerdict replay_verdict(const Node& n) {
  const std::string s = n.str();
  for (const auto v :
       {ReplayVerdict::Reproducible, ReplayVerdict::Diverged, ReplayVerdict::Inconclusive, ReplayVerdict::Crashed})
    if (s == to_string(v)) return v;
  n.fail(fmt::format("unknown replay verdict '{}'", s));
}

}  // namespace

json replay_json(const Replay& r) {
  json components = json::array();
  for (const auto& c : r.components)
    components.push_back({{"name", c.name},
                          {"description", c.description},
                          {"tensors", c.tensors},
                          {"in_checkpoint", c.in_checkpoint},
                          {"saved_match", c.saved_match},
                          {"restored_match", c.restored_match},
                          {"differing", c.differing}});
  return {{"config", r.config.empty() ? json(nullptr) : json(r.config)},
          {"steps_before", r.steps_before},
          {"steps_after", r.steps_after},
          {"omit", r.omit},
          {"verdict", to_string(r.verdict)},
          {"reason", r.reason},
          {"components", components},
          {"tensors_compared", r.tensors_compared},
          {"differing_tensors", findings_json(r.differing)}};
}

Replay read_replay(const Node& n) {
  Replay r;
  r.config = n.at("config").str_or_null();
  r.steps_before = n.at("steps_before").i32();
  r.steps_after = n.at("steps_after").i32();
  r.omit = n.at("omit").strings();
  r.verdict = replay_verdict(n.at("verdict"));
  r.reason = n.at("reason").str();
  r.components = n.at("components").list([](const Node& c) {
    ReplayComponent out;
    out.name = c.at("name").str();
    out.description = c.at("description").str();
    out.tensors = size_t(c.at("tensors").u64());
    out.in_checkpoint = c.at("in_checkpoint").boolean();
    out.saved_match = c.at("saved_match").boolean();
    out.restored_match = c.at("restored_match").boolean();
    out.differing = c.at("differing").strings();
    return out;
  });
  r.tensors_compared = size_t(n.at("tensors_compared").u64());
  r.differing = read_findings(n.at("differing_tensors"));
  return r;
}

}  // namespace ra::report::detail
