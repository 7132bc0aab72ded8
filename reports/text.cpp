// SPDX-License-Identifier: Apache-2.0
#include "reports/escape.h"
#include "reports/referee_model.h"
#include "reports/render.h"
#include "reports/render_parts.h"
#include "reports/utf8.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace ra::report {
namespace {

// Every string from the model is one line here, whatever it holds (reports/escape.h): a name with a
// line break must not print a line of its own, such as a fake verdict.
using escaped::ln;
// A message of several lines: its lines after the first indented under the line it starts.
std::string block(std::string_view s, std::string_view indent) { return escape::text_block(s, indent); }

// " at model.py:3 in encoder.block", either part left out when unknown.
std::string location(const std::string& source, const std::string& module) {
  std::string out;
  if (!source.empty()) out += " at " + ln(source);
  if (!module.empty()) out += " in " + ln(module);
  return out;
}

}  // namespace

std::string stats_text(const DivergenceStats& s) {
  if (!s.note.empty()) return ln(s.note);
  std::string idx = s.first_index_nd.empty() ? "[]" : fmt::format("[{}]", fmt::join(s.first_index_nd, ","));
  std::string out = fmt::format("{}/{} elements differ, first at {}", s.differing, s.numel, idx);
  if (!std::isnan(s.max_abs_diff))
    out += fmt::format(", max abs {:.3g}, max rel {:.3g}", s.max_abs_diff, s.max_rel_diff);
  if (!std::isnan(s.max_ulp)) out += fmt::format(", max {:g} ULP", s.max_ulp);
  if (s.sign_differs > 0) out += fmt::format(", {} across zero", s.sign_differs);
  if (s.nan_mismatches > 0) out += fmt::format(", {} NaN mismatches", s.nan_mismatches);
  return out + tolerance_text(s);
}

std::string root_cause_place(const RootCause& r) {
  std::string where = ln(r.direction);
  if (r.step > 0) where += fmt::format(", step {}", r.step);
  std::string after;
  if (r.direction == "backward" && !r.node.empty()) {
    where += ", in " + ln(r.node);
    if (!r.forward_op.empty()) where += " of " + ln(r.forward_op) + location(r.source, r.module);
  } else {
    after = location(r.source, r.module);
  }
  return fmt::format("{} ({}){}", ln(r.op), where, after);
}

std::string differing_outputs_text(const RootCause& r) {
  if (r.differing_outputs.empty()) return "outputs differed";  // known from a hash over all of them
  std::string indices;
  for (const int i : r.differing_outputs) {
    if (!indices.empty()) indices += ", ";
    indices += std::to_string(i);
  }
  return fmt::format("{} {} differed", r.differing_outputs.size() == 1 ? "output" : "outputs", indices);
}

