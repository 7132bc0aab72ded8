// SPDX-License-Identifier: Apache-2.0
// Root causes, fix searches and the alert census of the HTML report (reports/html.cpp has the
// essay; the probes' facts under the census are probes', reports/probes_render.cpp). None of them writes a clock figure: fix costs live in the
// timing section, and the fix tables' cost cells stay empty for the page's script to fill.
#include "reports/html.h"
#include "reports/referee_model.h"
#include "reports/render.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace ra::report::html {
namespace {

std::string bytes_text(uint64_t b) {
  if (b < 1024) return fmt::format("{} B", b);
  if (b < 1024 * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024);
  return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1024.0 * 1024));
}

std::string heading(size_t i, size_t j, const Target& t, const ConfigResult& c) {
  return fmt::format("<a href=\"#{}\">{} · {}</a> {}", config_id(i, j), esc(t.name), esc(c.name), badge(c.verdict));
}

void root_cause_row(std::string& out, const RootCause& rc, const FixSearch* fixes, size_t i, size_t j) {
  std::string what = esc(rc.direction);
  if (rc.step > 0) what += fmt::format(", step {}", rc.step);
  if (rc.thread != 0) what += fmt::format(", thread {}", rc.thread);
  std::vector<std::string> where;
  if (!rc.module.empty()) where.push_back("module " + code(rc.module));
  if (!rc.source.empty()) where.push_back("source " + code(rc.source));
  if (!rc.node.empty())
    where.push_back("in " + code(rc.node) + (rc.forward_op.empty() ? "" : " of " + code(rc.forward_op)));
  if (where.empty()) where.push_back("<span class=\"none\">not known</span>");
  std::vector<std::string> outputs;
  for (size_t k = 0; k < rc.outputs.size(); ++k) {
    const bool differs = std::find(rc.differing_outputs.begin(), rc.differing_outputs.end(), static_cast<int>(k)) !=
                         rc.differing_outputs.end();
    outputs.push_back(differs ? "<mark title=\"differs\">" + esc(rc.outputs[k]) + "</mark>" : esc(rc.outputs[k]));
  }
  std::vector<std::string> fixed;
  for (const size_t k : rc.fixed_by)
    if (fixes && k < fixes->candidates.size())
      fixed.push_back(fmt::format("<a href=\"#{}\">{}</a>{}", fix_id(i, j, k), code(fixes->candidates[k].config),
                                  fixes->candidates[k].downgrade() ? " (a downgrade)" : ""));
  out += fmt::format(
      "<tr class=\"root-cause\" data-direction=\"{}\" data-op=\"{}\"><td class=\"num\">#{}</td>"
      "<td>{}<div class=\"sub\">{}</div></td><td>{}</td>"
      "<td><div>in: {}</div><div>out: {}</div></td>"
      "<td>{}/{} runs{}<div class=\"sub\">{} later op{} propagated{}</div></td><td>{}</td><td>{}</td></tr>\n",
      esc(rc.direction), esc(rc.op), rc.position, code(rc.op), what, fmt::join(where, "<br>"),
      rc.inputs.empty() ? "-" : esc(fmt::format("{}", fmt::join(rc.inputs, ", "))),
      outputs.empty() ? "-" : fmt::format("{}", fmt::join(outputs, ", ")), rc.runs_diverged, rc.runs_compared,
      rc.repeats.empty()
          ? ""
          : fmt::format(" (repeat{} {})", rc.repeats.size() == 1 ? "" : "s", fmt::join(rc.repeats, ", ")),
      rc.propagated, rc.propagated == 1 ? "" : "s",
      rc.independent_mismatches ? fmt::format(", {} with matching inputs", rc.independent_mismatches) : "",
      (rc.stats ? esc(stats_text(*rc.stats)) : "<span class=\"none\">no dump compared</span>") +
          (rc.referee ? "<div class=\"sub\">" + esc(classified_line(*rc.referee)) + "</div>" : ""),
      fixed.empty() ? "-" : fmt::format("{}", fmt::join(fixed, "<br>")));
}

void splits_table(std::string& out, const TraceSummary& t) {
  out += fmt::format("<details class=\"splits\"><summary>{} where the op streams differ</summary>\n",
                     plural(t.splits.size(), "place", "places"));
  out +=
      "<table><thead><tr><th>reference at</th><th>thread</th><th>reference op</th><th>other op</th><th>unmatched</th>"
      "<th>reordered</th><th>runs</th></tr></thead><tbody>\n";
  for (const auto& s : t.splits)
    out += fmt::format(
        "<tr class=\"split\"><td class=\"num\">#{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{} vs {}</td>"
        "<td class=\"num\">{}</td><td>{}/{} (repeat{} {})</td></tr>\n",
        s.reference_position, s.thread, s.reference_op.empty() ? "-" : code(s.reference_op),
        s.other_op.empty() ? "-" : code(s.other_op), s.unmatched_reference, s.unmatched_other, s.reordered, s.runs,
        t.runs_compared, s.repeats.size() == 1 ? "" : "s", fmt::join(s.repeats, ", "));
  out += "</tbody></table>\n</details>\n";
}

