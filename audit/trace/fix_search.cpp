// SPDX-License-Identifier: Apache-2.0
// See audit/trace/fix_search.h for the design.
#include "audit/trace/fix_search.h"

#include "audit/common/device.h"
#include "audit/trial/referee.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

namespace ra {
namespace {

using report::FixCandidate;
using report::Verdict;

bool is_sdpa_switch(const std::string& key) { return key.rfind("sdpa.", 0) == 0; }

// Whether a root cause of the failing trace is a scaled-dot-product-attention op (forward or
// backward: aten::_scaled_dot_product_cudnn_attention_backward, aten::_flash_attention_backward,
// aten::_efficient_attention_backward ...). The SDPA switches cost a traced trial each and cannot
// matter elsewhere, so the search tries them only then.
bool attention_root_cause(const report::ConfigResult& failing) {
  if (!failing.trace) return false;
  for (const auto& r : failing.trace->root_causes)
    for (const std::string* name : {&r.op, &r.forward_op})
      if (name->find("scaled_dot_product") != std::string::npos || name->find("_attention") != std::string::npos)
        return true;
  return false;
}

std::string spell(const std::vector<Toggle>& toggles) {
  std::vector<std::string> parts;
  for (const auto& t : toggles) parts.push_back(t.key + "=" + t.value);
  return fmt::format("{}", fmt::join(parts, "+"));
}

bool ran(Verdict v) { return v == Verdict::Reproducible || v == Verdict::Diverged; }

class Search {
 public:
  Search(const report::ConfigResult& failing, const Config& config, const EvaluateFn& evaluate)
      : failing_(failing), config_(config), evaluate_(evaluate) {}

  size_t try_toggles(const std::vector<Toggle>& toggles, const char* stage) {
    const Config c = with_toggles(config_, toggles);
    const CandidateOutcome outcome = evaluate_(c);
    FixCandidate f;
    for (const auto& t : toggles) f.toggles.emplace_back(t.key, t.value);
    f.config = c.name;
    f.stage = stage;
    f.verdict = outcome.verdict;
    f.message = outcome.message;
    f.fixes_all = outcome.verdict == Verdict::Reproducible;
    if (ran(outcome.verdict) && failing_.referee)
      f.accuracy = judge_fix_accuracy(failing_.referee->errors, outcome.errors);
    if (ran(outcome.verdict) && failing_.trace) {
      std::set<std::string> still;
      for (const auto& r : outcome.root_causes) still.insert(root_cause_key(r));
      for (const auto& r : failing_.trace->root_causes)
        if (f.fixes_all || !still.count(root_cause_key(r))) f.fixes.push_back(r.position);
    }
    std::vector<std::string> cpp, python;
    for (const auto& t : toggles) {
      const Snippet s = switch_snippet(t.key, t.value);
      cpp.push_back(s.cpp);
      python.push_back(s.python);
    }
    f.cpp = fmt::format("{}", fmt::join(cpp, "\n"));
    f.python = fmt::format("{}", fmt::join(python, "\n"));
    if (outcome.verdict == Verdict::Raised) note_raise(outcome.message);
    result.candidates.push_back(std::move(f));
    return result.candidates.size() - 1;
  }

  void note_raise(const std::string& message) {
    const std::string op = alerted_op(message);
    if (op.empty()) return;
    for (const auto& n : result.no_deterministic)
      if (n.op == op) return;
    report::NoDeterministicImplementation n;
    n.op = op;
    n.message = message;
    n.alternatives = {
        "rewrite the computation deterministically (for example a sort-based or one-hot matmul formulation of a "
        "scatter/index reduction instead of atomic adds)",
        "run only this op on the CPU (move its inputs with .cpu() and the result back) where its CPU kernel is "
        "deterministic for these inputs",
        "keep deterministic mode with warn_only=True (torch.use_deterministic_algorithms(True, warn_only=True)), so "
        "that every other op stays deterministic, and accept this op in the allowlist with a reason"};
    result.no_deterministic.push_back(std::move(n));
  }

  const report::ConfigResult& failing_;
  const Config& config_;
  const EvaluateFn& evaluate_;
  report::FixSearch result;
};

}  // namespace

std::vector<Toggle> candidate_toggles(const report::ConfigResult& failing, const Device& device) {
  std::vector<Toggle> out;
  for (const auto& s : switch_table()) {
    const FixToggle& t = s.run_fix;
    if (t.value == nullptr || !(device.is_cuda() ? t.cuda : t.cpu)) continue;
    std::string effective;
    bool listed = false;
    for (const auto& sw : failing.switches)
      if (sw.key == s.key) {
        effective = sw.effective;
        listed = true;
      }
    if (s.exec_only && !listed) continue;  // a LibTorch trial: the switch means nothing there
    if (is_sdpa_switch(s.key) && !attention_root_cause(failing)) continue;
    if (effective == t.value || effective.rfind("no effect", 0) == 0) continue;
    out.push_back({s.key, t.value});
  }
  return out;
}

Config with_toggles(const Config& base, const std::vector<Toggle>& toggles) {
  Config c = base;
  for (const auto& t : toggles) c.values[t.key] = t.value;
  c.name = toggles.empty() ? base.name : base.name + "+" + spell(toggles);
  return c;
}

std::string root_cause_key(const report::RootCause& r) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}", r.op, r.direction, r.node, r.forward_op, r.step, r.module, r.source);
}

