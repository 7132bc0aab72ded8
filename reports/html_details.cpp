// SPDX-License-Identifier: Apache-2.0
// The per-target details of the HTML report (reports/html.cpp has the essay): one <details> per
// target with, per configuration, the divergence rate, each tensor that differs with its
// statistics, and failed trials with their messages and stderr; then the configuration dependence
// and what the target's kind adds (reports/<kind>_render.cpp: run's restart-replay, exec's program).
#include "reports/html.h"
#include "reports/render.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace ra::report::html {
namespace {

// One row of a tensor table; `cls` tells the kind of finding (diverged-tensor, dependence-tensor,
// replay-tensor) so that a reader, or a test, can count them.
std::string tensor_row(const TensorFinding& f, const char* cls, bool trials) {
  std::string row =
      fmt::format("<tr class=\"tensor {}\"><td><code title=\"reference {} / other {}\">{}</code></td><td>{}</td>", cls,
                  esc(f.reference_digest), esc(f.other_digest), esc(f.name), esc(tensor_type(f.dtype, f.shape)));
  if (!f.stats) {
    row += "<td colspan=\"7\" class=\"none\">digests differ; no element statistics (no dump to compare)</td>";
  } else if (!f.stats->note.empty()) {
    row += fmt::format("<td colspan=\"7\">{}</td>", esc(f.stats->note));
  } else {
    const DivergenceStats& s = *f.stats;
    const std::string ulp = std::isnan(s.max_ulp) ? std::string("&mdash;") : fmt::format("{:g}", s.max_ulp);
    const std::string across =
        s.sign_differs > 0 ? fmt::format(" <span class=\"none\">({} across zero)</span>", s.sign_differs) : "";
    const std::string tol =
        s.tolerance == Tolerance{}
            ? std::string("&mdash;")
            : fmt::format("<span title=\"rtol {:g}, atol {:g}\">{}</span>", s.tolerance.rtol, s.tolerance.atol,
                          s.beyond_tolerance == 0 ? std::string("all within") : std::to_string(s.beyond_tolerance));
    row += fmt::format(
        "<td class=\"num\">{}/{}</td><td>[{}]</td><td class=\"num\">{:.3g}</td><td class=\"num\">{:.3g}</td>"
        "<td class=\"num\">{}{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
        s.differing, s.numel, fmt::join(s.first_index_nd, ","), s.max_abs_diff, s.max_rel_diff, ulp, across,
        s.nan_mismatches, tol);
  }
  if (trials) row += fmt::format("<td class=\"num\">{}</td>", f.diverging_trials);
  return row + "</tr>\n";
}

void config_block(std::string& out, const Target& t, size_t i, size_t j) {
  const ConfigResult& c = t.configs[j];
  out += fmt::format("<div class=\"config\" id=\"{}\" data-verdict=\"{}\">\n<h4>{} {}</h4>\n", config_id(i, j),
                     to_string(c.verdict), badge(c.verdict), esc(c.name));
  std::string facts = fmt::format("{} of {} repeats completed; {}", c.completed, c.repeats,
                                  c.compared ? "compared per run: " + compared_text(c)
                                             : plural(c.tensor_count, "tensor", "tensors") + " digested per run");
  if (c.completed >= 2)
    facts =
        fmt::format("divergence rate {:.2f} (95% CI {:.2f}-{:.2f}): {} of {} repeats differ from the reference, {}; ",
                    c.divergence_rate, c.rate_ci_low, c.rate_ci_high, c.diverging_repeats, c.completed - 1,
                    plural(static_cast<size_t>(c.distinct_outcomes), "distinct outcome", "distinct outcomes")) +
        facts;
  out += fmt::format("<p class=\"facts\">{}.</p>\n", esc(facts));
  if (c.warm_up)
    for (const auto& line : warm_up_lines(*c.warm_up)) out += fmt::format("<p class=\"facts\">{}</p>\n", esc(line));
  if (j == 0 && t.referee && !t.referee->ran)
    out += fmt::format("<p class=\"facts\">{}</p>\n", esc(referee_note_line(*t.referee)));
  for (const auto& line : config_referee_lines(t.referee, c.referee))
    out += fmt::format("<p class=\"facts\">{}</p>\n", esc(line));
  if (c.allowed_by)
    out += fmt::format("<p class=\"allowed\">Allowed by allowlist entry {}: {}{}</p>\n", c.allowed_by->entry,
                       esc(c.allowed_by->reason),
                       c.allowed_by->expires.empty() ? "" : fmt::format(" (expires {})", esc(c.allowed_by->expires)));
  if (c.within_tolerance) out += fmt::format("<p class=\"allowed\">{}</p>\n", esc(tolerance_verdict(c)));
  if (const std::string u = undecided_text(c); !u.empty())
    out += fmt::format("<p class=\"undecided\">{}</p>\n", esc(u));
  // A diverged configuration's message only counts the repeats, as the line above does.
  if (!c.message.empty() && c.verdict != Verdict::Diverged) out += message(c.message) + "\n";
  if (!c.diverged_tensors.empty()) {
    out += fmt::format("<p>{} {} differ{} from the reference repeat:</p>\n", c.diverged_tensors.size(),
                       findings_word(c, c.diverged_tensors.size()), c.diverged_tensors.size() == 1 ? "s" : "");
    tensor_table(out, c.diverged_tensors, "diverged-tensor", true, c.compared ? "entry" : "tensor");
  }
  for (const auto& trial : c.trials) {
    if (trial.status == TrialStatus::Ok) continue;
    std::string how = to_string(trial.status);
    if (trial.signal != 0)
      how += fmt::format(", signal {}", trial.signal);
    else if (trial.exit_code != 0)
      how += fmt::format(", exit code {}", trial.exit_code);
    out += fmt::format("<div class=\"trial-failure\" data-status=\"{}\"><p>Repeat {}: {}</p>", to_string(trial.status),
                       trial.repeat, esc(how));
    if (!trial.message.empty() && trial.message != c.message) out += message(trial.message);
    if (!trial.stderr_tail.empty())
      out += fmt::format("<details class=\"stderr\" open><summary>stderr, last lines</summary><pre>{}</pre></details>",
                         esc(trial.stderr_tail));
    out += "</div>\n";
  }
  out += "</div>\n";
}

}  // namespace

