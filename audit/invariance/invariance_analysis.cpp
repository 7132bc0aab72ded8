// SPDX-License-Identifier: Apache-2.0
#include "audit/invariance/invariance_analysis.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace ra::invariance {
namespace {

using report::InvarianceCell;
using report::InvarianceConfig;
using report::SizeClass;

// The start placement's bits per size: "anchor:output:digest;" for every row, in the cell's order.
std::map<int64_t, std::string> start_signatures(const InvarianceConfig& c) {
  std::map<int64_t, std::string> out;
  for (const auto& cell : c.cells) {
    if (cell.placement != "start") continue;
    std::vector<std::string> rows;
    for (const auto& r : cell.rows) rows.push_back(fmt::format("{}:{}:{}", r.anchor, r.output, r.digest));
    std::sort(rows.begin(), rows.end());
    out[cell.size] = fmt::format("{}", fmt::join(rows, ";"));
  }
  return out;
}

std::vector<SizeClass> size_classes(const std::map<int64_t, std::string>& signatures) {
  std::vector<SizeClass> classes;
  std::map<std::string, size_t> index;
  for (const auto& [size, sig] : signatures) {  // ascending sizes: classes come by their smallest
    const auto [it, fresh] = index.emplace(sig, classes.size());
    if (fresh) classes.push_back({});
    classes[it->second].sizes.push_back(size);
  }
  for (auto& k : classes) k.reference = !k.sizes.empty() && k.sizes.front() == 1;
  return classes;
}

// Sizes at which a placement other than the start gave a row other bits than the start did.
std::vector<int64_t> position_sizes(const InvarianceConfig& c) {
  std::map<std::tuple<int64_t, int, std::string>, std::string> start;
  for (const auto& cell : c.cells)
    if (cell.placement == "start")
      for (const auto& r : cell.rows) start[{cell.size, r.anchor, r.output}] = r.digest;
  std::set<int64_t> sizes;
  for (const auto& cell : c.cells) {
    if (cell.placement == "start" || cell.placement == "second-call") continue;
    for (const auto& r : cell.rows)
      if (const auto it = start.find({cell.size, r.anchor, r.output}); it != start.end() && it->second != r.digest)
        sizes.insert(cell.size);
  }
  return {sizes.begin(), sizes.end()};
}

std::vector<int64_t> warmup_sizes(const InvarianceConfig& c) {
  std::set<int64_t> sizes;
  for (const auto& cell : c.cells)
    if (cell.placement == "second-call")
      for (const auto& r : cell.rows)
        if (!r.equal) sizes.insert(cell.size);
  return {sizes.begin(), sizes.end()};
}

std::vector<int64_t> tried(const InvarianceConfig& c) { return report::tried_sizes(c); }

// The class a user should pad or bucket to: the one with the most sizes tried, then the larger sizes.
const SizeClass& widest(const std::vector<SizeClass>& classes) {
  return *std::max_element(classes.begin(), classes.end(), [](const SizeClass& a, const SizeClass& b) {
    return a.sizes.size() != b.sizes.size() ? a.sizes.size() < b.sizes.size() : a.sizes.back() < b.sizes.back();
  });
}

std::vector<std::string> size_advice(const InvarianceConfig& c) {
  const std::vector<int64_t> all = tried(c);
  if (c.classes.size() <= 1)
    return {fmt::format("every batch size tried ({}) gives a row the same bits: batch freely within them",
                        report::sizes_text(all, all))};
  std::vector<std::string> advice;
  const SizeClass& ref = c.classes.front();
  const bool alone = ref.sizes == std::vector<int64_t>{1};
  if (alone)
    advice.push_back(c.classes.size() == 2
                         ? fmt::format("batch 1 is the odd one: never compare unbatched with batched results; every "
                                       "batch of {{{}}} gives a row the same bits",
                                       report::sizes_text(c.classes.back().sizes, all))
                         : "batch 1 is the odd one: never compare unbatched with batched results");
  if (!alone || c.classes.size() > 2) {
    std::vector<SizeClass> batched(c.classes.begin() + (alone ? 1 : 0), c.classes.end());
    advice.push_back(fmt::format("pad every batch to a size in {{{}}}: those sizes give a row the same bits",
                                 report::sizes_text(widest(batched).sizes, all)));
  }
  if (c.classes.size() > 2)
    advice.push_back(fmt::format("or bucket batches so that results you compare come from one class: {}",
                                 report::classes_text(c.classes, all)));
  if (!alone)
    advice.push_back(fmt::format("results compared with a row run alone must come from batches of {{{}}}",
                                 report::sizes_text(ref.sizes, all)));
  return advice;
}

}  // namespace

