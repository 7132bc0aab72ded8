// SPDX-License-Identifier: Apache-2.0
// Batch invariance per output.
//
// The problem: an allowlist may accept one output's batch variance but not another's, and the
// report's classes join every output. The approach: classes per output, grouped from the start
// cells exactly as the analysis groups them for all outputs (audit/invariance/invariance_analysis.cpp),
// and an output is variant when it has several classes or a placement or warm-up that differs.
// The cost: one pass over the cells per output.
#include "reports/invariance_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace ra::report {
namespace {

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

}  // namespace ra::report
