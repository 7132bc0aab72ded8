// SPDX-License-Identifier: Apache-2.0
// `run`'s report in every format: what a model adds to the frame every kind with targets shares
// (reports/render_parts.h): its head line (device, mode, how it trains, seed), its package or
// runtime, the detection power of its verdict, and the restart-replay of `run --replay`.
#include "reports/escape.h"
#include "reports/html.h"
#include "reports/render.h"
#include "reports/render_parts.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

namespace ra::report {
namespace {

using escaped::ln;

// "net.pt (cpu, train, 2 steps, sgd lr 0.01, seed 0)"
void model_line(std::string& out, const RunTarget& m) {
  const Target& t = m.common;
  const RunFacts& f = m.facts;
  out += fmt::format("{} ({}, {}{}, seed {})\n", ln(t.name), ln(t.device), ln(t.mode),
                     t.mode == "train" ? fmt::format(", {} step{}, {} lr {:g}", f.steps, f.steps == 1 ? "" : "s",
                                                     ln(f.optimizer), f.lr)
                                       : "",
                     t.seed);
}

// A torch.export archive's runtime, or an AOTInductor package's metadata.
void package_lines(std::string& out, const std::map<std::string, std::string>& package) {
  if (package.size() == 1 && package.count("runtime")) {
    out += fmt::format("  runtime: {}\n", ln(package.at("runtime")));
    return;
  }
  if (package.empty()) return;
  std::vector<std::string> facts;
  for (const auto& [k, v] : package) facts.push_back(fmt::format("{} {}", ln(k), v.empty() ? "-" : ln(v)));
  out += fmt::format("  AOTInductor package: {}\n", fmt::join(facts, ", "));
  // torch 2.11 writes neither the Inductor configuration nor the determinism setting into a
  // package; a user can, as metadata (docs/GUIDE.md, "Exported models").
  const bool determinism = std::any_of(package.begin(), package.end(), [](const auto& kv) {
    std::string key = kv.first;
    std::transform(key.begin(), key.end(), key.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
    return key.find("determin") != std::string::npos;
  });
  if (!determinism)
    out +=
        "  (the package does not record whether it was compiled with deterministic algorithms: add it as "
        "aot_inductor.metadata when compiling)\n";
}

void replay_lines(std::string& out, const Replay& r) {
  const std::string omit = r.omit.empty() ? "" : ln(fmt::format(", --replay-omit {}", fmt::join(r.omit, ",")));
  if (r.config.empty()) {
    out += fmt::format("  restart-replay{}: {}\n    {}\n", omit, to_string(r.verdict),
                       escape::text_block(r.reason, "    "));
    return;
  }
  out +=
      fmt::format("  restart-replay under {} ({} step{}, checkpoint, {} more in a fresh process{}): {}\n", ln(r.config),
                  r.steps_before, r.steps_before == 1 ? "" : "s", r.steps_after, omit, to_string(r.verdict));
  if (!r.reason.empty()) out += fmt::format("    {}\n", escape::text_block(r.reason, "    "));
  std::vector<std::string> parts;
  for (const auto& c : r.components) {
    std::string state = c.tensors == 0 && c.restored_match ? "empty" : c.restored_match ? "match" : "differs";
    if (!c.in_checkpoint) state += " (not in the checkpoint)";
    parts.push_back(fmt::format("{} {}", ln(c.name), state));
  }
  if (!parts.empty()) out += fmt::format("    state at the restart: {}\n", fmt::join(parts, ", "));
  text::finding_lines(out, r.differing, 5);
}

void replay_markdown(std::string& out, const std::string& name, const Replay& rp) {
  out += fmt::format("\n**{}: restart-replay{}: {}**", escaped::md(name),
                     rp.config.empty() ? "" : " under " + escaped::md(rp.config), to_string(rp.verdict));
  if (!rp.reason.empty()) out += " - " + escaped::md(rp.reason.substr(0, rp.reason.find('\n')));
  out += "\n";
}

void replay_block(std::string& out, const Replay& rp) {
  out +=
      fmt::format("<div class=\"replay\" data-verdict=\"{}\">\n<h4>{} Restart-replay{}</h4>\n", to_string(rp.verdict),
                  html::badge(to_string(rp.verdict)), rp.config.empty() ? "" : " under " + html::esc(rp.config));
  if (!rp.config.empty())
    out += fmt::format(
        "<p>{}, a checkpoint, then {} more in a fresh process{}; {} compared with the uninterrupted run.</p>\n",
        plural(static_cast<size_t>(rp.steps_before), "step", "steps"), rp.steps_after,
        rp.omit.empty() ? "" : html::esc(fmt::format(" (left out of the checkpoint: {})", fmt::join(rp.omit, ", "))),
        plural(rp.tensors_compared, "tensor", "tensors"));
  if (!rp.reason.empty()) out += html::message(rp.reason) + "\n";
  if (!rp.components.empty()) {
    out +=
        "<table class=\"replay-state\"><thead><tr><th>state at the restart</th><th>tensors</th><th>in checkpoint</th>"
        "<th>saved</th><th>restored</th><th>differing after restore</th></tr></thead><tbody>\n";
    for (const auto& c : rp.components)
      out += fmt::format(
          "<tr class=\"replay-component\"><td>{}<div class=\"sub\">{}</div></td><td class=\"num\">{}</td><td>{}</td>"
          "<td>{}</td><td>{}</td><td>{}</td></tr>\n",
          html::code(c.name), html::esc(c.description), c.tensors, c.in_checkpoint ? "yes" : "no",
          c.saved_match ? "matches" : "differs", c.restored_match ? "matches" : "<strong>differs</strong>",
          html::esc(fmt::format("{}", fmt::join(c.differing, ", "))));
    out += "</tbody></table>\n";
  }
  if (!rp.differing.empty()) html::tensor_table(out, rp.differing, "replay-tensor", false);
  out += "</div>\n";
}

junit::Outcome replay_outcome(const Replay& r) {
  std::string body = r.reason.empty() ? "" : r.reason + "\n";
  for (const auto& c : r.components)
    if (!c.restored_match || !c.in_checkpoint)
      body += fmt::format("{}: {}{}\n", c.name, c.restored_match ? "matches" : "differs after restore",
                          c.in_checkpoint ? "" : " (not in the checkpoint)");
  if (!r.differing.empty()) {
    body += fmt::format("differing tensors ({}):\n", r.differing.size());
    junit::tensor_lines(body, r.differing);
  }
  switch (r.verdict) {
    case ReplayVerdict::Reproducible:
      return {};
    case ReplayVerdict::Diverged:
      return {"failure", "replay-diverged",
              fmt::format("resuming from the step-{} checkpoint gives different results ({} tensor{})", r.steps_before,
                          r.differing.size(), r.differing.size() == 1 ? " differs" : "s differ"),
              body};
    case ReplayVerdict::Crashed:
      return {"error", "crashed", junit::first_line(r.reason), body};
    case ReplayVerdict::Inconclusive:
      return {"skipped", "", junit::first_line(r.reason), ""};
  }
  return {};
}

}  // namespace

std::string run_text(const Report& r, const RunBody& body) {
  std::string out;
  for (const auto& m : body.targets) {
    model_line(out, m);
    text::target_lines(out, m.common, m.facts.input_names, compared_outputs(m.common));
    package_lines(out, m.facts.package);
    text::config_lines(out, m.common, {});
    text::outcome_lines(out, m.common);
    if (m.facts.replay) replay_lines(out, *m.facts.replay);
  }
  return out + text::report_tail(r, !body.targets.empty() && body.targets.front().common.dependence);
}

std::string run_markdown(const Report& r, const RunBody& body) {
  std::string out = markdown::head(r, false);
  for (const auto& m : body.targets)
    if (const std::string power = detection_power_text(m.common); !power.empty())
      out += fmt::format("\n{}: {}\n", escaped::md(m.common.name), escaped::md(power));
  markdown::rules(out, r);
  for (const auto& m : body.targets) {
    markdown::findings(out, m.common);
    if (m.facts.replay) replay_markdown(out, m.common.name, *m.facts.replay);
  }
  markdown::tail(out, r);
  return out;
}

html::Page html::run_page(const Report& r, const RunBody& body) {
  TargetParts parts;
  parts.notes = [&body](std::vector<std::string>& notes, size_t i) {
    if (const auto& replay = body.targets[i].facts.replay)
      notes.push_back(fmt::format("restart-replay {}", to_string(replay->verdict)));
  };
  parts.input_names = [&body](size_t i) { return body.targets[i].facts.input_names; };
  parts.facts = [&body](size_t i) {
    const RunTarget& m = body.targets[i];
    std::string facts;
    if (m.facts.steps > 0 && m.common.mode == "train")
      facts += ", " + plural(static_cast<size_t>(m.facts.steps), "step", "steps");
    if (!m.facts.optimizer.empty()) facts += fmt::format(" ({}, lr {:g})", m.facts.optimizer, m.facts.lr);
    return facts;
  };
  parts.details = [&body](std::string& out, size_t i) {
    if (const auto& replay = body.targets[i].facts.replay) replay_block(out, *replay);
  };
  const TargetSections s = target_sections(r, std::move(parts));
  return targets_page(r, fmt::format("{} targets", body.targets.size()), s.in_order());
}

std::string run_junit(const Report& r, const RunBody& body, junit::Counts& all) {
  std::string suites;
  for (const auto& m : body.targets) {
    junit::Counts counts;
    std::string cases = junit::target_cases(m.common, counts);
    if (const auto& replay = m.facts.replay) {
      const junit::Outcome o = replay_outcome(*replay);
      counts.add(o);
      cases += junit::testcase(m.common.name,
                               replay->config.empty() ? "restart-replay" : "restart-replay " + replay->config, o);
    }
    all.add(counts);
    suites += junit::target_suite(r, m.common, kind_row<RunBody>().target, "", counts, cases);
  }
  return suites;
}

}  // namespace ra::report
