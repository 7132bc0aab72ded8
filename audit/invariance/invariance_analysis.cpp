// SPDX-License-Identifier: Apache-2.0
#include "audit/invariance/invariance_analysis.h"

#include "audit/invariance/invariance_referee.h"

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

// What puts a size in its class: the start placement's bits, "anchor:output:digest;" for every
// row, sorted. A verify block's tokens are other tokens at every size, so a block's class is which
// anchors' outputs got the decode step's bits at every token ("anchor:output:=" or ":≠"): the
// blocks that agree with decode share the decode step's class.
// A block length holds only where every token got the decode step's bits at every place it was
// measured at (its cells, one per place), so its agreement is gathered over all of them.
std::map<int64_t, std::string> start_signatures(const InvarianceConfig& c) {
  std::map<int64_t, std::string> out;
  std::map<int64_t, std::map<std::pair<int, std::string>, bool>>
      agree;  // block length -> (anchor, output) -> all equal
  for (const auto& cell : c.cells) {
    if (cell.placement == "block") {
      auto& at = agree[cell.size];
      for (const auto& r : cell.rows) at.try_emplace({r.anchor, r.output}, true).first->second &= r.equal;
      continue;
    }
    if (cell.placement != "start") continue;
    std::vector<std::string> rows;
    for (const auto& r : cell.rows) rows.push_back(fmt::format("{}:{}:{}", r.anchor, r.output, r.digest));
    std::sort(rows.begin(), rows.end());
    out[cell.size] = fmt::format("{}", fmt::join(rows, ";"));
  }
  for (const auto& [size, rows] : agree) {
    std::vector<std::string> parts;
    for (const auto& [key, same] : rows)
      parts.push_back(fmt::format("{}:{}:{}", key.first, key.second, same ? "=" : "≠"));
    std::sort(parts.begin(), parts.end());
    out[size] = fmt::format("{}", fmt::join(parts, ";"));
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
    if (cell.placement == "start" || cell.placement == "second-call" || cell.placement == "block") continue;
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

// The sizes of `k` at which a row was measured to get the same bits at every place in the batch and
// on a second call: the only sizes the advice may call safe (issue 43: "pad to {4…1024}" was printed
// beside "depends on its place at sizes 5…7,9").
std::vector<int64_t> safe(const SizeClass& k, const InvarianceConfig& c) {
  std::vector<int64_t> out;
  for (const int64_t m : k.sizes)
    if (!std::binary_search(c.position_dependent.begin(), c.position_dependent.end(), m) &&
        !std::binary_search(c.warmup_dependent.begin(), c.warmup_dependent.end(), m))
      out.push_back(m);
  return out;
}

// The class a user should pad or bucket to: the one with the most safe sizes, then the larger ones.
const SizeClass& widest(const std::vector<SizeClass>& classes, const InvarianceConfig& c) {
  return *std::max_element(classes.begin(), classes.end(), [&](const SizeClass& a, const SizeClass& b) {
    const std::vector<int64_t> sa = safe(a, c), sb = safe(b, c);
    if (sa.size() != sb.size()) return sa.size() < sb.size();
    return sa.empty() ? a.sizes.back() < b.sizes.back() : sa.back() < sb.back();
  });
}

// The sizes to pad to, in braces: only sizes measured (issue 54: {4…8} was advised from 4 and 8
// alone, and a row got other bits at 5, 6 and 7), with a word on the untried sizes between them.
struct SafeSizes {
  std::string sizes;  // "{4,8,12,15…17}"
  std::string gaps;   // " (sizes between them that were not tried are not advised: measure them with --sizes)" or ""
};

SafeSizes safe_sizes(const std::vector<int64_t>& sizes, const std::vector<int64_t>& all) {
  // `all` holds each size tried once: fewer of them between the first and the last named than
  // integers there means some were not tried.
  const bool gaps = !sizes.empty() && std::upper_bound(all.begin(), all.end(), sizes.back()) -
                                              std::lower_bound(all.begin(), all.end(), sizes.front()) <
                                          sizes.back() - sizes.front() + 1;
  return {"{" + report::sizes_text(sizes) + "}",
          gaps ? " (sizes between them that were not tried are not advised: measure them with --sizes)" : ""};
}

// What to pad to when the batched sizes fall into `batched` classes: the safe sizes of the widest,
// or, where no size is safe, the place and warm-up advice alone.
std::string pad_line(const std::vector<SizeClass>& batched, const InvarianceConfig& c,
                     const std::vector<int64_t>& all) {
  const std::vector<int64_t> sizes = safe(widest(batched, c), c);
  if (sizes.empty())
    return "no batched size tried gives a row the same bits at every place in the batch, so padding alone is no fix";
  const SafeSizes text = safe_sizes(sizes, all);
  return fmt::format(
      "pad every batch to a size in {}{}: each size named was measured to give a row the same bits at every place "
      "tried",
      text.sizes, text.gaps);
}

std::vector<std::string> size_advice(const InvarianceConfig& c) {
  const std::vector<int64_t> all = tried(c);
  const bool steady = c.position_dependent.empty() && c.warmup_dependent.empty();
  if (c.classes.size() <= 1 && steady)
    return {fmt::format("every batch size tried ({}) gives a row the same bits: batch freely within them",
                        report::sizes_text(all))};
  if (c.classes.size() <= 1) {
    SizeClass batched{c.classes.empty() ? all : c.classes.front().sizes, false, {}, std::nullopt};
    std::erase(batched.sizes, 1);
    return {pad_line({batched}, c, all)};
  }
  std::vector<std::string> advice;
  const SizeClass& ref = c.classes.front();
  const bool alone = ref.sizes == std::vector<int64_t>{1};
  const std::vector<SizeClass> batched(c.classes.begin() + (alone ? 1 : 0), c.classes.end());
  if (alone && c.classes.size() == 2 && steady)
    advice.push_back(fmt::format(
        "batch 1 is the odd one: never compare unbatched with batched results; every batch of {}{} gives a row the "
        "same bits",
        safe_sizes(c.classes.back().sizes, all).sizes, safe_sizes(c.classes.back().sizes, all).gaps));
  else if (alone)
    advice.push_back("batch 1 is the odd one: never compare unbatched with batched results");
  if (!alone || c.classes.size() > 2 || !steady) advice.push_back(pad_line(batched, c, all));
  if (c.classes.size() > 2)
    advice.push_back(fmt::format("or bucket batches so that results you compare come from one class: {}",
                                 report::classes_text(c.classes)));
  if (!alone)
    advice.push_back(fmt::format("results compared with a row run alone must come from batches of {{{}}}",
                                 report::sizes_text(ref.sizes)));
  return advice;
}

// The verify axis's advice (issue 41, item 6): which block lengths gave every token the decode
// step's bits at every place they were measured at (issue 54), all of them measured, and where.
std::vector<std::string> verify_advice(const InvarianceConfig& c) {
  const std::vector<int64_t> all = tried(c);
  const std::string where = report::verify_window_text(c);
  std::vector<int64_t> same = c.classes.empty() ? all : c.classes.front().sizes, other;
  for (const int64_t b : all)
    if (!std::binary_search(same.begin(), same.end(), b)) other.push_back(b);
  if (other.empty())
    return {fmt::format(
        "every verify block tried ({} tokens, at every place among {}) gives each token the bits of the decode step "
        "that ends at it: speculative decoding accepts what decoding one token at a time would give",
        report::sizes_text(all), where)};
  std::vector<std::string> advice{
      fmt::format("a verify block of {} tokens gives a token other bits than the decode step that ends at it ({}), so "
                  "speculative decoding can accept other tokens than decoding one at a time would",
                  report::sizes_text(other), report::first_differing_block_text(c))};
  std::erase(same, 1);
  if (!same.empty())
    advice.push_back(fmt::format(
        "blocks of {} tokens were measured to give every token the decode step's bits at every place among {}: keep "
        "the draft within them, or find a switch that fixes the others",
        report::sizes_text(same), where));
  else
    advice.push_back(
        fmt::format("no verify block tried gives every token the decode step's bits at every place among {}: no "
                    "draft length is safe here",
                    where));
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
  c.advice = report::verify_blocks(c) ? verify_advice(c) : size_advice(c);
  const std::vector<int64_t> all = tried(c);
  if (!c.position_dependent.empty())
    c.advice.push_back(
        fmt::format("a row's bits depend on its place in the batch at sizes {}: keep each row at the same place "
                    "(no shuffling, padding on the same side) in results you compare",
                    report::sizes_text(c.position_dependent)));
  if (!c.warmup_dependent.empty())
    c.advice.push_back(
        fmt::format("the first call of a {} differs from the second at sizes {}: call the model once per {} "
                    "before the results you compare",
                    report::verify_blocks(c) ? "block" : "batch", report::sizes_text(c.warmup_dependent),
                    report::verify_blocks(c) ? "block length" : "batch size"));
}

std::string padding_advice(const InvarianceConfig& c) {
  if (c.classes.size() <= 1) return "";
  if (report::verify_blocks(c)) {  // no padding: the block length is what the user chooses
    std::vector<int64_t> same = c.classes.front().sizes;
    std::erase(same, 1);
    return same.empty() ? ""
                        : fmt::format("verify with blocks of {} tokens (each measured at every place among {})",
                                      report::sizes_text(same), report::verify_window_text(c));
  }
  const std::vector<int64_t> all = tried(c);
  const bool alone = c.classes.front().sizes == std::vector<int64_t>{1};
  const std::vector<SizeClass> batched(c.classes.begin() + (alone ? 1 : 0), c.classes.end());
  const std::vector<int64_t> sizes = safe(widest(batched, c), c);
  if (sizes.empty()) return "";
  const SafeSizes text = safe_sizes(sizes, all);
  std::string out = fmt::format("pad every batch to a size in {}{}", text.sizes, text.gaps);
  if (alone) out += " and never compare a row run alone with batched results";
  if (c.classes.size() > 2) out += fmt::format(", or bucket batches by class: {}", report::classes_text(c.classes));
  if (const std::string closest = closest_class_text(c); !closest.empty()) out += "; " + closest;
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
