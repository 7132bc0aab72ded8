// SPDX-License-Identifier: Apache-2.0
// See audit/invariance/invariance_fix.h for the design.
#include "audit/invariance/invariance_fix.h"

#include "audit/common/device.h"
#include "audit/invariance/invariance_analysis.h"
#include "audit/invariance/invariance_referee.h"
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

// Fills a candidate from its sweep (whether it fixes anything is the search's to say).
void record(InvarianceFixCandidate& c, const InvarianceConfig& result, const InvarianceConfig& from) {
  c.verdict = result.verdict;
  c.message = result.verdict == "crashed" ? result.message : "";
  c.classes = result.classes;
  weigh_candidate(c, from);  // its error against float64 beside the configuration's, where the referee ran
}

// A candidate the search does not run: listed with the reason, no snippet.
void not_run(InvarianceFixCandidate& c, const std::string& why) {
  c.stage = "skipped", c.verdict = "not run", c.message = why, c.cpp.clear(), c.python.clear();
}

// The search's sweeps within its budget (invariance_fix.h): kFixCallBudget times the first sweep's
// model calls. A worker is estimated at the most calls a worker of the same anchors has made in the
// search, or, before one has, at the first sweep's calls scaled to its sizes and anchors.
class Sweeps {
 public:
  Sweeps(const InvarianceConfig& from, const SweepFn& sweep, const std::vector<int64_t>& sizes, int anchors)
      : sweep_(sweep), first_(from.timing.calls), limit_(kFixCallBudget * from.timing.calls), anchors_(anchors) {
    const size_t tried = std::max<size_t>(1, report::tried_sizes(from).size());
    full_ =
        (first_ * static_cast<int64_t>(sizes.size()) + static_cast<int64_t>(tried) - 1) / static_cast<int64_t>(tried);
  }

  // Whether workers of these anchors (0: every anchor), one after the other, fit what is left.
  bool fits(const std::vector<int>& workers) const {
    int64_t need = 0;
    for (const int a : workers) need += estimate(a);
    return limit_ <= 0 || spent_ + need <= limit_;
  }
  std::vector<InvarianceConfig> run(const std::vector<SweepStep>& steps, const std::vector<int64_t>& sizes,
                                    int anchors) {
    std::vector<InvarianceConfig> out = sweep_(steps, sizes, anchors);
    for (const auto& c : out) {
      spent_ += c.timing.calls;
      auto& most = largest_[anchors];
      most = std::max(most, c.timing.calls);
    }
    return out;
  }
  std::string spent_text() const {
    return fmt::format("the search's budget was spent: at most {} times the first sweep's {} model calls",
                       kFixCallBudget, first_);
  }

 private:
  int64_t estimate(int anchors) const {
    if (const auto it = largest_.find(anchors); it != largest_.end()) return it->second;
    if (anchors == 0 || anchors_ <= 0) return full_;
    return (full_ * anchors + anchors_ - 1) / anchors_;
  }

  const SweepFn& sweep_;
  int64_t first_, limit_;
  int anchors_;       // every anchor of the first sweep
  int64_t full_ = 0;  // a sweep of every anchor, before one ran
  int64_t spent_ = 0;
  std::map<int, int64_t> largest_;  // by anchors
};

// The screen (the verify axis): the anchors up to the first one whose bits moved in the first sweep
// (usually anchor 0 alone), or 0 (none: every anchor) when that is all of them.
int screen_anchors(const InvarianceConfig& from, int all) {
  int first = all;
  for (const auto& cell : from.cells)
    for (const auto& r : cell.rows)
      if (!r.equal) first = std::min(first, r.anchor);
  return first + 1 < all ? first + 1 : 0;
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
      "; under {}, verify blocks of {} tokens get the decode step's bits (each measured at every place among {}){}",
      best->toggles, report::sizes_text(blocks), report::verify_window_text(from),
      top >= 2 ? fmt::format(", so drafts of at most {} token{} are safe with it", top - 1, top == 2 ? "" : "s") : "");
}