std::string switch_changes_text(const std::vector<SwitchChange>& changes) {
  if (changes.empty()) return "no switch differs in effect";
  std::vector<std::string> parts;
  for (const auto& c : changes) parts.push_back(fmt::format("{} {} -> {}", ln(c.key), ln(c.reference), ln(c.other)));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string config_cause_text(const ConfigCause& c) {
  const std::string head =
      fmt::format("{} against {} ({})", ln(c.config), ln(c.reference_config), switch_changes_text(c.switches));
  if (!c.trace || c.trace->root_causes.empty()) return fmt::format("{}: {}", head, ln(c.note));
  const RootCause& r = c.trace->root_causes.front();
  return fmt::format("{}: first differing op {} - inputs matched, {}; {} propagated", head, root_cause_place(r),
                     differing_outputs_text(r), plural(r.propagated, "later op", "later ops"));
}

std::string changed_op_text(const BaselineResult& r) {
  if (r.first_changed_op)
    return fmt::format("first changed op: {}; {} later op{} changed", root_cause_place(*r.first_changed_op),
                       r.first_changed_op->propagated, r.first_changed_op->propagated == 1 ? "" : "s");
  return ln(r.op_note);
}

std::string detection_power_text(const Target& t) {
  const ConfigResult* weakest = nullptr;
  for (const auto& c : t.configs)
    if (c.verdict == Verdict::Reproducible && c.completed >= 2 &&
        (weakest == nullptr || c.completed < weakest->completed))
      weakest = &c;
  if (weakest == nullptr) return "";
  return "reproducible: " + no_divergence_text(weakest->completed, weakest->rate_ci_high);
}

std::vector<std::string> named_inputs(const Target& t, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  if (names.size() != t.inputs.size()) {
    for (const auto& in : t.inputs) out.push_back(ln(in));
    return out;
  }
  for (size_t i = 0; i < t.inputs.size(); ++i) out.push_back(ln(names[i]) + ": " + ln(t.inputs[i]));
  return out;
}

std::vector<std::string> compared_outputs(const Target& t) {
  std::vector<std::string> out;
  for (const auto& c : t.configs)
    for (const auto& d : c.reference) {
      std::string name = d.name;
      if (name.rfind("step", 0) == 0 && name.find('/') != std::string::npos) name = name.substr(name.find('/') + 1);
      if ((name == "output" || name.rfind("output/", 0) == 0) && std::find(out.begin(), out.end(), name) == out.end())
        out.push_back(name);
    }
  return out;
}

std::string plural(size_t n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

std::string capitalized(std::string words) {
  if (!words.empty()) words[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(words[0])));
  return words;
}

std::string compared_text(const ConfigResult& c) {
  if (!c.compared) return "";
  return plural(static_cast<size_t>(c.compared->files), "file", "files") + ", " +
         plural(static_cast<size_t>(c.compared->metrics), "metric", "metrics");
}

std::string findings_word(const ConfigResult& c, size_t n) {
  if (c.compared) return n == 1 ? "entry" : "entries";
  return n == 1 ? "tensor" : "tensors";
}

std::string auto_repeats_text(const Report& r) {
  if (!r.auto_repeats) return "";
  const AutoRepeats& a = *r.auto_repeats;
  size_t cells = 0, undecided = 0;
  for (const auto& t : r.targets())
    for (const auto& c : t.configs) {
      cells += c.verdict != Verdict::Skipped;
      undecided += c.stopped_by == "max-repeats";
    }
  std::string out = fmt::format(
      "repeats: auto, {} to {} runs per configuration, each until a divergence, a failure, or no "
      "divergence in enough runs to rule out a rate above {:g}% (95% confidence)",
      a.min, a.max, 100 * a.rate);
  if (undecided > 0) out += fmt::format("; {} of {} undecided at --max-repeats", undecided, cells);
  return out;
}

std::string undecided_text(const ConfigResult& c) {
  if (c.stopped_by != "max-repeats" || c.completed < 2) return "";
  const int n = c.completed - 1;
  return fmt::format(
      "undecided at --max-repeats {}: no divergence in {} comparison{} rules out only a rate above {:.0f}%", c.repeats,
      n, n == 1 ? "" : "s", 100 * c.rate_ci_high);
}

std::string fix_change_text(const FixCandidate& fix, const std::vector<SwitchValue>& failing) {
  std::vector<std::string> parts;
  for (const auto& toggle : fix.toggles) {
    const std::string& key = toggle.first;  // not a structured binding: clang 14 cannot capture one
    const auto it = std::find_if(failing.begin(), failing.end(), [&key](const SwitchValue& s) { return s.key == key; });
    parts.push_back(it == failing.end() ? fmt::format("{} -> {}", ln(key), ln(toggle.second))
                                        : fmt::format("{} {} -> {}", ln(key), ln(it->effective), ln(toggle.second)));
  }
  return parts.empty() ? ln(fix.config) : fmt::format("{}", fmt::join(parts, ", "));
}

std::string cost_text(const FixCandidate& fix) { return round_cost_text(fix.cost_ratio, fix.cost_low, fix.cost_high); }

std::string cost_clause(const FixCandidate& fix, const std::string& from) {
  if (!fix.cost_ratio) return "";
  if (!cost_measurable(fix.cost_low, fix.cost_high)) return fmt::format(" (cost {})", kCostNotMeasurable);
  return fmt::format(" at {} the run time of {}", cost_text(fix), from);
}

std::string accuracy_clause(const FixCandidate& fix, const std::string& from) {
  return fix.accuracy ? "; " + fix_accuracy_text(*fix.accuracy, from) : "";
}

std::string tolerance_text(const DivergenceStats& s) {
  if (!s.note.empty() || s.differing == 0 || s.tolerance == Tolerance{}) return "";
  const std::string tol = fmt::format("rtol {:g}, atol {:g}", s.tolerance.rtol, s.tolerance.atol);
  if (s.beyond_tolerance == 0) return fmt::format("; all within {}", tol);
  return fmt::format("; {} beyond {}", s.beyond_tolerance, tol);
}

void text::finding_lines(std::string& out, const std::vector<TensorFinding>& fs, size_t limit, const char* more) {
  for (size_t i = 0; i < fs.size() && i < limit; ++i) {
    const auto& f = fs[i];
    out += fmt::format("      {} {}[{}]: {}\n", ln(f.name), ln(f.dtype), fmt::join(f.shape, "x"),
                       f.stats ? stats_text(*f.stats) : std::string("digests differ"));
  }
  if (fs.size() > limit) out += fmt::format("      ... and {} more {}\n", fs.size() - limit, more);
}

namespace {

using text::finding_lines;

std::string bytes_text(uint64_t b) {
  if (b < 1024) return fmt::format("{} B", b);
  if (b < 1024 * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024);
  if (b < uint64_t{1024} * 1024 * 1024) return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1024.0 * 1024));
  return fmt::format("{:.1f} GiB", static_cast<double>(b) / (1024.0 * 1024 * 1024));
}