std::string toggles_text(const FixCandidate& c) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : c.toggles) parts.push_back(code(k + "=" + v));
  return parts.empty() ? code(c.config) : fmt::format("{}", fmt::join(parts, " "));
}

void fix_search(std::string& out, const FixSearch& f, const ConfigResult& c, size_t i, size_t j, const Target& t,
                bool command) {
  const size_t causes = c.trace ? c.trace->root_causes.size() : 0;
  out += fmt::format("<div class=\"fix-search\" id=\"fixes-{}\" data-candidates=\"{}\">\n<h3>{}</h3>\n",
                     config_id(i, j), f.candidates.size(), heading(i, j, t, c));
  out += fmt::format("<p class=\"conclusion\">{}</p>\n", esc(f.conclusion));
  if (f.candidates.empty() && f.repeats == 0) {  // exec: not searched (a missing seeding line explains it)
    out += "</div>\n";
    return;
  }
  // exec runs the command, untraced: each candidate is that many runs, and no root cause is counted.
  out += fmt::format(
      "<p class=\"hint\">From {}: each switch alone, then combinations, then reductions to minimal sets; {}{} {} per "
      "candidate{}. Costs are measured (see Timing).</p>\n",
      code(f.from), f.repeats_auto ? "up to " : "", f.repeats, command ? "runs of the command" : "traced repeats",
      f.repeats_auto ? ", each until decided" : "");
  out += fmt::format(
      "<table class=\"fixes\"><thead><tr><th>#</th><th>switches on top of the failing configuration</th><th>stage</th>"
      "<th>verdict</th>{}<th>reproducible</th><th>minimal</th><th>cost</th></tr></thead><tbody>\n",
      command ? "" : "<th>root causes fixed</th>");
  for (size_t k = 0; k < f.candidates.size(); ++k) {
    const FixCandidate& fc = f.candidates[k];
    const bool counted = causes > 0 && (fc.verdict == Verdict::Reproducible || fc.verdict == Verdict::Diverged);
    const std::string fixed =
        command ? "" : fmt::format("<td>{}</td>", counted ? fmt::format("{}/{}", fc.fixes.size(), causes) : "-");
    out += fmt::format(
        "<tr class=\"fix-candidate{}\" id=\"{}\" data-verdict=\"{}\" data-minimal=\"{}\" data-fixes-all=\"{}\">"
        "<td class=\"num\">{}</td><td title=\"{}\">{}</td><td>{}</td><td>{}</td>{}<td>{}</td><td>{}</td>"
        "<td class=\"cost\" data-fix=\"{}\"></td></tr>\n",
        fc.minimal ? " minimal" : "", fix_id(i, j, k), to_string(fc.verdict), fc.minimal, fc.fixes_all, k + 1,
        esc(fc.config), toggles_text(fc), esc(fc.stage), badge(fc.verdict), fixed, fc.fixes_all ? "yes" : "no",
        fc.minimal ? (fc.downgrade() ? "<strong>minimal</strong>, a downgrade" : "<strong>minimal</strong>") : "",
        fix_id(i, j, k));
    if (!fc.message.empty())
      out += fmt::format("<tr class=\"fix-message\"><td></td><td colspan=\"{}\">{}</td></tr>\n", command ? 6 : 7,
                         message(fc.message));
  }
  out += "</tbody></table>\n";
  for (size_t k = 0; k < f.candidates.size(); ++k) {
    const FixCandidate& fc = f.candidates[k];
    if (!fc.minimal) continue;
    out += fmt::format(
        "<div class=\"snippet\" data-fix=\"{}\"><h4>Minimal fix {}: {}</h4>{}<div class=\"snippets\">"
        "<figure><figcaption>C++</figcaption><pre><code class=\"cpp\">{}</code></pre></figure>"
        "<figure><figcaption>Python</figcaption><pre><code class=\"python\">{}</code></pre></figure></div></div>\n",
        fix_id(i, j, k), k + 1, code(fc.config),
        fc.accuracy ? fmt::format("<p class=\"accuracy\">{}</p>", esc(fix_accuracy_text(*fc.accuracy, f.from))) : "",
        esc(fc.cpp), esc(fc.python));
  }
  for (const auto& n : f.no_deterministic) {
    out +=
        fmt::format("<div class=\"no-deterministic\"><h4>{} has no deterministic implementation here</h4>", code(n.op));
    if (!n.message.empty()) out += message(n.message);
    if (!n.advice.empty()) out += fmt::format("<p>{}</p>", esc(n.advice));
    if (!n.alternatives.empty()) {
      out += "<ul class=\"alternatives\">";
      for (const auto& a : n.alternatives) out += fmt::format("<li>{}</li>", esc(a));
      out += "</ul>";
    }
    out += "</div>\n";
  }
  out += "</div>\n";
}