void nondeterministic(InvarianceConfig& c, const std::string& why) {
  c.verdict = "nondeterministic";
  c.message = why;
  c.classes.clear(), c.position_dependent.clear(), c.warmup_dependent.clear();
  c.advice = {
      "no batch size makes a nondeterministic model's rows reproducible, so padding does not help: find what draws "
      "new numbers on every call (dropout left in training mode, a sampling step, a noise term) and turn it off or "
      "seed it before each call, then audit again"};
}

void analyse(InvarianceConfig& c) {
  if (c.verdict == "crashed" || c.verdict == "nondeterministic") return;
  c.classes = size_classes(start_signatures(c));
  c.position_dependent = position_sizes(c);
  c.warmup_dependent = warmup_sizes(c);
  const bool invariant = c.classes.size() <= 1 && c.position_dependent.empty() && c.warmup_dependent.empty();
  c.verdict = invariant ? "invariant" : "variant";
  c.advice = size_advice(c);
  const std::vector<int64_t> all = tried(c);
  if (!c.position_dependent.empty())
    c.advice.push_back(
        fmt::format("a row's bits depend on its place in the batch at sizes {}: keep each row at the same place "
                    "(no shuffling, padding on the same side) in results you compare",
                    report::sizes_text(c.position_dependent, all)));
  if (!c.warmup_dependent.empty())
    c.advice.push_back(
        fmt::format("the first call of a batch differs from the second at sizes {}: call the model once per batch "
                    "size before the results you compare",
                    report::sizes_text(c.warmup_dependent, all)));
}

std::string padding_advice(const InvarianceConfig& c) {
  if (c.classes.size() <= 1) return "";
  const std::vector<int64_t> all = tried(c);
  const bool alone = c.classes.front().sizes == std::vector<int64_t>{1};
  const std::vector<SizeClass> batched(c.classes.begin() + (alone ? 1 : 0), c.classes.end());
  std::string out = fmt::format("pad every batch to a size in {{{}}}", report::sizes_text(widest(batched).sizes, all));
  if (alone) out += " and never compare a row run alone with batched results";
  if (c.classes.size() > 2)
    out += fmt::format(", or bucket batches by class: {}", report::classes_text(c.classes, all));
  return out;
}

void compare_configs(std::vector<InvarianceConfig>& configs) {
  std::vector<std::string> invariant;
  for (const auto& c : configs)
    if (c.verdict == "invariant") invariant.push_back(c.config);
  if (invariant.empty() && configs.size() > 1) {
    std::vector<std::string> names;
    for (const auto& c : configs) names.push_back(c.config);
    for (auto& c : configs)
      if (c.verdict == "variant")
        c.advice.push_back(fmt::format(
            "none of the configurations tried ({}) is invariant: padding or bucketing to one class is the fix",
            fmt::join(names, ", ")));
  }
  if (invariant.empty()) return;
  for (auto& c : configs)
    if (c.verdict == "variant")
      c.advice.push_back(fmt::format("configuration{} {} {} invariant: {} switches fix it here",
                                     invariant.size() == 1 ? "" : "s", fmt::join(invariant, ", "),
                                     invariant.size() == 1 ? "is" : "are", invariant.size() == 1 ? "its" : "their"));
}

}  // namespace ra::invariance