std::string root_cause_line(const RootCause& r) {
  std::string line = fmt::format("    root cause: {} - inputs matched, {}; {}/{} runs; {} propagated",
                                 root_cause_place(r), differing_outputs_text(r), r.runs_diverged, r.runs_compared,
                                 plural(r.propagated, "later op", "later ops"));
  if (r.independent_mismatches > 0) line += fmt::format(" ({} of them with matching inputs)", r.independent_mismatches);
  line += "\n";
  if (r.stats) line += fmt::format("      {}\n", stats_text(*r.stats));
  if (r.referee) line += fmt::format("      {}\n", ln(classified_line(*r.referee)));
  return line;
}

void trace_lines(std::string& out, const ConfigResult& c, size_t limit) {
  const TraceSummary& t = *c.trace;
  out += fmt::format("    trace: {} records per run, {} in memory{}; {} runs compared, {} identical\n", t.records,
                     bytes_text(t.memory_bytes),
                     t.dropped ? fmt::format(", {} records dropped (capacity {} digests)", t.dropped, t.capacity) : "",
                     t.runs_compared, t.runs_identical);
  for (size_t i = 0; i < t.root_causes.size() && i < limit; ++i) out += root_cause_line(t.root_causes[i]);
  if (t.root_causes.size() > limit)
    out += fmt::format("    ... and {} more root causes\n", t.root_causes.size() - limit);
  if (t.root_causes.empty() && c.verdict == Verdict::Diverged)
    out += "    root cause: none in the trace (no op turned matching inputs into different outputs)\n";
  for (size_t i = 0; i < t.splits.size() && i < limit; ++i) {
    const auto& s = t.splits[i];
    out += fmt::format(
        "    op streams split at #{} (thread {}): reference has {}, {} has {}; {} vs {} records unmatched{}; {}/{} "
        "runs\n",
        s.reference_position, s.thread, s.reference_op.empty() ? "nothing" : ln(s.reference_op),
        s.repeats.empty() ? std::string("the other run") : fmt::format("repeat {}", s.repeats.front()),
        s.other_op.empty() ? "nothing" : ln(s.other_op), s.unmatched_reference, s.unmatched_other,
        s.reordered ? fmt::format(" ({} reordered)", s.reordered) : "", s.runs, t.runs_compared);
  }
  if (t.splits.size() > limit) out += fmt::format("    ... and {} more splits\n", t.splits.size() - limit);
}