void census_names(std::string& out, const Report& r, const char* cls, const char* label,
                  const std::vector<std::string>& names) {
  if (names.empty()) return;
  std::vector<std::string> links;
  for (const auto& n : names) links.push_back(target_link(r, n));
  out +=
      fmt::format("<details class=\"census-names\" data-class=\"{}\"{}><summary>{} ({})</summary><p>{}</p></details>\n",
                  cls, names.size() <= 12 ? " open" : "", label, names.size(), fmt::join(links, ", "));
}

std::string census_cell(const char* cls, const std::vector<std::string>& names) {
  return fmt::format("<td class=\"census-class\" data-class=\"{}\" data-count=\"{}\"><strong>{}</strong></td>", cls,
                     names.size(), names.size());
}

}  // namespace

std::string target_link(const Report& r, const std::string& name) {
  const ConstTargets targets = r.targets();
  for (size_t i = 0; i < targets.size(); ++i)
    if (targets[i].name == name)
      return fmt::format("<a class=\"census-name\" href=\"#{}\">{}</a>", target_id(i), esc(name));
  return fmt::format("<span class=\"census-name\">{}</span>", esc(name));
}

void root_causes_section(std::string& out, const Report& r) {
  const ConstTargets targets = r.targets();
  out += "<section id=\"root-causes\">\n<h2>Root causes</h2>\n";
  bool any = false;
  std::vector<std::string> identical;  // traced configurations whose runs did not differ at all
  for (size_t i = 0; i < targets.size(); ++i)
    for (size_t j = 0; j < targets[i].configs.size(); ++j) {
      const ConfigResult& c = targets[i].configs[j];
      if (!c.trace) continue;
      if (!any)
        out +=
            "<p class=\"hint\">The first op of each diverging run whose inputs matched the reference run and whose "
            "outputs "
            "did not; later differences were propagated from it.</p>\n";
      any = true;
      const TraceSummary& t = *c.trace;
      if (c.verdict != Verdict::Diverged && t.root_causes.empty() && t.splits.empty()) {
        identical.push_back(fmt::format("<a href=\"#{}\">{} · {}</a> ({}/{} runs identical, {} records per run)",
                                        config_id(i, j), esc(targets[i].name), esc(c.name), t.runs_identical,
                                        t.runs_compared, t.records));
        continue;
      }
      out += fmt::format("<div class=\"trace\" data-root-causes=\"{}\">\n<h3>{}</h3>\n", t.root_causes.size(),
                         heading(i, j, targets[i], c));
      out += fmt::format(
          "<p class=\"facts\">{} records per run, {} in memory; {} compared, {} identical{}.</p>\n", t.records,
          bytes_text(t.memory_bytes), plural(static_cast<size_t>(t.runs_compared), "run", "runs"), t.runs_identical,
          t.dropped ? fmt::format("; {} records dropped (capacity {} digests)", t.dropped, t.capacity) : "");
      if (t.root_causes.empty() && c.verdict == Verdict::Diverged)
        out += "<p>No op turned matching inputs into different outputs in the trace.</p>\n";
      if (!t.root_causes.empty()) {
        out +=
            "<table class=\"root-causes\"><thead><tr><th>at</th><th>op</th><th>where in the model</th><th>tensors "
            "(differing outputs marked)</th><th>runs</th><th>difference</th><th>fixed by</th></tr></thead><tbody>\n";
        const FixSearch* f = c.fix_search ? &*c.fix_search : nullptr;
        for (const auto& rc : t.root_causes) root_cause_row(out, rc, f, i, j);
        out += "</tbody></table>\n";
      }
      if (!t.splits.empty()) splits_table(out, t);
      out += "</div>\n";
    }
  // Configuration-dependent targets: where each later group parts from the first (run --trace).
  for (size_t i = 0; i < targets.size(); ++i) {
    if (!targets[i].dependence) continue;
    for (const auto& cause : targets[i].dependence->causes) {
      any = true;
      const bool named = cause.trace && !cause.trace->root_causes.empty();
      out += fmt::format(
          "<div class=\"trace config-cause\" data-config=\"{}\" data-reference=\"{}\">\n<h3>{} · {} against {}</h3>\n",
          esc(cause.config), esc(cause.reference_config), esc(targets[i].name), esc(cause.config),
          esc(cause.reference_config));
      out += fmt::format(
          "<p class=\"facts\">The two configurations are each reproducible and give different results. What "
          "separates them: {}. Their reference repeats' traces were aligned; the first op whose inputs matched "
          "and whose outputs did not is where the results part.</p>\n",
          esc(switch_changes_text(cause.switches)));
      if (named) {
        out +=
            "<table class=\"root-causes\"><thead><tr><th>at</th><th>op</th><th>where in the model</th><th>tensors "
            "(differing outputs marked)</th><th>runs</th><th>difference</th><th>fixed by</th></tr></thead><tbody>\n";
        for (const auto& rc : cause.trace->root_causes) root_cause_row(out, rc, nullptr, i, 0);
        out += "</tbody></table>\n";
      } else {
        out += fmt::format("<p class=\"note\">{}.</p>\n", esc(cause.note));
      }
      if (cause.trace && !cause.trace->splits.empty()) splits_table(out, *cause.trace);
      out += "</div>\n";
    }
  }
  if (!identical.empty())
    out +=
        fmt::format("<p class=\"traced-identical\">Traced, with no op whose outputs differed between runs: {}.</p>\n",
                    fmt::join(identical, "; "));
  if (!any)
    out +=
        "<p class=\"empty\">No trace recorded: <code>repro-audit run --trace</code> names the op where each run first "
        "diverged and where it is in the model.</p>\n";
  out += "</section>\n";
}

