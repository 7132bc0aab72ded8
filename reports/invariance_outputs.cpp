// SPDX-License-Identifier: Apache-2.0
// Batch invariance per output, and what a baseline keeps of an invariance report.
//
// The problem: a baseline must hold the classes of sizes, so that a new torch that moves a
// boundary ({1,2,3}|{4…} becoming {1…7}|{8…}) is found; and an allowlist may accept one output's
// variance but not another's. The report's classes join every output, and a baseline file keeps
// no cells (they are large and hold the clock's neighbours).
// The approach: classes per output, grouped from the start cells exactly as the analysis groups
// them for all outputs (audit/invariance/invariance_analysis.cpp), written into the baseline's
// "invariance" section beside the joined classes, position and warm-up dependence; read back into
// InvarianceConfig::by_output. No paths: the model is kept by its file name.
// The cost: one pass over the cells; a baseline grows by a few sizes per output.
#include "reports/invariance_model.h"
#include "reports/json_node.h"
#include "reports/json_parts.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

namespace ra::report {
namespace {

using detail::json;
using detail::Node;

std::vector<SizeClass> group(const std::map<int64_t, std::string>& signatures) {
  std::vector<SizeClass> classes;
  std::map<std::string, size_t> index;
  for (const auto& [size, sig] : signatures) {
    const auto [it, fresh] = index.emplace(sig, classes.size());
    if (fresh) classes.push_back({});
    classes[it->second].sizes.push_back(size);
  }
  for (auto& k : classes) k.reference = !k.sizes.empty() && k.sizes.front() == 1;
  return classes;
}

std::vector<std::string> output_names(const InvarianceConfig& c) {
  std::vector<std::string> names;
  for (const auto& cell : c.cells)
    for (const auto& r : cell.rows)
      if (std::find(names.begin(), names.end(), r.output) == names.end()) names.push_back(r.output);
  return names;
}

// True when a placement other than the start, or the second call, gave `output` other bits.
bool placement_differs(const InvarianceConfig& c, const std::string& output) {
  std::map<std::pair<int64_t, int>, std::string> start;
  for (const auto& cell : c.cells)
    if (cell.placement == std::string("start"))
      for (const auto& r : cell.rows)
        if (r.output == output) start[{cell.size, r.anchor}] = r.digest;
  for (const auto& cell : c.cells)
    for (const auto& r : cell.rows) {
      if (r.output != output || cell.placement == std::string("start")) continue;
      if (cell.placement == std::string("second-call") ? !r.equal : start[{cell.size, r.anchor}] != r.digest)
        return true;
    }
  return false;
}

json baseline_classes_json(const std::vector<SizeClass>& classes) {
  json out = json::array();
  for (const auto& k : classes) out.push_back(k.sizes);
  return out;
}

std::vector<SizeClass> baseline_classes_from(const Node& n) {
  std::vector<SizeClass> classes = n.list([](const Node& k) { return SizeClass{k.i64s(), false}; });
  for (auto& k : classes) k.reference = !k.sizes.empty() && k.sizes.front() == 1;
  return classes;
}

json baseline_config_json(const InvarianceConfig& c) {
  json outputs = json::array();
  for (const auto& o : output_classes(c))
    outputs.push_back({{"output", o.output}, {"classes", baseline_classes_json(o.classes)}});
  return {{"config", c.config},
          {"verdict", c.verdict},
          {"classes", baseline_classes_json(c.classes)},
          {"position_dependent", c.position_dependent},
          {"warmup_dependent", c.warmup_dependent},
          {"outputs", outputs}};
}

InvarianceConfig baseline_config_from(const Node& n) {
  InvarianceConfig c;
  detail::read_invariance_config_head(n, c);
  c.classes = baseline_classes_from(n.at("classes"));
  c.by_output = n.at("outputs").list([](const Node& o) {
    return OutputClasses{o.at("output").str(), baseline_classes_from(o.at("classes"))};
  });
  return c;
}

}  // namespace

std::vector<OutputClasses> output_classes(const InvarianceConfig& c) {
  if (c.cells.empty()) return c.by_output;
  std::vector<OutputClasses> out;
  for (const auto& name : output_names(c)) {
    std::map<int64_t, std::string> signatures;
    for (const auto& cell : c.cells) {
      if (cell.placement != std::string("start")) continue;
      std::vector<std::string> rows;
      for (const auto& r : cell.rows)
        if (r.output == name) rows.push_back(fmt::format("{}:{}", r.anchor, r.digest));
      std::sort(rows.begin(), rows.end());
      signatures[cell.size] = fmt::format("{}", fmt::join(rows, ";"));
    }
    out.push_back({name, group(signatures)});
  }
  return out;
}

std::vector<std::string> variant_outputs(const InvarianceConfig& c) {
  std::vector<std::string> out;
  for (const auto& o : output_classes(c))
    if (o.classes.size() > 1 || placement_differs(c, o.output)) out.push_back(o.output);
  return out;
}

void detail::read_invariance_config_head(const Node& n, InvarianceConfig& c) {
  c.config = n.at("config").str();
  c.verdict = n.at("verdict").str();
  if (c.verdict != "invariant" && c.verdict != "variant" && c.verdict != "crashed")
    n.at("verdict").fail("expected invariant, variant or crashed");
  c.position_dependent = n.at("position_dependent").i64s();
  c.warmup_dependent = n.at("warmup_dependent").i64s();
}

void detail::read_invariance_head(const Node& n, Invariance& inv) {
  inv.model = n.at("model").str();
  inv.kind = n.at("kind").str();
  inv.device = n.at("device").str();
  inv.inputs = n.at("inputs").strings();
  inv.rows = n.at("rows").i32();
  inv.filler = n.at("filler").str();
  inv.sizes = n.at("sizes").str();
  inv.budget = n.at("budget").i64();
  inv.outputs = n.at("outputs").strings();
}

json invariance_baseline_to_json(const Invariance& inv) {
  json configs = json::array();
  for (const auto& c : inv.configs) configs.push_back(baseline_config_json(c));
  return {{"model", std::filesystem::path(inv.model).filename().string()},
          {"kind", inv.kind},
          {"device", inv.device},
          {"inputs", inv.inputs},
          {"rows", inv.rows},
          {"filler", inv.filler},
          {"sizes", inv.sizes},
          {"budget", inv.budget},
          {"outputs", inv.outputs},
          {"configs", configs}};
}

Invariance invariance_baseline_from_json(const json& j) {
  const Node n{j, "invariance"};
  Invariance inv;
  detail::read_invariance_head(n, inv);
  inv.configs = n.at("configs").list(baseline_config_from);
  inv.control.detected = true;  // a baseline keeps findings only; its control was judged when it was saved
  return inv;
}

}  // namespace ra::report