// ", warm-up-dependent" when a later call of `run --calls K` differed from call 1 somewhere, else "".
std::string warm_up_text(const Report& r) {
  for (const auto& t : r.targets())
    for (const auto& c : t.configs)
      if (c.warm_up && warm_up_dependent(*c.warm_up)) return ", warm-up-dependent";
  return "";
}

// A diverged configuration's repeats that did not complete, in one line, each with how it ended
// ("1 of 3 repeats did not complete: repeat 1 killed from outside (by SIGKILL, signal 9: ...)"):
// the verdict line counts only completed ones, and a diverged configuration prints no message.
void unfinished_line(std::string& out, const ConfigResult& c) {
  std::vector<std::string> parts;
  for (const auto& t : c.trials)
    if (t.status == TrialStatus::Crashed || t.status == TrialStatus::Timeout || t.status == TrialStatus::Raised ||
        t.status == TrialStatus::Error || t.status == TrialStatus::ConfigError)
      parts.push_back(fmt::format("repeat {} {}", t.repeat, ln(t.message.substr(0, t.message.find('\n')))));
  if (parts.empty()) return;
  constexpr size_t kShown = 3;
  const size_t n = parts.size();
  if (n > kShown) parts.resize(kShown);
  out +=
      fmt::format("    {} of {} repeat{} did not complete: {}{}\n", n, c.trials.size(), c.trials.size() == 1 ? "" : "s",
                  fmt::join(parts, "; "), n > kShown ? fmt::format("; and {} more", n - kShown) : "");
}

// The fix search: every candidate, then the cheapest minimal fix with its snippets.
void fix_lines(std::string& out, const FixSearch& f, size_t root_causes, const std::vector<SwitchValue>& failing,
               bool command = false) {
  const std::string repeats = fmt::format("{}{} {}repeats per candidate{}", f.repeats_auto ? "up to " : "", f.repeats,
                                          command ? "" : "traced ", f.repeats_auto ? ", each until decided" : "");
  if (f.candidates.empty() && f.repeats == 0)  // exec: not searched (a missing seeding line explains it)
    out += fmt::format("    fix search from {}: not run\n", ln(f.from));
  else if (!fix_costs_measured(f) && !f.candidates.empty())  // nothing fixed it, so nothing was timed
    out += fmt::format("    fix search from {} ({}):\n", ln(f.from), repeats);
  else if (command)  // exec: each timed run is one run of the command
    out += fmt::format(
        "    fix search from {} ({}; costs: the command's wall time over {} runs interleaved with {}, median "
        "ratio (lowest-highest)):\n",
        ln(f.from), repeats, f.timed_runs, ln(f.from));
  else
    out += fmt::format(
        "    fix search from {} ({}; costs: {} timed runs in {} rounds interleaved with {}, median ratio "
        "(lowest-highest)):\n",
        ln(f.from), repeats, std::max(f.timed_runs, kTimingRounds), kTimingRounds, ln(f.from));
  for (const auto& c : f.candidates) {
    const std::string toggles = c.config.size() > f.from.size() ? c.config.substr(f.from.size() + 1) : c.config;
    std::string line = fmt::format("      {:<40} {:<12}", ln(toggles), to_string(c.verdict));
    if (root_causes > 0 && (c.verdict == Verdict::Reproducible || c.verdict == Verdict::Diverged))
      line += fmt::format(" fixes {}/{} root causes", c.fixes.size(), root_causes);
    if (c.cost_ratio) line += fmt::format("  cost {}", cost_text(c));
    if (c.minimal) line += "  minimal";
    if (c.accuracy) line += "  " + ln(fix_accuracy_text(*c.accuracy, f.from));
    if ((c.verdict == Verdict::Raised || c.verdict == Verdict::Crashed || c.verdict == Verdict::Timeout) &&
        !c.message.empty())
      line += "  (" + ln(c.message.substr(0, c.message.find('\n'))) + ")";
    while (!line.empty() && line.back() == ' ') line.pop_back();  // the verdict column's padding, at the end of a line
    out += line + "\n";
  }
  out += fmt::format("    => {}\n", ln(f.conclusion));
  if (const FixCandidate* cheapest = cheapest_fix(f)) {
    const FixCandidate& c = *cheapest;
    const auto passed_over = downgrades_passed_over(f);
    out += fmt::format("       {}{}: {} ({}){}{}\n", cheapest_known(f) ? "cheapest" : "fix",
                       passed_over.empty() ? "" : " without a downgrade", fix_change_text(c, failing), ln(c.config),
                       cost_clause(c, ln(f.from)), ln(accuracy_clause(c, f.from)));
    for (const FixCandidate* other : fixes_costing_the_same(f))
      out += fmt::format("       the same cost within noise: {} ({}) at {}{}\n", fix_change_text(*other, failing),
                         ln(other->config), cost_text(*other), ln(accuracy_clause(*other, f.from)));
    for (const FixCandidate* down : passed_over)
      out += fmt::format("       not {} ({}): {}\n", fix_change_text(*down, failing), ln(down->config),
                         ln(fix_accuracy_text(*down->accuracy, f.from)));
    out += fmt::format("       C++:    {}\n       Python: {}\n", block(c.cpp, "               "),
                       block(c.python, "               "));
  }
  for (const auto& n : f.no_deterministic) {
    out += fmt::format("    {} has no deterministic implementation here{}\n", ln(n.op),
                       n.advice.empty() ? "" : ": " + ln(n.advice));
    for (const auto& a : n.alternatives) out += fmt::format("      - {}\n", ln(a));
  }
}