void tensor_table(std::string& out, const std::vector<TensorFinding>& fs, const char* cls, bool trials,
                  const char* what) {
  out += fmt::format(
      "<table class=\"tensors\"><thead><tr><th>{}</th><th>type</th><th class=\"num\">elements "
      "differing</th><th>first at</th>"
      "<th class=\"num\">max abs diff</th><th class=\"num\">max rel diff</th><th class=\"num\">max ULP</th>"
      "<th class=\"num\">NaN mismatches</th><th class=\"num\">beyond tolerance</th>",
      what);
  if (trials) out += "<th class=\"num\">trials differing</th>";
  out += "</tr></thead><tbody>\n";
  for (const auto& f : fs) out += tensor_row(f, cls, trials);
  out += "</tbody></table>\n";
}

void details_section(std::string& out, const Report& r, const TargetParts& parts) {
  out += "<section id=\"details\">\n<h2>Per-target details</h2>\n";
  out += *parts.details_hint
             ? std::string(parts.details_hint)
             : "<p class=\"hint\">Per configuration: the divergence rate, each tensor that differs (elements "
               "differing, first index, largest absolute and ULP difference), failed trials with their messages; then "
               "configuration dependence and the restart-replay.</p>\n";
  out += "<div id=\"details-controls\" class=\"controls\"></div>\n";
  const ConstTargets targets = r.targets();
  for (size_t i = 0; i < targets.size(); ++i) {
    const Target& t = targets[i];
    const bool open = targets.size() <= 5 && t.verdict != Verdict::Reproducible && t.verdict != Verdict::Skipped;
    std::string facts = fmt::format("{} · {}", kind_of(r.body).target, t.device);
    if (!t.mode.empty()) facts += " · " + t.mode;
    if (parts.facts) facts += parts.facts(i);
    facts += fmt::format(" · seed {}", t.seed);
    out += fmt::format(
        "<details class=\"target\" id=\"{}\" data-verdict=\"{}\"{}>\n<summary>{} <strong>{}</strong> "
        "<span class=\"sub\">{}</span></summary>\n<div class=\"target-body\">\n",
        target_id(i), to_string(t.verdict), open ? " open" : "", badge(t.verdict), esc(t.name), esc(facts));
    if (!t.path.empty() || !t.inputs.empty()) {
      out += "<p class=\"facts\">";
      if (!t.path.empty()) out += "path " + code(t.path);
      if (!t.inputs.empty()) {
        std::vector<std::string> inputs;
        for (const auto& in : named_inputs(t, parts.input_names ? parts.input_names(i) : std::vector<std::string>()))
          inputs.push_back(code(in));
        out += fmt::format("{}inputs {}", t.path.empty() ? "" : "; ", fmt::join(inputs, ", "));
      }
      out += "</p>\n";
    }
    for (size_t j = 0; j < t.configs.size(); ++j) config_block(out, t, i, j);
    if (t.dependence) {
      std::vector<std::string> groups;
      for (const auto& g : t.dependence->groups) {
        std::vector<std::string> names;
        for (const auto& n : g) names.push_back(code(n));
        groups.push_back(fmt::format("{{{}}}", fmt::join(names, ", ")));
      }
      out += fmt::format(
          "<div class=\"dependence\"><h4>Configuration-dependent</h4><p>Each configuration is reproducible, "
          "but the results differ between {} (a difference of configurations, not nondeterminism).</p>\n",
          fmt::join(groups, " and "));
      tensor_table(out, t.dependence->differing, "dependence-tensor", false);
      out += "</div>\n";
    }
    if (parts.details) parts.details(out, i);
    out += "</div>\n</details>\n";
  }
  out += "</section>\n";
}

}  // namespace ra::report::html
