// SPDX-License-Identifier: Apache-2.0
// The HTML page's comparison with a baseline (`--baseline`, `compare`): where the baseline came
// from, what changed in the environment (and what can each change affect), a table of the
// target x configuration results (the listed ones, as in the text and Markdown summaries), and for
// each noteworthy result its reason and the tensors that differ. No clock figure.
#include "reports/html.h"
#include "reports/render.h"

#include <fmt/format.h>

namespace ra::report::html {
namespace {

std::string status_badge(BaselineStatus s) {
  return fmt::format("<span class=\"badge b-{0}\">{0}</span>", to_string(s));
}

void changes_table(std::string& out, const std::vector<EnvironmentChange>& changes, const char* cls, bool affects) {
  out += fmt::format(
      "<table class=\"{}\"><thead><tr><th>key</th><th>baseline</th><th>current</th>{}</tr></thead><tbody>\n", cls,
      affects ? "<th>can affect</th>" : "");
  for (const auto& c : changes) {
    out += fmt::format("<tr class=\"env-change\"><td>{}</td><td>{}</td><td>{}</td>", code(c.key), esc(c.baseline),
                       esc(c.current));
    if (affects) out += fmt::format("<td>{}</td>", esc(affects_text(c.affects)));
    out += "</tr>\n";
  }
  out += "</tbody></table>\n";
}

std::string tensors_cell(const BaselineResult& b) {
  if (b.status == BaselineStatus::Missing || b.status == BaselineStatus::Added ||
      b.status == BaselineStatus::Incomparable)
    return "-";
  return b.differing == 0 ? fmt::format("{} match", b.tensors) : fmt::format("{}/{} differ", b.differing, b.tensors);
}

}  // namespace

void baseline_section(std::string& out, const Report& r) {
  if (!r.baseline) return;
  const BaselineComparison& b = *r.baseline;
  out += "<section id=\"baseline\">\n<h2>Baseline</h2>\n";
  out += fmt::format("<p>Compared with {} ({}, written by repro-audit {}): <strong>{}</strong>.</p>\n", code(b.source),
                     esc(b.schema), esc(b.tool_version), esc(baseline_counts(b)));
  if (b.changes.empty()) {
    out += "<p>The environment is unchanged since the baseline.</p>\n";
  } else {
    out += fmt::format("<h3>Environment changes ({})</h3>\n", b.changes.size());
    changes_table(out, b.changes, "env-changes", true);
  }
  if (!b.ignored.empty()) {
    out += fmt::format("<details><summary>Also differ, ignored because they cannot change results ({})</summary>\n",
                       b.ignored.size());
    changes_table(out, b.ignored, "env-ignored", false);
    out += "</details>\n";
  }
  // An upgrade and what it did to the verdicts, as the text and Markdown say them.
  if (const std::string up = upgrade_text(b); !up.empty())
    out += fmt::format("<p class=\"upgrade\"><strong>{}:</strong> {}.</p>\n", capitalized(upgrade_label(b)), esc(up));
  if (const auto lines = behaviour_lines(b); !lines.empty()) {
    out += "<ul class=\"behaviour\">\n";
    for (const auto& line : lines) out += fmt::format("<li>{}</li>\n", esc(line));
    out += "</ul>\n";
  }
  if (const std::string d = direction_summary(b); !d.empty())
    out += fmt::format("<p class=\"direction\">{}</p>\n", esc(d));
  for (const auto& m : b.models)
    out += fmt::format("<p class=\"model-change\"><strong>Model:</strong> {}.</p>\n", esc(m.reason));
  std::string rows;
  size_t unlisted = 0;
  for (const auto& res : b.results) {
    if (!baseline_listed(b, res)) {
      ++unlisted;
      continue;
    }
    rows += fmt::format(
        "<tr class=\"baseline-result\" "
        "data-status=\"{}\"{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        to_string(res.status), baseline_failure(r, res) ? " data-fails=\"true\"" : "", esc(res.target), esc(res.config),
        status_badge(res.status), tensors_cell(res),
        esc(res.reason) +
            (changed_op_text(res).empty() ? "" : "<div class=\"changed-op\">" + esc(changed_op_text(res)) + "</div>"));
  }
  out +=
      "<table class=\"baseline-results\"><thead><tr><th>target</th><th>configuration</th><th>against the baseline</th>"
      "<th>tensors</th><th>why</th></tr></thead><tbody>\n" +
      rows + "</tbody></table>\n";
  if (unlisted > 0)
    out += fmt::format(
        "<p class=\"hint\">{} more (matches, and configurations skipped or raised alike on both sides) are counted "
        "above, "
        "not listed.</p>\n",
        unlisted);
  bool explained = false;
  for (const auto& res : b.results) {
    if (!baseline_noteworthy(res) || res.differing_tensors.empty()) continue;
    explained = explained || res.status == BaselineStatus::Explained;
    out += fmt::format("<details class=\"baseline-detail\"><summary>{} · {}: {}</summary>\n<ul>\n", esc(res.target),
                       esc(res.config), status_badge(res.status));
    if (const std::string d = result_direction_text(b, res); !d.empty())
      out += fmt::format("<li class=\"baseline-direction\">{}</li>\n", esc(d));
    for (const auto& t : res.differing_tensors)
      out += fmt::format("<li class=\"baseline-tensor\">{}</li>\n", esc(baseline_tensor_text(t)));
    if (res.differing > res.differing_tensors.size())
      out += fmt::format("<li>and {} more</li>\n", res.differing - res.differing_tensors.size());
    out += "</ul>\n</details>\n";
  }
  if (explained)
    out += fmt::format(
        "<p class=\"hint\"><strong>Explained differences</strong> do not fail the run: the results changed together "
        "with "
        "the environment. If the new results are the right ones, {}{}{}.</p>\n",
        esc(resave_advice(b).before), code(resave_advice(b).code), esc(resave_advice(b).after));
  out += "</section>\n";
}

}  // namespace ra::report::html