std::string flatten_env(const nlohmann::ordered_json& j, const std::string& prefix, std::string& out, size_t width) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = prefix.empty() ? ln(it.key()) : prefix + "." + ln(it.key());
    if (it->is_object()) {
      flatten_env(*it, key, out, width);
    } else if (it->is_array() && !it->empty() && it->front().is_object()) {
      for (size_t i = 0; i < it->size(); ++i) flatten_env((*it)[i], fmt::format("{}[{}]", key, i), out, width);
    } else {
      const std::string value = it->is_string() ? ln(it->get<std::string>())
                                : it->is_null()
                                    ? "(unset)"
                                    : ln(it->dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
      out += fmt::format("{:<{}} {}\n", key + ":", width, value);
    }
  }
  return out;
}

}  // namespace

// The frame of every kind with targets; each kind's own lines are in its file (reports/render_parts.h).

void text::target_lines(std::string& out, const Target& t, const std::vector<std::string>& input_names,
                        const std::vector<std::string>& outputs) {
  if (!t.inputs.empty()) out += fmt::format("  inputs: {}\n", fmt::join(named_inputs(t, input_names), ", "));
  // The model's outputs among the tensors compared (issue 54: only the JSON named output/logits),
  // the first few of a long list (a language model's cache).
  if (!outputs.empty()) {
    constexpr size_t kShown = 6;
    std::vector<std::string> shown;
    for (size_t i = 0; i < std::min(kShown, outputs.size()); ++i) shown.push_back(ln(outputs[i]));
    out += fmt::format("  outputs compared: {}{}\n", fmt::join(shown, ", "),
                       outputs.size() > kShown ? fmt::format(" and {} more", outputs.size() - kShown) : "");
  }
  for (const auto& note : t.notes) out += fmt::format("  note: {}\n", ln(note));
  if (t.referee && !t.referee->ran) out += fmt::format("  note: {}\n", ln(referee_note_line(*t.referee)));
}

