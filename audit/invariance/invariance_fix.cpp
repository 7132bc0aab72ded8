// SPDX-License-Identifier: Apache-2.0
// See audit/invariance/invariance_fix.h for the design.
#include "audit/invariance/invariance_fix.h"

#include "audit/common/device.h"
#include "audit/invariance/invariance_analysis.h"
#include "audit/trace/fix_search.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include <cstdint>
#include <map>
#include <optional>
#include <set>

namespace ra::invariance {
namespace {

using report::InvarianceConfig;
using report::InvarianceFix;
using report::InvarianceFixCandidate;

using Toggles = std::vector<std::pair<std::string, std::string>>;

std::string effective_value(const InvarianceConfig& c, const std::string& key) {
  for (const auto& s : c.switches)
    if (s.key == key) return s.effective;
  return "";
}

InvarianceFixCandidate candidate(const Config& from, const Toggles& toggles, const char* stage) {
  InvarianceFixCandidate c;
  std::vector<std::string> parts, cpp, python;
  for (const auto& [key, value] : toggles) {
    parts.push_back(key + "=" + value);
    const Snippet s = switch_snippet(key, value);
    cpp.push_back(s.cpp);
    python.push_back(s.python);
  }
  c.toggles = fmt::format("{}", fmt::join(parts, "+"));
  c.config = from.name + "+" + c.toggles;
  c.stage = stage;
  c.cpp = fmt::format("{}", fmt::join(cpp, " "));
  c.python = fmt::format("{}", fmt::join(python, "; "));
  return c;
}

// `toggles` applied to `from`, named as the candidate (as --configs spells it).
Config toggled(const Config& from, const Toggles& toggles, const InvarianceFixCandidate& c) {
  Config out = from;
  for (const auto& [key, value] : toggles) out.values[key] = value;
  out.name = c.config;
  return out;
}

std::optional<double> per_call(const InvarianceConfig& c) {
  if (c.verdict == "crashed" || c.timing.calls <= 0) return std::nullopt;
  return c.timing.forward_ms / static_cast<double>(c.timing.calls);
}

// Fills a candidate from its sweep (`baseline`: the rerun of the same sitting).
void record(InvarianceFixCandidate& c, const InvarianceConfig& result, const InvarianceConfig& baseline) {
  c.verdict = result.verdict;
  c.message = result.verdict == "crashed" ? result.message : "";
  c.classes = result.classes;
  c.fixes = result.verdict == "invariant" && baseline.verdict == "variant";
}

// A candidate's price from its forward pass and the configuration's in each round (paired by round:
// two sweeps made one after the other), as run's fix search prices (issue 43: one sweep each gave
// 44.75x, then 0.43x, for the same switch).
void price(InvarianceFixCandidate& c, const std::vector<std::optional<double>>& base,
           const std::vector<std::optional<double>>& mine) {
  std::vector<double> times, ratios;
  for (size_t r = 0; r < mine.size(); ++r) {
    if (!mine[r]) continue;
    times.push_back(*mine[r]);
    if (r < base.size() && base[r] && *base[r] > 0) ratios.push_back(*mine[r] / *base[r]);
  }
  c.forward_ms = report::median(times);
  const report::RoundCost cost = report::round_cost(ratios);
  c.cost_ratio = cost.ratio, c.cost_low = cost.low, c.cost_high = cost.high;
}

// Verify axis: the candidate under which the most block lengths, from 2 up, got the decode step's
// bits, as a sentence ("" when none did better than the configuration): a switch that makes the
// short blocks agree makes the drafts that fit them safe.
std::string verify_partial(const InvarianceFix& f, const InvarianceConfig& from) {
  const auto safe_blocks = [](const std::vector<report::SizeClass>& classes) {
    std::vector<int64_t> blocks = classes.empty() ? std::vector<int64_t>{} : classes.front().sizes;
    std::erase(blocks, 1);
    return blocks;
  };
  const InvarianceFixCandidate* best = nullptr;
  size_t most = safe_blocks(from.classes).size();
  for (const auto& c : f.candidates)
    if (c.verdict == "variant" && safe_blocks(c.classes).size() > most) best = &c, most = safe_blocks(c.classes).size();
  if (best == nullptr) return "";
  const std::vector<int64_t> blocks = safe_blocks(best->classes);
  int64_t top = 1;  // every block from 2 to top agrees: drafts of 1 to top-1 tokens
  while (std::binary_search(blocks.begin(), blocks.end(), top + 1)) ++top;
  return fmt::format(
      "; under {}, verify blocks of {} tokens get the decode step's bits (each measured){}", best->toggles,
      report::sizes_text(blocks, report::tried_sizes(from)),
      top >= 2 ? fmt::format(", so drafts of at most {} token{} are safe with it", top - 1, top == 2 ? "" : "s") : "");
}

std::string conclusion(const InvarianceFix& f, const InvarianceConfig& from, const Device& device) {
  if (f.baseline_verdict != "variant")
    return fmt::format(
        "{} swept again over sizes {} was {}: the variance did not come back, so no switch can be credited", f.from,
        fmt::join(f.sizes, ","), f.baseline_verdict);
  std::vector<std::string> fixes, tried;
  for (const auto& c : f.candidates) {
    if (c.fixes) fixes.push_back(c.toggles);
    if (c.stage != "skipped") tried.push_back(c.toggles);
  }
  if (!fixes.empty())
    return fmt::format("{} from {} make{} it invariant: every size swept again gives a row the same bits",
                       fmt::join(fixes, " or "), f.from, fixes.size() == 1 ? "s" : "");
  const std::string pad = padding_advice(from);
  const std::string none = tried.empty()
                               ? fmt::format("no candidate switch can change it on {}", device.type())
                               : fmt::format("no switch tried ({}) makes it invariant", fmt::join(tried, ", "));
  if (report::verify_blocks(from))
    return (pad.empty() ? none + ": no verify block length tried is safe without a switch" : none + ": " + pad) +
           verify_partial(f, from);
  return pad.empty() ? none + ": keep each row at the same place in the batch and warm each batch size up"
                     : none + ": padding or bucketing to one class is the fix: " + pad;
}

}  // namespace

std::vector<int64_t> fix_sizes(const InvarianceConfig& c) {
  if (c.verdict != "variant") return {};
  // A verify sweep has a few block lengths, and a switch can fix the short blocks and not the long
  // ones (mkl_cbwr=COMPATIBLE on a Llama-style model: blocks of up to 4 tokens, not 5): all of them.
  if (report::verify_blocks(c)) return report::tried_sizes(c);
  std::set<int64_t> sizes = {1};
  if (c.classes.size() > 1) {
    for (const auto& k : c.classes)
      if (!k.reference) sizes.insert(k.sizes.front());
    // A switch that merges the classes but leaves a row's place mattering fixes nothing: the first
    // size of each other finding is swept again too.
    if (!c.position_dependent.empty()) sizes.insert(c.position_dependent.front());
    if (!c.warmup_dependent.empty()) sizes.insert(c.warmup_dependent.front());
  } else {
    sizes.insert(c.position_dependent.begin(), c.position_dependent.end());
    sizes.insert(c.warmup_dependent.begin(), c.warmup_dependent.end());
  }
  return {sizes.begin(), sizes.end()};
}

std::vector<InvarianceFixCandidate> fix_candidates(const InvarianceConfig& from, const Device& device) {
  std::vector<InvarianceFixCandidate> out;
  const bool cuda = device.is_cuda();
  const Config base{from.config, {}};
  for (const auto& s : switch_table()) {
    const FixToggle& t = s.invariance_fix;
    if (t.value == nullptr) continue;
    InvarianceFixCandidate c = candidate(base, {{s.key, t.value}}, "single");
    const std::string effective = effective_value(from, s.key);
    if (!(cuda ? t.cuda : t.cpu))
      c.message = "no effect on " + device.type();
    else if (effective == t.value)
      c.message = fmt::format("already {} in {}", effective, from.config);
    else if (effective.rfind("no effect", 0) == 0)
      c.message = effective;
    if (!c.message.empty()) c.stage = "skipped", c.verdict = "not run", c.cpp.clear(), c.python.clear();
    out.push_back(std::move(c));
  }
  return out;
}

InvarianceFix search_invariance_fix(const InvarianceConfig& from, const Config& from_config, const Device& device,
                                    const SweepFn& sweep) {
  InvarianceFix f;
  f.from = from_config.name;
  f.sizes = fix_sizes(from);
  f.candidates = fix_candidates(from, device);
  // 1. The rerun of `from`, then every single toggle, in one sitting.
  std::vector<Config> configs = {from_config};
  std::vector<size_t> singles;
  std::vector<Toggles> toggles;
  for (size_t i = 0; i < f.candidates.size(); ++i) {
    if (f.candidates[i].stage != "single") continue;
    const std::string& t = f.candidates[i].toggles;
    toggles.push_back({{t.substr(0, t.find('=')), t.substr(t.find('=') + 1)}});
    singles.push_back(i);
    configs.push_back(toggled(from_config, toggles.back(), f.candidates[i]));
  }
  const std::vector<InvarianceConfig> first = sweep(configs, f.sizes);
  f.baseline_verdict = first.at(0).verdict;
  // Forward-pass times per priced configuration and round: the rerun of `from` first.
  std::vector<Config> priced = {from_config};
  std::vector<std::vector<std::optional<double>>> times = {{per_call(first.at(0))}};
  std::vector<size_t> priced_candidate = {SIZE_MAX};
  Toggles usable;
  bool fixed = false;
  for (size_t k = 0; k < singles.size(); ++k) {
    InvarianceFixCandidate& c = f.candidates[singles[k]];
    record(c, first.at(k + 1), first.at(0));
    fixed = fixed || c.fixes;
    if (c.verdict == "crashed") continue;
    usable.push_back(toggles[k].front());
    priced.push_back(configs[k + 1]), times.push_back({per_call(first.at(k + 1))}),
        priced_candidate.push_back(singles[k]);
  }
  // 2. None alone: all that ran, together, beside a rerun of `from` (its first round's price).
  std::optional<double> combined_base;
  if (!fixed && f.baseline_verdict == "variant" && usable.size() >= 2) {
    InvarianceFixCandidate c = candidate(from_config, usable, "combined");
    const Config together = toggled(from_config, usable, c);
    const std::vector<InvarianceConfig> second = sweep({from_config, together}, f.sizes);
    record(c, second.at(1), second.at(0));
    combined_base = per_call(second.at(0));
    f.candidates.push_back(std::move(c));
    if (f.candidates.back().verdict != "crashed")
      priced.push_back(together), times.push_back({per_call(second.at(1))}),
          priced_candidate.push_back(f.candidates.size() - 1);
  }
  // 3. Prices: every configuration that ran swept again, one worker at a time in turn (A B C A B C
  // ...), until each has report::kTimingRounds rounds.
  if (priced.size() > 1)
    for (int r = 1; r < report::kTimingRounds; ++r) {
      const std::vector<InvarianceConfig> again = sweep(priced, f.sizes);
      for (size_t k = 0; k < priced.size(); ++k) times[k].push_back(per_call(again.at(k)));
    }
  std::vector<double> base_times;
  for (const auto& t : times[0])
    if (t) base_times.push_back(*t);
  f.baseline_forward_ms = report::median(base_times);
  for (size_t k = 1; k < priced.size(); ++k) {
    InvarianceFixCandidate& c = f.candidates[priced_candidate[k]];
    std::vector<std::optional<double>> base = times[0];
    if (c.stage == "combined") base[0] = combined_base;  // its first round sat beside the second rerun
    price(c, base, times[k]);
  }
  f.conclusion = conclusion(f, from, device);
  return f;
}

}  // namespace ra::invariance
