// SPDX-License-Identifier: Apache-2.0
#include "reports/render.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

namespace ra::report {
namespace {

std::string stats_line(const DivergenceStats& s) {
  if (!s.note.empty()) return s.note;
  std::string idx = s.first_index_nd.empty() ? "[]" : fmt::format("[{}]", fmt::join(s.first_index_nd, ","));
  return fmt::format("{}/{} elements differ, first at {}, max abs {:.3g}, max {:g} ULP{}", s.differing, s.numel, idx,
                     s.max_abs_diff, s.max_ulp, s.nan_mismatches ? fmt::format(", {} NaN mismatches", s.nan_mismatches) : "");
}

void findings(std::string& out, const std::vector<TensorFinding>& fs, size_t limit) {
  for (size_t i = 0; i < fs.size() && i < limit; ++i) {
    const auto& f = fs[i];
    out += fmt::format("      {} {}[{}]: {}\n", f.name, f.dtype, fmt::join(f.shape, "x"),
                       f.stats ? stats_line(*f.stats) : std::string("digests differ"));
  }
  if (fs.size() > limit) out += fmt::format("      ... and {} more tensors\n", fs.size() - limit);
}

void replay_lines(std::string& out, const Replay& r) {
  const std::string omit = r.omit.empty() ? "" : fmt::format(", --replay-omit {}", fmt::join(r.omit, ","));
  if (r.config.empty()) {
    out += fmt::format("  restart-replay{}: {}\n    {}\n", omit, to_string(r.verdict), r.reason);
    return;
  }
  out += fmt::format("  restart-replay under {} ({} steps, checkpoint, {} more in a fresh process{}): {}\n", r.config,
                     r.steps_before, r.steps_after, omit, to_string(r.verdict));
  if (!r.reason.empty()) out += fmt::format("    {}\n", r.reason);
  std::vector<std::string> parts;
  for (const auto& c : r.components) {
    std::string state = c.tensors == 0 && c.restored_match ? "empty" : c.restored_match ? "match" : "differs";
    if (!c.in_checkpoint) state += " (not in the checkpoint)";
    parts.push_back(fmt::format("{} {}", c.name, state));
  }
  if (!parts.empty()) out += fmt::format("    state at the restart: {}\n", fmt::join(parts, ", "));
  findings(out, r.differing, 5);
}

std::string flatten_env(const nlohmann::ordered_json& j, const std::string& prefix, std::string& out, size_t width) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object()) {
      flatten_env(*it, key, out, width);
    } else if (it->is_array() && !it->empty() && it->front().is_object()) {
      for (size_t i = 0; i < it->size(); ++i) flatten_env((*it)[i], fmt::format("{}[{}]", key, i), out, width);
    } else {
      const std::string value = it->is_string() ? it->get<std::string>() : it->is_null() ? "(unset)" : it->dump();
      out += fmt::format("{:<{}} {}\n", key + ":", width, value);
    }
  }
  return out;
}

}  // namespace

std::string render_text(const Report& r) {
  if (!r.targets.empty() && r.targets.front().probe) return render_probes_text(r);
  std::string out;
  for (const auto& t : r.targets) {
    out += fmt::format("{} ({}, {}{}, seed {})\n", t.name, t.device, t.mode,
                       t.mode == "train" ? fmt::format(", {} steps, {} lr {:g}", t.steps, t.optimizer, t.lr) : "", t.seed);
    if (!t.inputs.empty()) out += fmt::format("  inputs: {}\n", fmt::join(t.inputs, ", "));
    out += fmt::format("  {:<24} {:<13} {:>8} {:>9}  {}\n", "configuration", "verdict", "repeats", "diverged", "tensors");
    for (const auto& c : t.configs) {
      out += fmt::format("  {:<24} {:<13} {:>8} {:>9}  {}\n", c.name, to_string(c.verdict),
                         fmt::format("{}/{}", c.completed, c.repeats),
                         c.completed > 1 ? fmt::format("{}/{}", c.diverging_repeats, c.completed - 1) : "-", c.tensor_count);
      if (c.verdict == Verdict::Diverged)
        out += fmt::format("    divergence rate {:.2f} (95% CI {:.2f}-{:.2f}), {} distinct outcomes, {} tensors differ\n",
                           c.divergence_rate, c.rate_ci_low, c.rate_ci_high, c.distinct_outcomes, c.diverged_tensors.size());
      findings(out, c.diverged_tensors, 5);
      if (!c.message.empty() && c.verdict != Verdict::Diverged) out += fmt::format("    {}\n", c.message);
      for (const auto& trial : c.trials)
        if (!trial.stderr_tail.empty() && (trial.status == TrialStatus::Crashed || trial.status == TrialStatus::Timeout)) {
          const auto nl = trial.stderr_tail.rfind('\n');
          out += fmt::format("    repeat {} stderr: {}\n", trial.repeat,
                             nl == std::string::npos ? trial.stderr_tail : trial.stderr_tail.substr(nl + 1));
          break;
        }
    }
    if (t.dependence) {
      std::vector<std::string> groups;
      for (const auto& g : t.dependence->groups) groups.push_back(fmt::format("{{{}}}", fmt::join(g, ", ")));
      out += fmt::format("  configuration-dependent: each configuration is reproducible, but results differ between {}\n",
                         fmt::join(groups, " and "));
      findings(out, t.dependence->differing, 5);
    }
    if (t.replay) replay_lines(out, *t.replay);
  }
  out += fmt::format("verdict: {}{} (exit {})\n", to_string(r.verdict),
                     !r.targets.empty() && r.targets.front().dependence ? ", configuration-dependent" : "", r.exit_code);
  return out;
}

std::string render_environment_text(const nlohmann::ordered_json& env) {
  std::string out;
  flatten_env(env, "", out, 40);
  return out;
}

}  // namespace ra::report
