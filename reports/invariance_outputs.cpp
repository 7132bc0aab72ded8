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
// The cost: one pass over the cells (rows_by_output); a baseline grows by a few sizes per output.
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
#include <unordered_map>

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

// Each output's rows, gathered in one pass over the cells in first-seen order of the outputs, so
// that the per-output functions below cost the rows once, not once per output (an invariance
// report may name 250,000 outputs).
struct OutputRows {
  std::string output;
  std::vector<std::pair<const InvarianceCell*, const RowComparison*>> rows;  // in cell order
};

std::vector<OutputRows> rows_by_output(const InvarianceConfig& c) {
  std::vector<OutputRows> out;
  std::unordered_map<std::string, size_t> index;
  for (const auto& cell : c.cells)
    for (const auto& r : cell.rows) {
      const auto [it, fresh] = index.emplace(r.output, out.size());
      if (fresh) out.push_back({r.output, {}});
      out[it->second].rows.emplace_back(&cell, &r);
    }
  return out;
}

// True when a placement other than the start, or the second call, gave the output other bits.
bool placement_differs(const OutputRows& o) {
  std::map<std::pair<int64_t, int>, std::string> start;
  for (const auto& [cell, r] : o.rows)
    if (cell->placement == std::string("start")) start[{cell->size, r->anchor}] = r->digest;
  for (const auto& [cell, r] : o.rows) {
    if (cell->placement == std::string("start") || cell->placement == std::string("block")) continue;
    const auto at = start.find({cell->size, r->anchor});
    const std::string& reference = at == start.end() ? std::string() : at->second;
    if (cell->placement == std::string("second-call") ? !r->equal : reference != r->digest) return true;
  }
  return false;
}

// The output's classes of sizes, from the start cells (a start cell without a row of the output
// counts as an empty signature, and a later start cell of the same size replaces an earlier one).
// A verify block length counts as whether each anchor got the decode step's bits at every token of
// every place it was measured at (its cells), as the analysis counts it.
std::vector<SizeClass> classes_of(const InvarianceConfig& c, const OutputRows& o) {
  std::unordered_map<const InvarianceCell*, std::vector<std::string>> rows;
  std::map<std::pair<int64_t, int>, bool> agree;  // block lengths: (size, anchor) -> every token equal
  for (const auto& [cell, r] : o.rows)
    if (cell->placement == std::string("start"))
      rows[cell].push_back(fmt::format("{}:{}", r->anchor, r->digest));
    else if (cell->placement == std::string("block"))
      agree.try_emplace({cell->size, r->anchor}, true).first->second &= r->equal;
  std::map<int64_t, std::string> signatures;
  for (const auto& cell : c.cells) {
    if (cell.placement == std::string("block")) {
      signatures[cell.size].clear();  // filled below from every place; a length without the output's rows stays empty
      continue;
    }
    if (cell.placement != std::string("start")) continue;
    auto it = rows.find(&cell);
    if (it == rows.end()) {
      signatures[cell.size].clear();
      continue;
    }
    std::sort(it->second.begin(), it->second.end());
    signatures[cell.size] = fmt::format("{}", fmt::join(it->second, ";"));
  }
  std::map<int64_t, std::vector<std::string>> blocks;
  for (const auto& [key, same] : agree) blocks[key.first].push_back(fmt::format("{}:{}", key.second, same ? "=" : "≠"));
  for (const auto& [size, parts] : blocks) signatures[size] = fmt::format("{}", fmt::join(parts, ";"));
  return group(signatures);
}

json baseline_classes_json(const std::vector<SizeClass>& classes) {
  json out = json::array();
  for (const auto& k : classes) out.push_back(k.sizes);
  return out;
}

std::vector<SizeClass> baseline_classes_from(const Node& n) {
  std::vector<SizeClass> classes = n.list([](const Node& k) { return SizeClass{k.i64s(), false, {}, std::nullopt}; });
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
  for (const auto& o : rows_by_output(c)) out.push_back({o.output, classes_of(c, o)});
  return out;
}

std::vector<std::string> variant_outputs(const InvarianceConfig& c) {
  std::vector<std::string> out;
  if (c.cells.empty()) {
    for (const auto& o : c.by_output)
      if (o.classes.size() > 1) out.push_back(o.output);
    return out;
  }
  for (const auto& o : rows_by_output(c))
    if (classes_of(c, o).size() > 1 || placement_differs(o)) out.push_back(o.output);
  return out;
}

void detail::read_invariance_config_head(const Node& n, InvarianceConfig& c) {
  c.config = n.at("config").str();
  c.verdict = n.at("verdict").str();
  if (c.verdict != "invariant" && c.verdict != "variant" && c.verdict != "crashed" && c.verdict != "nondeterministic")
    n.at("verdict").fail("expected invariant, variant, nondeterministic or crashed");
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
  if (n.has("axis")) {  // reports before the serving axes have none: the batch's
    inv.axis = n.at("axis").str();
    if (inv.axis != "batch" && inv.axis != "pad-right" && inv.axis != "pad-left" && inv.axis != "verify")
      n.at("axis").fail("expected batch, pad-right, pad-left or verify");
  }
  if (n.has("draft")) inv.draft = n.at("draft").i32();
  // Verify reports before issue 54 measured each block length at one place.
  if (inv.axis == "verify") inv.positions = n.has("positions") ? n.at("positions").i32() : 1;
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
          {"axis", inv.axis},
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