void text::config_lines(std::string& out, const Target& t, const ConfigTable& table) {
  size_t width = 24;  // wider for long names ("default+mkl_cbwr=COMPATIBLE"), so the columns stay aligned
  for (const auto& c : t.configs) width = std::max(width, ln(c.name).size());
  out += fmt::format("  {:<{}} {:<13} {:>8} {:>9}  {}\n", "configuration", width, "verdict", "repeats", "diverged",
                     table.column);
  for (const auto& c : t.configs) {
    out += fmt::format("  {:<{}} {:<13} {:>8} {:>9}  {}\n", ln(c.name), width, to_string(c.verdict),
                       fmt::format("{}/{}", c.completed, c.repeats),
                       c.completed > 1 ? fmt::format("{}/{}", c.diverging_repeats, c.completed - 1) : "-",
                       c.compared ? compared_text(c) : std::to_string(c.tensor_count));
    if (c.verdict == Verdict::Diverged)
      out +=
          fmt::format("    divergence rate {:.2f} (95% CI {:.2f}-{:.2f}), {} distinct outcomes, {} {} differ{}\n",
                      c.divergence_rate, c.rate_ci_low, c.rate_ci_high, c.distinct_outcomes, c.diverged_tensors.size(),
                      findings_word(c, c.diverged_tensors.size()), c.diverged_tensors.size() == 1 ? "s" : "");
    if (c.allowed_by)
      out += fmt::format("    allowed: {} (allowlist entry {})\n", ln(c.allowed_by->reason), c.allowed_by->entry);
    if (c.within_tolerance) out += fmt::format("    {}\n", ln(tolerance_verdict(c)));
    if (const std::string u = undecided_text(c); !u.empty()) out += fmt::format("    {}\n", u);
    if (c.verdict == Verdict::Diverged) unfinished_line(out, c);
    finding_lines(out, c.diverged_tensors, 5, findings_word(c, 2).c_str());
    for (const auto& line : config_referee_lines(t.referee, c.referee)) out += fmt::format("    {}\n", ln(line));
    if (c.trace) trace_lines(out, c, 5);
    if (c.warm_up)
      for (const auto& line : warm_up_lines(*c.warm_up)) out += fmt::format("    {}\n", ln(line));
    if (table.extra) table.extra(out, c);
    if (c.fix_search)
      fix_lines(out, *c.fix_search, c.trace ? c.trace->root_causes.size() : 0, c.switches, table.command);
    if (!c.message.empty() && c.verdict != Verdict::Diverged) out += fmt::format("    {}\n", block(c.message, "    "));
    for (const auto& trial : c.trials)
      if (!trial.stderr_tail.empty() &&
          (trial.status == TrialStatus::Crashed || trial.status == TrialStatus::Timeout)) {
        const auto nl = trial.stderr_tail.rfind('\n');
        out += fmt::format("    repeat {} stderr: {}\n", trial.repeat,
                           ln(nl == std::string::npos ? trial.stderr_tail : trial.stderr_tail.substr(nl + 1)));
        break;
      }
  }
}

void text::outcome_lines(std::string& out, const Target& t) {
  if (const std::string power = detection_power_text(t); !power.empty()) out += fmt::format("  {}\n", power);
  if (!t.dependence) return;
  std::vector<std::string> groups;
  for (const auto& g : t.dependence->groups) {
    std::vector<std::string> names;
    for (const auto& n : g) names.push_back(ln(n));
    groups.push_back(fmt::format("{{{}}}", fmt::join(names, ", ")));
  }
  out += fmt::format("  configuration-dependent: each configuration is reproducible, but results differ between {}\n",
                     fmt::join(groups, " and "));
  finding_lines(out, t.dependence->differing, 5);
  if (t.dependence->referee) out += fmt::format("    {}\n", ln(class_summary_line(*t.dependence->referee)));
  for (const auto& cause : t.dependence->causes) out += fmt::format("    {}\n", config_cause_text(cause));
}