std::string alerted_op(const std::string& message) {
  static const std::string kPhrase = " does not have a deterministic implementation";
  const size_t at = message.find(kPhrase);
  if (at == std::string::npos || at == 0) return "";
  size_t begin = message.find_last_of(" :\n", at - 1);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return message.substr(begin, at - begin);
}

report::FixSearch search_fixes(const report::ConfigResult& failing, const Config& failing_config, const Device& device,
                               const EvaluateFn& evaluate, const TimeFn& time) {
  Search s(failing, failing_config, evaluate);
  s.result.from = failing_config.name;
  const std::vector<Toggle> toggles = candidate_toggles(failing, device);
  std::vector<size_t> minimal;

  // 1. One switch at a time.
  std::vector<Toggle> usable;
  for (const auto& t : toggles) {
    const size_t i = s.try_toggles({t}, "single");
    if (s.result.candidates[i].fixes_all) minimal.push_back(i);
    if (ran(s.result.candidates[i].verdict)) usable.push_back(t);
  }
  // 2. None alone: all that ran, together; then drop toggles while it stays reproducible.
  if (minimal.empty() && usable.size() >= 2) {
    size_t best = s.try_toggles(usable, "combined");
    if (s.result.candidates[best].fixes_all) {
      std::vector<Toggle> current = usable;
      for (const auto& t : usable) {
        if (current.size() <= 2) break;  // single toggles were tried already
        std::vector<Toggle> fewer;
        for (const auto& c : current)
          if (c.key != t.key) fewer.push_back(c);
        const size_t i = s.try_toggles(fewer, "reduced");
        if (s.result.candidates[i].fixes_all) {
          current = fewer;
          best = i;
        }
      }
      minimal.push_back(best);
    }
  }
  for (size_t i : minimal) s.result.candidates[i].minimal = true;
  s.result.best = minimal;

  // 3. Costs, measured side by side: the failing configuration first, then every candidate that
  // ran (fixing or not), so that each toggle's price is known; nothing when no candidate fixes it
  // (there is no fix to price, and each timed run is a whole run of the model or command).
  std::vector<size_t> ran_candidates;
  if (!minimal.empty())
    for (size_t i = 0; i < s.result.candidates.size(); ++i)
      if (ran(s.result.candidates[i].verdict)) ran_candidates.push_back(i);
  if (!ran_candidates.empty()) {
    std::vector<Config> timed = {failing_config};
    for (size_t i : ran_candidates) {
      std::vector<Toggle> ts;
      for (const auto& [k, v] : s.result.candidates[i].toggles) ts.push_back({k, v});
      timed.push_back(with_toggles(failing_config, ts));
    }
    const auto rounds = time(timed);
    const auto median_of = [](const std::vector<std::optional<double>>& times) {
      std::vector<double> v;
      for (const auto& t : times)
        if (t) v.push_back(*t);
      return report::median(v);
    };
    s.result.baseline_median_ms = rounds.empty() ? std::nullopt : median_of(rounds[0]);
    for (size_t k = 0; k < ran_candidates.size() && k + 1 < rounds.size(); ++k) {
      auto& c = s.result.candidates[ran_candidates[k]];
      c.median_ms = median_of(rounds[k + 1]);
      // Paired by round: each ratio compares two runs made one after the other.
      std::vector<double> ratios;
      for (size_t r = 0; r < rounds[k + 1].size() && r < rounds[0].size(); ++r)
        if (rounds[k + 1][r] && rounds[0][r] && *rounds[0][r] > 0) ratios.push_back(*rounds[k + 1][r] / *rounds[0][r]);
      const report::RoundCost cost = report::round_cost(ratios);
      c.cost_ratio = cost.ratio, c.cost_low = cost.low, c.cost_high = cost.high;
    }
  }

  // 4. One sentence.
  // The fixes that are no downgrade first; a downgrade is named with the word.
  std::vector<std::string> fixes, downgrades;
  for (size_t i : minimal) {
    const FixCandidate& c = s.result.candidates[i];
    const std::string name = c.config.substr(failing_config.name.size() + 1);
    if (c.downgrade())
      downgrades.push_back(name + " (a downgrade)");
    else
      fixes.push_back(name);
  }
  fixes.insert(fixes.end(), downgrades.begin(), downgrades.end());
  std::vector<std::string> raising;
  for (const auto& n : s.result.no_deterministic) raising.push_back(n.op);
  if (toggles.empty())
    s.result.conclusion = "every candidate switch is already at its deterministic setting; no switch can fix it";
  else if (!fixes.empty())
    s.result.conclusion = fmt::format("{} from {} make{} it reproducible", fmt::join(fixes, " or "),
                                      failing_config.name, fixes.size() == 1 ? "s" : "");
  else if (!raising.empty())
    s.result.conclusion = fmt::format("no switch makes it reproducible: {} {} no deterministic implementation",
                                      fmt::join(raising, ", "), raising.size() == 1 ? "has" : "have");
  else
    s.result.conclusion = "no combination of the candidate switches makes it reproducible";
  // A candidate that crashed or timed out was not judged: said, not dropped (issue 33).
  for (const auto& c : s.result.candidates)
    if (c.verdict == Verdict::Crashed || c.verdict == Verdict::Timeout)
      s.result.conclusion +=
          fmt::format("; {} {}, so whether it fixes it is unknown{}", c.config.substr(failing_config.name.size() + 1),
                      c.verdict == Verdict::Crashed ? "crashed" : "timed out",
                      c.message.empty() ? "" : " (" + c.message.substr(0, c.message.find('\n')) + ")");
  return s.result;
}

}  // namespace ra
