// SPDX-License-Identifier: Apache-2.0
// The self-contained HTML report (`--html FILE`): one file with inline CSS, JS and SVG that opens
// straight from disk, fetches nothing, reads without JS, and prints.
//
// The problem. A determinism audit ends in a JSON file that machines read well and people do not,
// and a text summary that cuts lists short. People want one page to open, forward and print: the
// verdict first, then where it comes from, with every figure the JSON has.
//
// The approach. Every fact is rendered here, in C++, as static HTML: the verdict banner, the
// environment fingerprint (generic nested tables in key order), the targets x configurations heat
// map, root causes, fix searches, the alert census and per-target details (tensor statistics, trial
// failures, configuration dependence, restart-replay) in <details> elements that print opened. The
// heat map is an HTML table, one row per target so that a probe suite of a hundred targets stays
// legible at 1280 px, whose cells are small inline SVGs: an SVG fill prints where browsers drop
// background colours. The CSS and JS are share/html/report.css and report.js, embedded into the
// binary at build time (cmake/EmbedHtml.cmake writes html_assets.cpp, rebuilt when they change), so
// the binary needs no share/ at run time. The JS only adds conveniences (filter and sort the heat
// map, "only failures", expand and collapse, open every <details> for printing and on a link,
// copy the measured fix costs into the fix tables); it never writes model text as markup and logs
// nothing. A Content-Security-Policy meta tag (default-src 'none') blocks every fetch, so an
// accidental URL shows as a console error in the html_chromium test rather than as a request.
//
// Determinism and the timing markers. The document is a function of the report model alone: lists
// in model order, numbers in fixed formats, ids by position ("t3-c1"). Everything that depends on the
// clock -- the audit's wall time, each trial's wall and startup times, the per-configuration medians
// and ratios (timing.configs in the JSON), the fix searches' medians and cost ratios, and which
// minimal fix is the cheapest -- is written only inside one block, the last in <main>:
//
//   <!-- timing:begin -->
//   <section id="timing">...</section>
//   <!-- timing:end -->
//
// Each marker appears exactly once, on a line of its own (model text is escaped, so no name can
// forge one), and no clock figure appears outside them: two audits with the same results write
// byte-identical HTML once everything from "<!-- timing:begin -->" through "<!-- timing:end -->" is
// removed. Outside the block the fix tables list candidates in candidate order with their
// deterministic facts; their cost cells are empty until the JS copies the costs in from the block.
#include "reports/html.h"
#include "reports/escape.h"
#include "reports/html_assets.h"
#include "reports/render.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ra::report {
namespace {

using escaped::esc;  // the same function as html::esc (both are escape::html)
using html::badge;
using html::Page;
using html::Section;

constexpr std::array<Verdict, 6> kVerdictOrder = {Verdict::Diverged, Verdict::Raised,  Verdict::Crashed,
                                                  Verdict::Timeout,  Verdict::Skipped, Verdict::Reproducible};

// Verdict colours of the heat map (SVG fills) and the legend.
const char* fill(Verdict v) {
  switch (v) {
    case Verdict::Reproducible:
      return "#2e7d4f";
    case Verdict::Diverged:
      return "#c0392b";
    case Verdict::Raised:
      return "#d9822b";
    case Verdict::Crashed:
      return "#6c3483";
    case Verdict::Timeout:
      return "#7d5a44";
    case Verdict::Skipped:
      return "#b8bcc2";
  }
  return "#000";
}

// Diverged cells are more intense the higher the divergence rate.
double opacity(const ConfigResult& c) { return c.verdict == Verdict::Diverged ? 0.35 + 0.65 * c.divergence_rate : 1.0; }

std::string cell_label(const ConfigResult& c) {
  switch (c.verdict) {
    case Verdict::Reproducible:
      return "ok";
    case Verdict::Diverged:
      return fmt::format("{}/{}", c.diverging_repeats, c.completed > 0 ? c.completed - 1 : 0);
    case Verdict::Crashed:
      return "crash";
    default:
      return to_string(c.verdict);
  }
}

std::string cell_title(const Target& t, const ConfigResult& c) {
  std::string s = fmt::format("{} · {}: {}", t.name, c.name, to_string(c.verdict));
  if (c.verdict == Verdict::Diverged)
    s += fmt::format(", {} of {} repeats differ (rate {:.2f}, 95% CI {:.2f}-{:.2f})", c.diverging_repeats,
                     c.completed > 0 ? c.completed - 1 : 0, c.divergence_rate, c.rate_ci_low, c.rate_ci_high);
  if (c.allowed_by) s += fmt::format("; allowed by allowlist entry {}", c.allowed_by->entry);
  if (!c.message.empty()) s += fmt::format("\n{}", c.message.substr(0, c.message.find('\n')));
  return s;
}

// A heat-map cell (or a legend key): a rounded rectangle in the verdict's colour with a short label;
// with a title, an image with that tooltip, else decoration.
std::string swatch(Verdict v, double alpha, const std::string& label, const std::string& title = "") {
  return fmt::format(
      "<svg class=\"hm\" viewBox=\"0 0 64 18\" width=\"64\" height=\"18\" {}><rect x=\"0.5\" "
      "y=\"0.5\" width=\"63\" height=\"17\" rx=\"3\" fill=\"{}\" fill-opacity=\"{:.2f}\"/><text x=\"32\" y=\"13\" "
      "text-anchor=\"middle\" fill=\"{}\">{}</text></svg>",
      title.empty() ? "aria-hidden=\"true\">" : "role=\"img\"><title>" + esc(title) + "</title>", fill(v), alpha,
      v == Verdict::Skipped || alpha < 0.6 ? "#1d1d1f" : "#ffffff", esc(label));
}

std::string exit_meaning(const Report& r) {
  switch (r.exit_code) {
    case 0:
      return "reproducible (or every divergence allowed)";
    case 1:
      return r.verdict == Verdict::Diverged || r.verdict == Verdict::Raised
                 ? "nondeterminism found"
                 : "an allowlist entry that matched has expired";
    case 4:
      return "a trial crashed or timed out; the verdict is incomplete";
    default:
      return "see the exit codes in the manual";
  }
}

// The page's title for a report with targets: "repro-audit: diverged (exit 1) - net.pt" (`what`
// names the targets when there is more than one).
std::string targets_title(const Report& r, const std::string& what) {
  const ConstTargets targets = r.targets();
  return fmt::format("repro-audit: {} (exit {}) - {}", verdict_text(r), r.exit_code,
                     targets.size() == 1 ? targets.front().name : what);
}

void banner_section(std::string& out, const Report& r) {
  std::map<Verdict, size_t> targets, cells;
  size_t dependent = 0, allowed = 0, total_cells = 0;
  for (const auto& t : r.targets()) {
    ++targets[t.verdict];
    dependent += t.dependence.has_value();
    for (const auto& c : t.configs) ++cells[c.verdict], ++total_cells, allowed += c.allowed_by.has_value();
  }
  const char* v = to_string(r.verdict);
  out += fmt::format(
      "<section id=\"verdict\" class=\"banner v-{0}\" data-verdict=\"{0}\" data-exit-code=\"{1}\" "
      "data-targets=\"{2}\" data-cells=\"{3}\">\n",
      v, r.exit_code, r.targets().size(), total_cells);
  // Findings the exit code accepted stay visible: "diverged (allowed: REASON)" beside the badge.
  const std::string shown = verdict_text(r);
  const std::string accepted = shown == v ? "" : fmt::format(" <span class=\"accepted\">{}</span>", esc(shown));
  out += fmt::format("<h1>{}{} <span class=\"exit\">exit {}: {}</span></h1>\n", badge(r.verdict), accepted, r.exit_code,
                     exit_meaning(r));
  const auto counts = [&](const char* cls, const std::map<Verdict, size_t>& m) {
    std::string s = fmt::format("<ul class=\"counts\">");
    for (const Verdict k : kVerdictOrder)
      if (const auto it = m.find(k); it != m.end())
        s += fmt::format(
            "<li class=\"{0}\" data-verdict=\"{1}\" data-count=\"{2}\"><span class=\"dot v-{1}\"></span>{2} {1}</li>",
            cls, to_string(k), it->second);
    return s + "</ul>";
  };
  out += fmt::format(
      "<div class=\"tally\"><div><h2>{} target{}</h2>{}</div><div><h2>{} target × configuration "
      "result{}</h2>{}</div></div>\n",
      r.targets().size(), r.targets().size() == 1 ? "" : "s", counts("target-count", targets), total_cells,
      total_cells == 1 ? "" : "s", counts("cell-count", cells));
  std::vector<std::string> notes;
  if (dependent > 0)
    notes.push_back(
        fmt::format("{} target{} configuration-dependent: each configuration reproducible, results differing "
                    "between configurations (not nondeterminism)",
                    dependent, dependent == 1 ? " is" : "s are"));
  if (allowed > 0)
    notes.push_back(fmt::format("{} result{} allowed by the allowlist", allowed, allowed == 1 ? "" : "s"));
  if (const std::string rule = auto_repeats_text(r); !rule.empty()) notes.push_back(rule);
  if (!notes.empty()) {
    out += "<ul class=\"notes\">";
    for (const auto& n : notes) out += fmt::format("<li>{}</li>", esc(n));
    out += "</ul>\n";
  }
  if (!r.allowlist_expired.empty()) {
    out += "<ul class=\"allowlist-expired\">";
    for (const auto& e : r.allowlist_expired) out += fmt::format("<li>{}</li>", esc(e));
    out += "</ul>\n";
  }
  if (!r.allowlist_notes.empty()) {
    out += "<ul class=\"allowlist-notes\">";
    for (const auto& e : r.allowlist_notes) out += fmt::format("<li>{}</li>", esc(e));
    out += "</ul>\n";
  }
  if (!r.command.empty())
    out += fmt::format("<pre class=\"command\"><code>$ {}</code></pre>\n", esc(html::shell_line(r.command)));
  out += "</section>\n";
}

void legend(std::string& out) {
  out += "<div class=\"legend\" aria-label=\"legend\">";
  for (const Verdict v : kVerdictOrder) {
    if (v == Verdict::Diverged) {
      for (const double rate : {0.25, 0.5, 1.0}) {
        ConfigResult c;
        c.verdict = v;
        c.divergence_rate = rate;
        out += fmt::format("<span class=\"key\">{}</span>", swatch(v, opacity(c), fmt::format("rate {:g}", rate)));
      }
      out += "<span class=\"key-label\">diverged (repeats differing / compared; darker: higher rate)</span>";
      continue;
    }
    ConfigResult c;
    c.verdict = v;
    out += fmt::format("<span class=\"key\">{}</span><span class=\"key-label\">{}</span>",
                       swatch(v, 1.0, cell_label(c)), to_string(v));
  }
  out += "</div>\n";
}

// The switches of each configuration, as the first target that ran it read them back.
void switch_table(std::string& out, const Report& r, const std::vector<std::string>& columns) {
  std::vector<const ConfigResult*> first;
  std::vector<std::string> keys;
  for (const auto& name : columns)
    for (const auto& t : r.targets()) {
      const auto it =
          std::find_if(t.configs.begin(), t.configs.end(), [&](const ConfigResult& c) { return c.name == name; });
      if (it == t.configs.end()) continue;
      first.push_back(&*it);
      for (const auto& s : it->switches)
        if (std::find(keys.begin(), keys.end(), s.key) == keys.end()) keys.push_back(s.key);
      break;
    }
  if (keys.empty()) return;
  out +=
      "<details class=\"switches\"><summary>Switches of each configuration (bold: set by the "
      "configuration)</summary>\n";
  out += "<table class=\"switches\"><thead><tr><th>switch</th>";
  for (const auto* c : first) out += fmt::format("<th>{}</th>", esc(c->name));
  out += "</tr></thead><tbody>\n";
  for (const auto& key : keys) {
    out += fmt::format("<tr><th scope=\"row\"><code>{}</code></th>", esc(key));
    for (const auto* c : first) {
      const auto it =
          std::find_if(c->switches.begin(), c->switches.end(), [&](const SwitchValue& s) { return s.key == key; });
      if (it == c->switches.end())
        out += "<td></td>";
      else if (it->requested.empty())
        out += fmt::format("<td>{}</td>", esc(it->effective));
      else if (it->requested == it->effective)
        out += fmt::format("<td><strong>{}</strong></td>", esc(it->effective));
      else
        out += fmt::format("<td><strong>{}</strong> (reads back {})</td>", esc(it->requested), esc(it->effective));
    }
    out += "</tr>\n";
  }
  out += "</tbody></table>\n</details>\n";
}

void matrix_section(std::string& out, const Report& r, const html::TargetParts& parts) {
  std::vector<std::string> columns;
  for (const auto& t : r.targets())
    for (const auto& c : t.configs)
      if (std::find(columns.begin(), columns.end(), c.name) == columns.end()) columns.push_back(c.name);
  out += fmt::format(
      "<section id=\"matrix\" data-targets=\"{}\" data-configs=\"{}\">\n<h2>Targets × configurations</h2>\n",
      r.targets().size(), columns.size());
  out +=
      "<p class=\"hint\">One row per target, one column per configuration; each cell links to its details. Every "
      "configuration ran in fresh processes, repeated; a cell is reproducible when every repeat gave the same "
      "bits.</p>\n";
  legend(out);
  out += "<div id=\"matrix-controls\" class=\"controls\"></div>\n";
  out += "<table class=\"heatmap\"><thead><tr><th scope=\"col\">target</th>";
  if (parts.column) out += fmt::format("<th scope=\"col\">{}</th>", parts.column);
  for (const auto& name : columns) out += fmt::format("<th scope=\"col\" class=\"cfg\">{}</th>", esc(name));
  out += "<th scope=\"col\">verdict</th><th scope=\"col\">notes</th></tr></thead>\n<tbody>\n";
  const ConstTargets targets = r.targets();
  for (size_t i = 0; i < targets.size(); ++i) {
    const Target& t = targets[i];
    out += fmt::format(
        "<tr class=\"hm-row\" data-index=\"{}\" data-target=\"{}\" data-verdict=\"{}\">"
        "<th scope=\"row\"><a href=\"#{}\">{}</a></th>",
        i, esc(t.name), to_string(t.verdict), html::target_id(i), esc(t.name));
    if (parts.column) out += parts.cell(i);
    for (const auto& name : columns) {
      const auto it =
          std::find_if(t.configs.begin(), t.configs.end(), [&](const ConfigResult& c) { return c.name == name; });
      if (it == t.configs.end()) {
        out += "<td class=\"hm-none\"></td>";
        continue;
      }
      const ConfigResult& c = *it;
      const size_t j = static_cast<size_t>(it - t.configs.begin());
      out += fmt::format("<td class=\"hm-cell{}\" data-verdict=\"{}\" data-config=\"{}\"><a href=\"#{}\">{}</a></td>",
                         c.allowed_by ? " allowed" : "", to_string(c.verdict), esc(c.name), html::config_id(i, j),
                         swatch(c.verdict, opacity(c), cell_label(c), cell_title(t, c)));
    }
    std::vector<std::string> notes;
    if (t.dependence) notes.push_back("configuration-dependent");
    if (parts.notes) parts.notes(notes, i);
    out += fmt::format("<td>{}</td><td class=\"notes\">{}</td></tr>\n", badge(t.verdict),
                       esc(fmt::format("{}", fmt::join(notes, "; "))));
  }
  out += "</tbody></table>\n";
  switch_table(out, r, columns);
  out += "</section>\n";
}

std::string ms(double v) { return v >= 1000 ? fmt::format("{:.2f} s", v / 1000) : fmt::format("{:.1f} ms", v); }

// The timing section: the wall time for every kind, then the body's own clock figures (`body`).
void timing_section(std::string& out, const Report& r, const std::string& body) {
  out += "<section id=\"timing\">\n<h2>Timing</h2>\n";
  out +=
      "<p class=\"hint\">Measured with a clock, so these figures differ from run to run; everything above this "
      "section is identical for two audits with the same results.</p>\n";
  out += fmt::format("<p class=\"wall\" data-ms=\"{:.1f}\">Audit wall time: <strong>{}</strong></p>\n", r.wall_ms,
                     ms(r.wall_ms));
  if (!r.contention.empty()) out += fmt::format("<p class=\"hint\">{}.</p>\n", esc(r.contention));
  out += body + "</section>\n";
}

// The targets' clock figures: each fix search's costs, the median trial time per target ×
// configuration, every trial's times.
std::string targets_timing(const ConstTargets& targets) {
  std::string out;
  for (size_t i = 0; i < targets.size(); ++i) {
    const Target& t = targets[i];
    for (size_t j = 0; j < t.configs.size(); ++j) {
      if (!t.configs[j].fix_search) continue;
      const FixSearch& f = *t.configs[j].fix_search;
      out += fmt::format("<h3>Fix costs: <a href=\"#fixes-{}\">{} · {}</a></h3>\n", html::config_id(i, j), esc(t.name),
                         esc(t.configs[j].name));
      if (!fix_costs_measured(f)) {
        out += fmt::format("<p class=\"fix-untimed\">Nothing was timed: {}.</p>\n",
                           f.best.empty() ? "no candidate fixed it" : "every timing run failed");
        continue;
      }
      out += fmt::format("<p>Median of {} timed runs after a warm-up, against {}{}.</p>\n", f.timed_runs, esc(f.from),
                         f.baseline_median_ms ? fmt::format(" at {}", ms(*f.baseline_median_ms)) : "");
      out +=
          "<table class=\"fix-costs\"><thead><tr><th>candidate</th><th>median</th><th>cost</th></tr></thead><tbody>\n";
      for (size_t k = 0; k < f.candidates.size(); ++k) {
        const FixCandidate& c = f.candidates[k];
        out += fmt::format(
            "<tr class=\"fix-cost\" data-fix=\"{}\"{}><td><a "
            "href=\"#{}\"><code>{}</code></a>{}</td><td>{}</td><td>{}</td></tr>\n",
            html::fix_id(i, j, k), c.cost_ratio ? fmt::format(" data-cost=\"{:.2f}\"", *c.cost_ratio) : "",
            html::fix_id(i, j, k), esc(c.config), c.downgrade() ? " (a downgrade)" : "",
            c.median_ms ? ms(*c.median_ms) : "not timed", c.cost_ratio ? esc(cost_text(c)) : "-");
      }
      out += "</tbody></table>\n";
      // Which fix is cheapest is a timing fact: it stays inside this block.
      if (const FixCandidate* cheapest = cheapest_fix(f)) {
        const FixCandidate& c = *cheapest;
        out += fmt::format("<p class=\"cheapest\">{}{}: {} (<code>{}</code>){}{}.</p>\n",
                           cheapest_known(f) ? "Cheapest minimal fix" : "A minimal fix",
                           downgrades_passed_over(f).empty() ? "" : " without a downgrade",
                           esc(fix_change_text(c, t.configs[j].switches)), esc(c.config), esc(cost_clause(c, f.from)),
                           esc(accuracy_clause(c, f.from)));
        for (const FixCandidate* other : fixes_costing_the_same(f))
          out += fmt::format("<p class=\"same-cost\">The same cost within noise: <code>{}</code> at {}{}.</p>\n",
                             esc(other->config), esc(cost_text(*other)), esc(accuracy_clause(*other, f.from)));
        for (const FixCandidate* down : downgrades_passed_over(f))
          out += fmt::format("<p class=\"downgrade\">Not <code>{}</code>: {}.</p>\n", esc(down->config),
                             esc(fix_accuracy_text(*down->accuracy, f.from)));
      }
    }
  }
  std::string rows;
  size_t n = 0;
  for (size_t i = 0; i < targets.size(); ++i)
    for (size_t j = 0; j < targets[i].configs.size(); ++j)
      if (const auto median = median_wall_ms(targets[i].configs[j])) {
        const auto ratio = cost_ratio(targets[i], j);
        ++n;
        rows += fmt::format(
            "<tr class=\"config-time\"><td><a href=\"#{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            html::config_id(i, j), esc(targets[i].name), esc(targets[i].configs[j].name), ms(*median),
            ratio ? fmt::format("{:.2f}×", *ratio) : "-");
      }
  out += fmt::format(
      "<details class=\"config-times\"{}><summary>Median trial time per target × configuration ({})</summary>\n",
      n <= 12 ? " open" : "", n);
  out += fmt::format(
      "<p class=\"hint\">Ratio: against the target's first configuration; left out below {:g} ms, where "
      "process-to-process noise dominates.</p>\n",
      kMinComparableMs);
  out += "<table><thead><tr><th>target</th><th>configuration</th><th>median</th><th>ratio</th></tr></thead><tbody>\n" +
         rows + "</tbody></table>\n</details>\n";
  rows.clear();
  n = 0;
  for (const auto& t : targets)
    for (const auto& c : t.configs)
      for (const auto& trial : c.trials) {
        ++n;
        rows += fmt::format(
            "<tr class=\"trial-time\"><td>{}</td><td>{}</td><td "
            "class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            esc(t.name), esc(c.name), trial.repeat, to_string(trial.status), ms(trial.wall_ms), ms(trial.startup_ms));
      }
  out += fmt::format("<details class=\"trial-times\"><summary>Trial times ({})</summary>\n", n);
  out +=
      "<table><thead><tr><th>target</th><th>configuration</th><th>repeat</th><th>status</th><th>wall</th><th>start-up</"
      "th></tr></thead><tbody>\n" +
      rows + "</tbody></table>\n</details>\n";
  return out;
}

// invariance and selftest: their own section in place of the verdict banner, then what every
// report has (the environment, a baseline comparison); no targets, so no matrix, traces, fixes,
// census, details or trial times.
Page own_page(const Report& r, std::string title, Section verdict, std::string timing) {
  return Page{std::move(title),
              {std::move(verdict),
               {"environment", "Environment", [&](std::string& o) { html::environment_section(o, r); }},
               {"baseline", "Baseline", [&](std::string& o) { html::baseline_section(o, r); }}},
              std::move(timing)};
}

Page page_of(const Report& r) {
  return std::visit(
      overloaded{
          [&](const RunBody& b) { return html::run_page(r, b); },
          [&](const ExecBody& b) { return html::exec_page(r, b); },
          [&](const ProbesBody& b) { return html::probes_page(r, b); },
          [&](const Invariance& inv) {
            return own_page(r, fmt::format("repro-audit invariance: {} (exit {})", inv.model, r.exit_code),
                            {"invariance", "Invariance", [&](std::string& o) { o += invariance_html_section(r, inv); }},
                            invariance_fix_html_timing(inv));
          },
          [&](const SelfTest& self) {
            return own_page(r,
                            fmt::format("repro-audit selftest on {}: {} (exit {})", self.device, selftest_summary(self),
                                        r.exit_code),
                            {"verdict", "Verdict", [&](std::string& o) { o += selftest_html_section(r, self); }}, "");
          }},
      r.body);
}

}  // namespace

html::TargetSections html::target_sections(const Report& r, TargetParts given) {
  const auto parts = std::make_shared<const TargetParts>(std::move(given));
  return {
      {"verdict", "Verdict", [&r](std::string& o) { banner_section(o, r); }},
      {"environment", "Environment", [&r](std::string& o) { environment_section(o, r); }},
      {"matrix", parts->matrix_label, [&r, parts](std::string& o) { matrix_section(o, r, *parts); }},
      {"baseline", "Baseline", [&r](std::string& o) { baseline_section(o, r); }},
      {"root-causes", "Root causes", [&r](std::string& o) { root_causes_section(o, r); }},
      {"fixes", "Fixes", [&r, parts](std::string& o) { fixes_section(o, r, parts->command); }},
      {"census", "Census", [&r, parts](std::string& o) { census_section(o, r, parts->census, parts->census_tail); }},
      {"details", "Details", [&r, parts](std::string& o) { details_section(o, r, *parts); }}};
}

html::Page html::targets_page(const Report& r, const std::string& what, std::vector<Section> sections) {
  return Page{targets_title(r, what), std::move(sections), targets_timing(r.targets())};
}

std::string render_html(const Report& r) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out +=
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
      "script-src 'unsafe-inline'; img-src data:\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += fmt::format("<meta name=\"generator\" content=\"repro-audit {}\">\n", esc(r.tool_version));
  const Page page = page_of(r);
  out += fmt::format("<title>{}</title>\n<style>\n{}</style>\n</head>\n", esc(page.title), html::assets::kCss);
  out += fmt::format("<body data-verdict=\"{}\" data-exit-code=\"{}\">\n", to_string(r.verdict), r.exit_code);
  out += "<nav><span class=\"brand\">repro-audit</span>";
  for (const auto& s : page.sections)
    if (std::string(s.id) != "baseline" || r.baseline) out += fmt::format("<a href=\"#{}\">{}</a>", s.id, s.label);
  out += "<a href=\"#timing\">Timing</a></nav>\n<main>\n";
  if (const std::string untested = untested_torch_text(r); !untested.empty())
    out += fmt::format("<p class=\"note\" id=\"untested-torch\">warning: {}</p>\n", esc(untested));
  for (const auto& s : page.sections) s.write(out);
  out += fmt::format("{}\n", kTimingBegin);
  // Where a shard or a merged report's shards ran (kept with the timing: it differs between two
  // runs of one plan with the same results).
  if (const std::string where = shard_text(r) + fleet_text(r); !where.empty())
    out += fmt::format("<section id=\"shards\">\n<h2>Shards</h2>\n<pre>{}</pre>\n</section>\n", esc(where));
  timing_section(out, r, page.timing);
  out += fmt::format("{}\n</main>\n", kTimingEnd);
  out += fmt::format("<footer>repro-audit {} · report schema {}</footer>\n", esc(r.tool_version), kSchemaVersion);
  out += fmt::format("<script>\n{}</script>\n</body>\n</html>\n", html::assets::kJs);
  return out;
}

}  // namespace ra::report