std::string text::report_tail(const Report& r, bool configuration_dependent) {
  std::string out;
  if (const std::string rule = auto_repeats_text(r); !rule.empty()) out += rule + "\n";
  for (const auto& e : r.allowlist_expired) out += fmt::format("{}\n", ln(e));
  for (const auto& e : r.allowlist_notes) out += fmt::format("note: {}\n", ln(e));
  if (!r.contention.empty()) out += fmt::format("note: {}\n", ln(r.contention));
  out += render_baseline_text(r);
  out += shard_text(r) + fleet_text(r);
  out += fmt::format("verdict: {}{}{}{} (exit {})\n", verdict_text(r),
                     configuration_dependent ? ", configuration-dependent" : "", warm_up_text(r),
                     baseline_verdict_text(r), r.exit_code);
  return out;
}

namespace {

std::string render_text_raw(const Report& r) {
  return std::visit(
      overloaded{[&](const RunBody& b) { return run_text(r, b); }, [&](const ExecBody& b) { return exec_text(r, b); },
                 [&](const ProbesBody& b) { return probes_text(r, b); },
                 [&](const Invariance& inv) { return invariance_text(r, inv); },
                 [&](const SelfTest& self) { return selftest_text(r, self); }},
      r.body);
}

}  // namespace

std::string shard_text(const Report& r) {
  if (!r.shard) return "";
  const auto& s = *r.shard;
  const std::string cells = s.first_cell == s.last_cell ? "no cell (the plan has fewer cells than shards)"
                            : s.last_cell - s.first_cell == 1
                                ? fmt::format("cell {}", s.first_cell + 1)
                                : fmt::format("cells {}-{}", s.first_cell + 1, s.last_cell);
  return fmt::format("shard {}/{} ({}): {} of {} of plan {}; join the shards with repro-audit merge\n", s.index,
                     s.count, ln(s.source), cells, s.plan_cells, ln(s.plan.substr(0, 12)));
}

std::string fleet_text(const Report& r) {
  if (!r.fleet) return "";
  const auto& f = *r.fleet;
  std::string out;
  // Each host with the shards it ran, as ranges: "node1 (shards 1-3, 7 of 8)".
  std::vector<std::pair<std::string, std::vector<int>>> hosts;
  double longest = 0, total = 0;
  for (const auto& s : f.shards) {
    auto it = std::find_if(hosts.begin(), hosts.end(), [&](const auto& h) { return h.first == s.host; });
    if (it == hosts.end()) it = hosts.insert(hosts.end(), {s.host, {}});
    it->second.push_back(s.index);
    longest = std::max(longest, s.wall_ms);
    total += s.wall_ms;
  }
  std::vector<std::string> where;
  for (auto& [host, ks] : hosts) {
    std::sort(ks.begin(), ks.end());
    std::vector<std::string> ranges;
    for (size_t i = 0; i < ks.size();) {
      size_t j = i;
      while (j + 1 < ks.size() && ks[j + 1] <= ks[j] + 1) ++j;
      ranges.push_back(ks[i] == ks[j] ? std::to_string(ks[i]) : fmt::format("{}-{}", ks[i], ks[j]));
      i = j + 1;
    }
    where.push_back(fmt::format("{} ({} {} of {})", ln(host), ks.size() == 1 ? "shard" : "shards",
                                fmt::join(ranges, ", "), f.count));
  }
  out += fmt::format("merged from {} of plan {} on {}: {}; longest shard {:.1f} s, all shards {:.1f} s\n",
                     plural(f.shards.size(), "shard", "shards"), ln(f.plan.substr(0, 12)),
                     plural(hosts.size(), "host", "hosts"), fmt::join(where, ", "), longest / 1000, total / 1000);
  for (size_t m = 1; m < f.machines.size(); ++m) {
    std::vector<std::string> keys;
    for (const auto& c : f.machines[m].changes)
      keys.push_back(fmt::format("{} {} -> {}", ln(c.key), ln(c.baseline), ln(c.current)));
    out += fmt::format("  machine {} (shards {}) differs from machine 1 in {}\n", m + 1,
                       fmt::join(f.machines[m].shards, ", "), fmt::join(keys, "; "));
  }
  for (const auto& x : f.failures)
    out += fmt::format("  {}: {} / {} on {} (shard {}/{})\n", ln(x.status), ln(x.target), ln(x.config), ln(x.host),
                       x.shard, f.count);
  if (f.replicated) {
    std::vector<std::string> differ;
    for (const auto& c : f.cells)
      if (!c.same) differ.push_back(fmt::format("{} / {}", ln(c.target), ln(c.config)));
    out +=
        fmt::format("  across {} machine kinds: {} of {} cells gave the same bits on every one{}{}\n",
                    f.machines.size(), f.cells.size() - differ.size(), f.cells.size(), differ.empty() ? "" : "; not: ",
                    fmt::join(differ.begin(),
                              differ.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(differ.size(), 10)), ", "));
    if (differ.size() > 10)
      out += fmt::format("    and {} more (the JSON report lists every cell)\n", differ.size() - 10);
  }
  for (const auto& n : f.notes) out += fmt::format("  note: {}\n", ln(n));
  return out;
}

