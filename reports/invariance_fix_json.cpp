// SPDX-License-Identifier: Apache-2.0
// The invariance fix search's JSON (share/schema/report-v1.schema.json, invariance_fix) and its
// reader, side by side: null when no search ran, and every field written is read back. The clock's
// figures (forward pass times, cost ratios) sit in its "timing" object, candidates in their order.
#include "reports/invariance_model.h"
#include "reports/json_node.h"
#include "reports/json_parts.h"

namespace ra::report {
namespace {

using detail::json;
using detail::Node;

json optional_number(const std::optional<double>& x) { return x ? json(*x) : json(nullptr); }

json classes_json(const std::vector<SizeClass>& classes) {
  json out = json::array();
  for (const auto& k : classes) out.push_back(detail::size_class_json(k));
  return out;
}

json candidate_json(const InvarianceFixCandidate& c) {
  json j = {{"toggles", c.toggles}, {"config", c.config},   {"stage", c.stage},
            {"verdict", c.verdict}, {"message", c.message}, {"classes", classes_json(c.classes)},
            {"fixes", c.fixes},     {"cpp", c.cpp},         {"python", c.python}};
  if (c.anchors > 0) j["anchors"] = c.anchors;                                        // a screen's sweep only
  if (!c.accuracy.empty()) j["accuracy"] = c.accuracy, j["downgrade"] = c.downgrade;  // with the float64 referee
  return j;
}

InvarianceFixCandidate candidate_from(const Node& n) {
  InvarianceFixCandidate c;
  c.toggles = n.at("toggles").str();
  c.config = n.at("config").str();
  c.stage = n.at("stage").str();
  if (c.stage != "single" && c.stage != "combined" && c.stage != "skipped")
    n.at("stage").fail("expected single, combined or skipped");
  c.verdict = n.at("verdict").str();
  if (c.verdict != "invariant" && c.verdict != "variant" && c.verdict != "crashed" && c.verdict != "not run")
    n.at("verdict").fail("expected invariant, variant, crashed or not run");
  c.message = n.at("message").str();
  c.classes = n.at("classes").list(detail::read_size_class);
  if (n.has("anchors")) c.anchors = n.at("anchors").i32();
  c.fixes = n.at("fixes").boolean();
  c.cpp = n.at("cpp").str();
  c.python = n.at("python").str();
  if (n.has("accuracy")) c.accuracy = n.at("accuracy").str(), c.downgrade = n.at("downgrade").boolean();
  return c;
}

}  // namespace

json invariance_fix_to_json(const std::optional<InvarianceFix>& fix) {
  if (!fix) return nullptr;
  json candidates = json::array(), costs = json::array();
  for (const auto& c : fix->candidates) {
    candidates.push_back(candidate_json(c));
    costs.push_back({{"config", c.config},
                     {"forward_ms", optional_number(c.forward_ms)},
                     {"cost_ratio", optional_number(c.cost_ratio)},
                     {"cost_low", optional_number(c.cost_low)},
                     {"cost_high", optional_number(c.cost_high)},
                     {"cost_measurable", cost_measurable(c.cost_low, c.cost_high)}});
  }
  return {{"from", fix->from},
          {"sizes", fix->sizes},
          {"baseline_verdict", fix->baseline_verdict},
          {"candidates", candidates},
          {"conclusion", fix->conclusion},
          {"timing",
           {{"baseline_forward_ms", optional_number(fix->baseline_forward_ms)},
            {"search_ms", optional_number(fix->search_ms)},
            {"first_sweep_ms", optional_number(fix->first_sweep_ms)},
            {"candidates", costs}}}};
}

std::optional<InvarianceFix> invariance_fix_from_json(const json& j) {
  const Node n{j, "invariance.fix"};
  if (n.null()) return std::nullopt;
  InvarianceFix f;
  f.from = n.at("from").str();
  f.sizes = n.at("sizes").i64s();
  f.baseline_verdict = n.at("baseline_verdict").str();
  f.candidates = n.at("candidates").list(candidate_from);
  f.conclusion = n.at("conclusion").str();
  const Node t = n.at("timing");
  f.baseline_forward_ms = t.at("baseline_forward_ms").opt_num();
  if (t.has("search_ms")) f.search_ms = t.at("search_ms").opt_num();  // reports before issue 54 lack them
  if (t.has("first_sweep_ms")) f.first_sweep_ms = t.at("first_sweep_ms").opt_num();
  const Node costs = t.at("candidates");
  if (costs.size() != f.candidates.size()) costs.fail("expected one entry per candidate");
  for (size_t i = 0; i < f.candidates.size(); ++i) {
    if (costs[i].at("config").str() != f.candidates[i].config) costs[i].at("config").fail("not the candidate's");
    f.candidates[i].forward_ms = costs[i].at("forward_ms").opt_num();
    f.candidates[i].cost_ratio = costs[i].at("cost_ratio").opt_num();
    if (costs[i].has("cost_low")) f.candidates[i].cost_low = costs[i].at("cost_low").opt_num();
    if (costs[i].has("cost_high")) f.candidates[i].cost_high = costs[i].at("cost_high").opt_num();
  }
  return f;
}

}  // namespace ra::report