void fixes_section(std::string& out, const Report& r, bool command) {
  out += "<section id=\"fixes\">\n<h2>Fixes</h2>\n";
  bool any = false;
  const ConstTargets targets = r.targets();
  for (size_t i = 0; i < targets.size(); ++i)
    for (size_t j = 0; j < targets[i].configs.size(); ++j)
      if (const ConfigResult& c = targets[i].configs[j]; c.fix_search) {
        fix_search(out, *c.fix_search, c, i, j, targets[i], command);
        any = true;
      }
  if (!any && command)
    out +=
        "<p class=\"empty\">No fix search: no configuration diverged, or <code>--no-fix-search</code> was given. "
        "<code>exec</code> searches, for each diverged configuration, the smallest set of switches that makes it "
        "reproducible.</p>\n";
  else if (!any)
    out +=
        "<p class=\"empty\">No fix search: <code>repro-audit run --trace</code> searches, for each diverged "
        "configuration, "
        "the smallest set of switches that makes it reproducible.</p>\n";
  out += "</section>\n";
}

void census_section(std::string& out, const Report& r, const std::optional<Census>& census,
                    const std::function<void(std::string&)>& tail) {
  out += "<section id=\"census\">\n<h2>Alert census</h2>\n";
  if (census) {
    const Census& c = *census;
    out += fmt::format(
        "<p class=\"hint\">Each probe ran once more under {} (determinism alerts as warnings): did PyTorch "
        "warn, and did the probe diverge in any configuration?</p>\n",
        code(c.config));
    out += "<table class=\"census\"><thead><tr><th></th><th>diverged</th><th>stable</th></tr></thead><tbody>\n";
    out += "<tr><th scope=\"row\">alerted</th>" + census_cell("alerted_diverged", c.alerted_diverged) +
           census_cell("alerted_stable", c.alerted_stable) + "</tr>\n";
    out += "<tr><th scope=\"row\">silent</th>" + census_cell("silent_diverged", c.silent_diverged) +
           census_cell("stable", c.stable) + "</tr>\n";
    out +=
        "<tr><th scope=\"row\">not run</th>" + census_cell("not_run", c.not_run) + "<td></td></tr>\n</tbody></table>\n";
    census_names(out, r, "alerted_diverged", "Alerted and diverged", c.alerted_diverged);
    census_names(out, r, "silent_diverged", "Diverged without an alert", c.silent_diverged);
    census_names(out, r, "alerted_stable", "Alerted but stable here", c.alerted_stable);
    census_names(out, r, "stable", "Silent and stable", c.stable);
    census_names(out, r, "not_run", "Not run in the census", c.not_run);
  } else {
    out +=
        "<p class=\"empty\">No alert census: <code>repro-audit probes</code> runs one, each probe under deterministic "
        "algorithms in warn-only mode.</p>\n";
  }
  if (tail) tail(out);
  out += "</section>\n";
}

}  // namespace ra::report::html