// Names and messages may hold control characters and bytes that are not UTF-8: shown as \xNN.
std::string untested_torch_text(const Report& r) {
  const auto torch = r.environment.find("torch");
  if (torch == r.environment.end() || !torch->is_object()) return "";
  const auto line = torch->find("untested");
  return line != torch->end() && line->is_string() ? line->get<std::string>() : "";
}

std::string render_text(const Report& r) {
  const std::string untested = untested_torch_text(r);
  return printable((untested.empty() ? "" : "warning: " + ln(untested) + "\n") + render_text_raw(r), true);
}

std::string explained_cause(const BaselineComparison& b) {
  const bool weights =
      std::any_of(b.models.begin(), b.models.end(), [](const auto& m) { return m.relation == "other_weights"; });
  bool environment = !b.changes.empty();
  for (const auto& res : b.results) environment = environment || !res.switch_changes.empty();
  if (weights && environment) return "the environment and the model's weights";
  return weights ? "the model's weights" : "the environment";
}

ResaveAdvice resave_advice(const BaselineComparison& b) {
  if (b.schema == "repro-audit/report")
    return {"compare with the newer report from now on, in place of ", b.source, ""};
  return {"save the baseline again (rerun the audit with ", "--save-baseline " + b.source, ")"};
}

std::string baseline_verdict_text(const Report& r) {
  if (!r.baseline) return "";
  size_t regressions = 0, nondeterministic = 0;
  for (const auto& res : r.baseline->results)
    if (baseline_failure(r, res)) (res.status == BaselineStatus::Regression ? regressions : nondeterministic) += 1;
  std::vector<std::string> parts;
  if (regressions) parts.push_back(fmt::format("{} baseline regression{}", regressions, regressions == 1 ? "" : "s"));
  if (nondeterministic) parts.push_back(fmt::format("{} nondeterministic against the baseline", nondeterministic));
  if (!parts.empty()) return fmt::format(", {}", fmt::join(parts, ", "));
  const auto any = [&](BaselineStatus s) {
    return std::any_of(r.baseline->results.begin(), r.baseline->results.end(),
                       [s](const auto& x) { return x.status == s; });
  };
  if (any(BaselineStatus::Explained))
    return fmt::format(", changed with {} since the baseline", explained_cause(*r.baseline));
  return any(BaselineStatus::Match) ? ", matches the baseline" : "";
}

namespace {

std::string render_environment_text_raw(const nlohmann::ordered_json& env) {
  std::string out;
  flatten_env(env, "", out, 40);
  return out;
}

}  // namespace

// Names and messages may hold control characters and bytes that are not UTF-8: shown as \xNN.
std::string render_environment_text(const nlohmann::ordered_json& env) {
  return printable(render_environment_text_raw(env), true);
}

}  // namespace ra::report