std::string conclusion(const InvarianceFix& f, const InvarianceConfig& from, const Device& device) {
  if (f.baseline_verdict != "variant" && f.baseline_verdict != "not run")
    return fmt::format(
        "{} swept again over sizes {} was {}: the variance did not come back, so no switch can be credited", f.from,
        fmt::join(f.sizes, ","), f.baseline_verdict);
  // Fixes that keep the rows as close to float64 as they were come first; a downgrade is never named
  // without that word (issue 53).
  std::vector<std::string> fixes, downgrades, tried;
  for (const auto& c : f.candidates) {
    if (c.fixes && !c.downgrade) fixes.push_back(c.toggles);
    if (c.fixes && c.downgrade) downgrades.push_back(fmt::format("{} (a downgrade: {})", c.toggles, c.accuracy));
    if (c.stage != "skipped") tried.push_back(c.toggles);
  }
  if (!fixes.empty())
    return fmt::format("{} from {} make{} it invariant: every size swept again gives a row the same bits{}",
                       fmt::join(fixes, " or "), f.from, fixes.size() == 1 ? "s" : "",
                       downgrades.empty() ? "" : fmt::format("; so does {}", fmt::join(downgrades, " or ")));
  if (!downgrades.empty())
    return fmt::format(
        "only {} from {} make{} it invariant, at the price of accuracy: the rows move further from float64 than "
        "the batch classes differ; {}",
        fmt::join(downgrades, " or "), f.from, downgrades.size() == 1 ? "s" : "",
        padding_advice(from).empty() ? "prefer the variance where accuracy matters"
                                     : "padding or bucketing to one class keeps the accuracy: " + padding_advice(from));
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
  f.baseline_verdict = "not run";
  int anchors = 0;
  for (const auto& cell : from.cells)
    for (const auto& r : cell.rows) anchors = std::max(anchors, r.anchor + 1);
  // Only the verify axis calls each anchor's prefixes apart, so that fewer anchors make fewer calls;
  // a batch holds every anchor at once, and a screen there would cost nearly a sweep (the golden
  // invariance case: 17 of 18 calls), leaving a candidate out of the budget.
  const int screen = report::verify_blocks(from) ? screen_anchors(from, anchors) : 0;
  Sweeps sweeps(from, sweep, f.sizes, anchors);
  // The first sweep credits a fix when it swept these very sizes; else `from` is swept again, once.
  const bool first_sweep_credits = f.sizes == report::tried_sizes(from);
  std::optional<InvarianceConfig> rerun;
  std::map<size_t, Config> fixes;                              // by candidate: its configuration
  std::map<size_t, std::vector<std::optional<double>>> times;  // by candidate: forward ms per call, per round
  // What a candidate may still need: its screen, its sweep of every anchor, and the rerun that credits it.
  const auto room = [&] {
    std::vector<int> workers = {0};
    if (screen > 0) workers.push_back(screen);
    if (!first_sweep_credits && !rerun) workers.push_back(0);
    return sweeps.fits(workers);
  };
  // A candidate's verdict: its screen where that shows the variance still there (it fixes nothing),
  // else its sweep of every anchor, which the first sweep or a rerun of `from` credits.
  const auto judge = [&](size_t i, const Config& config, const std::string& label) {
    InvarianceFixCandidate& c = f.candidates[i];
    if (screen > 0) {
      const InvarianceConfig result = sweeps.run({{config, label}}, f.sizes, screen).at(0);
      if (result.verdict != "invariant") {
        record(c, result, from);
        c.anchors = screen;
        return;
      }
    }
    const InvarianceConfig result =
        sweeps.run({{config, screen > 0 ? label + ", every anchor" : label}}, f.sizes, 0).at(0);
    record(c, result, from);
    if (c.verdict != "invariant") return;
    if (!first_sweep_credits && !rerun) {
      rerun =
          sweeps.run({{from_config, fmt::format("fix search: {} again, to credit {}", f.from, c.toggles)}}, f.sizes, 0)
              .at(0);
      f.baseline_verdict = rerun->verdict;
    }
    c.fixes = (rerun ? rerun->verdict : from.verdict) == "variant";
    if (c.fixes) fixes.emplace(i, config), times[i] = {per_call(result)};
  };
  // 1. Every single toggle, one worker each.
  Toggles usable;
  for (size_t i = 0; i < f.candidates.size(); ++i) {
    if (f.candidates[i].stage != "single") continue;
    const std::string t = f.candidates[i].toggles;
    if (!room()) {
      not_run(f.candidates[i], sweeps.spent_text());
      continue;
    }
    const Toggles toggle = {{t.substr(0, t.find('=')), t.substr(t.find('=') + 1)}};
    judge(i, toggled(from_config, toggle, f.candidates[i]), "fix search: candidate " + t);
    if (f.candidates[i].verdict != "crashed") usable.push_back(toggle.front());
  }
  // 2. None alone, while the variance stands: all that ran, together.
  if (fixes.empty() && (!rerun || rerun->verdict == "variant") && usable.size() >= 2) {
    f.candidates.push_back(candidate(from_config, usable, "combined"));
    const size_t i = f.candidates.size() - 1;
    if (room())
      judge(i, toggled(from_config, usable, f.candidates[i]),
            "fix search: candidates together, " + f.candidates[i].toggles);
    else
      not_run(f.candidates[i], sweeps.spent_text());
  }
  // 3. Prices, of the fixes only: `from` and every fix swept again, one worker at a time in turn
  // (A B C A B C ...), round after round while the budget lasts, up to report::kTimingRounds rounds.
  if (!fixes.empty()) {
    std::vector<std::optional<double>> base = {per_call(rerun ? *rerun : from)};
    for (int r = 2; r <= report::kTimingRounds && sweeps.fits(std::vector<int>(1 + fixes.size(), 0)); ++r) {
      const std::string round = fmt::format("fix search: timing round {} of {}, ", r, report::kTimingRounds);
      std::vector<SweepStep> steps = {{from_config, round + f.from}};
      for (const auto& [i, config] : fixes) steps.push_back({config, round + "candidate " + f.candidates[i].toggles});
      const std::vector<InvarianceConfig> again = sweeps.run(steps, f.sizes, 0);
      base.push_back(per_call(again.at(0)));
      size_t k = 1;
      for (const auto& entry : fixes) times[entry.first].push_back(per_call(again.at(k++)));
    }
    std::vector<double> base_times;
    for (const auto& t : base)
      if (t) base_times.push_back(*t);
    f.baseline_forward_ms = report::median(base_times);
    for (const auto& [i, mine] : times) price(f.candidates[i], base, mine);
  }
  f.conclusion = conclusion(f, from, device);
  return f;
}

}  // namespace ra::invariance
