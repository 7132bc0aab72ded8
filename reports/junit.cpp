// SPDX-License-Identifier: Apache-2.0
// JUnit XML for CI test views: one <testsuite> per target, one <testcase> per target x
// configuration, plus a test case for a target's configuration dependence and one for its
// restart-replay. The subset we emit is described by share/schema/junit.xsd.
//
// Verdicts map onto JUnit's outcomes as the exit code counts them: reproducible passes, diverged
// and raised are <failure>s (the audit found something about the model), crashed and timeout are
// <error>s (the audit could not finish), skipped is <skipped>, and so is a diverged or raised
// configuration that --allowlist allowed (its message gives the reason). Configuration dependence does not
// change the exit code, so its test case passes and says what differs in <system-out>.
//
// With a baseline (--baseline, compare), one more <testsuite name="baseline"> holds a test case
// per target x configuration compared ("baseline CONFIG"): regression and nondeterministic are
// <failure>s, explained passes with the environment changes in <system-out> (it does not fail the
// exit code), incomparable, missing and added are <skipped>.
//
// Determinism: no time or timestamp attributes and no cost figures; two audits with the same
// results give the same bytes. Text is escaped for XML 1.0: markup characters become entities,
// control characters XML cannot carry become U+FFFD, as do bytes that are not UTF-8.
#include "reports/escape.h"
#include "reports/referee_model.h"
#include "reports/render.h"
#include "reports/render_parts.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>

namespace ra::report {
namespace {

enum class Context { Text, Attribute };

// Element text or a double-quoted attribute value, escaped by the shared layer (reports/escape.h).
std::string xml_value(const std::string& raw, Context where = Context::Attribute) {
  return escape::xml(raw, where == Context::Text ? escape::XmlContext::Text : escape::XmlContext::Attribute);
}

using junit::first_line;

using junit::tensor_lines;

// "ra_test::nondet_sum (forward) at model.py:3 in encoder.block"
std::string root_cause_text(const RootCause& r) {
  std::string s = fmt::format("{} ({}", r.op, r.direction);
  if (r.step > 0) s += fmt::format(", step {}", r.step);
  if (!r.node.empty()) s += ", in " + r.node + (r.forward_op.empty() ? "" : " of " + r.forward_op);
  s += ")";
  if (!r.source.empty()) s += " at " + r.source;
  if (!r.module.empty()) s += " in " + r.module;
  return s;
}

// Minimal fixes in candidate order (their cost order is a timing figure, kept out of JUnit), the
// downgrades (FixCandidate::accuracy) after the others.
std::vector<const FixCandidate*> minimal_fixes(const FixSearch& f) {
  std::vector<const FixCandidate*> out;
  for (const auto& c : f.candidates)
    if (c.minimal) out.push_back(&c);
  std::stable_partition(out.begin(), out.end(), [](const FixCandidate* c) { return !c->downgrade(); });
  return out;
}

using junit::Counts;
using junit::Outcome;
using junit::property;
using junit::testcase;

Outcome diverged_outcome(const ConfigResult& c) {
  Outcome o{"failure", "diverged", "", ""};
  o.message =
      fmt::format("divergence rate {:.2f}: {}/{} repeats differ from the reference; {} {} differ{}", c.divergence_rate,
                  c.diverging_repeats, c.completed > 0 ? c.completed - 1 : 0, c.diverged_tensors.size(),
                  findings_word(c, c.diverged_tensors.size()), c.diverged_tensors.size() == 1 ? "s" : "");
  if (!c.diverged_tensors.empty()) o.message += fmt::format(" (first: {})", c.diverged_tensors.front().name);
  if (c.referee && c.referee->summary)
    o.message += fmt::format("; class {} ({})", to_string(c.referee->summary->cls), c.referee->summary->tensor);
  o.body = fmt::format("divergence rate {:.2f} (95% CI {:.2f}-{:.2f}), {}/{} repeats diverged, {} distinct outcomes\n",
                       c.divergence_rate, c.rate_ci_low, c.rate_ci_high, c.diverging_repeats,
                       c.completed > 0 ? c.completed - 1 : 0, c.distinct_outcomes);
  if (!c.diverged_tensors.empty()) {
    o.body += fmt::format("diverged {} ({}):\n", findings_word(c, 2), c.diverged_tensors.size());
    tensor_lines(o.body, c.diverged_tensors);
  }
  if (c.referee) {
    o.body += errors_line(c.referee->errors) + "\n";
    if (c.referee->summary) o.body += class_summary_line(*c.referee->summary) + "\n";
  }
  if (c.trace) {
    if (!c.trace->root_causes.empty()) o.message += "; root cause: " + root_cause_text(c.trace->root_causes.front());
    if (!c.trace->root_causes.empty() && c.trace->root_causes.front().referee)
      o.message += fmt::format(" ({})", to_string(c.trace->root_causes.front().referee->cls));
    for (const auto& r : c.trace->root_causes) {
      o.body += fmt::format("root cause: {}; inputs matched, outputs differed; {}/{} runs; {} propagated\n",
                            root_cause_text(r), r.runs_diverged, r.runs_compared,
                            plural(r.propagated, "later op", "later ops"));
      if (r.referee) o.body += "  " + classified_line(*r.referee) + "\n";
    }
    if (c.trace->root_causes.empty()) o.body += "root cause: none in the trace\n";
  }
  if (c.fix_search) {
    const FixSearch& f = *c.fix_search;
    const auto fixes = minimal_fixes(f);
    // Every minimal fix, in candidate order: which is cheapest is a timing figure, and naming only
    // the first would read as a choice the other formats may not make.
    if (!fixes.empty()) {
      std::vector<std::string> names;
      for (const auto* m : fixes) names.push_back(m->downgrade() ? m->config + " (a downgrade)" : m->config);
      o.message += fmt::format("; minimal fix{}: {}", names.size() == 1 ? "" : "es", fmt::join(names, ", "));
    }
    o.body += fmt::format("fix search from {}: {}\n", f.from, f.conclusion);
    for (const auto* m : fixes)
      o.body += fmt::format("minimal fix: {}{}\n  C++:    {}\n  Python: {}\n", m->config,
                            m->accuracy ? "; " + fix_accuracy_text(*m->accuracy, f.from) : "", m->cpp, m->python);
    for (const auto& n : f.no_deterministic) {
      o.body += fmt::format("no deterministic implementation: {}{}\n", n.op, n.advice.empty() ? "" : ": " + n.advice);
      for (const auto& a : n.alternatives) o.body += fmt::format("  - {}\n", a);
    }
  }
  return o;
}

// run --calls K: reproducible from run to run, but a later call differed from call 1 in the process.
Outcome warm_up_outcome(const ConfigResult& c) {
  if (!c.warm_up || !warm_up_dependent(*c.warm_up)) return {};
  const std::vector<std::string> lines = warm_up_lines(*c.warm_up);
  return {"failure", "warm-up", lines.front(), fmt::format("{}\n", fmt::join(lines, "\n"))};
}

Outcome config_outcome(const ConfigResult& c) {
  // Accepted by --allowlist: not a failure of this run, but still visible in CI test views.
  if (c.allowed_by && (c.verdict == Verdict::Diverged || c.verdict == Verdict::Raised))
    return {"skipped", "",
            fmt::format("{}, allowed: {} (allowlist entry {})", to_string(c.verdict), c.allowed_by->reason,
                        c.allowed_by->entry),
            ""};
  if (c.tolerated) return {"skipped", "", fmt::format("diverged, {}", tolerance_verdict(c)), ""};
  switch (c.verdict) {
    case Verdict::Reproducible:
      return warm_up_outcome(c);
    case Verdict::Diverged:
      return diverged_outcome(c);
    case Verdict::Raised:
      return {"failure", "raised", first_line(c.message), c.message};
    case Verdict::Skipped:
      return {"skipped", "", c.message, ""};
    case Verdict::Crashed:
    case Verdict::Timeout: {
      Outcome o{"error", to_string(c.verdict), first_line(c.message), c.message};
      for (const auto& t : c.trials)
        if (!t.stderr_tail.empty() && (t.status == TrialStatus::Crashed || t.status == TrialStatus::Timeout)) {
          o.body += fmt::format("\nrepeat {} stderr:\n{}", t.repeat, t.stderr_tail);
          break;
        }
      return o;
    }
  }
  return {};
}

// A baseline result: regression and (not allowed) nondeterministic fail; explained passes with
// the changes in <system-out>; incomparable, missing and added are skipped with the reason.
Outcome baseline_outcome(const Report& r, const BaselineResult& b, std::string& system_out) {
  std::string body;
  for (const auto& t : b.differing_tensors) body += "  " + baseline_tensor_text(t) + "\n";
  if (b.differing > b.differing_tensors.size())
    body += fmt::format("  ... and {} more tensors\n", b.differing - b.differing_tensors.size());
  if (!body.empty()) body = fmt::format("differing tensors ({}):\n{}", b.differing, body);
  if (const std::string op = changed_op_text(b); !op.empty()) body = op + "\n" + body;
  // Which way they moved against float64 (this result's own line, whatever the others say).
  if (b.direction) body = direction_line(*b.direction, side_names(r.baseline->stack)) + "\n" + body;
  switch (b.status) {
    case BaselineStatus::Match:
      return {};
    case BaselineStatus::Explained:
      system_out = fmt::format("explained: {}\n{}If the new results are the right ones, {}.\n", b.reason, body,
                               resave_advice(*r.baseline).text());
      return {};
    case BaselineStatus::Regression:
      return {"failure", "regression", b.reason, body};
    case BaselineStatus::Nondeterministic:
      if (!baseline_failure(r, b))
        return {"skipped", "", "nondeterministic, allowed by the allowlist: " + b.reason, ""};
      return {"failure", "nondeterministic", b.reason, body};
    case BaselineStatus::Incomparable:
    case BaselineStatus::Missing:
    case BaselineStatus::Added:
      return {"skipped", "", fmt::format("{}: {}", to_string(b.status), b.reason), ""};
  }
  return {};
}

}  // namespace

void junit::tensor_lines(std::string& out, const std::vector<TensorFinding>& fs) {
  for (const auto& f : fs)
    out += fmt::format("  {} {}[{}]: {}\n", f.name, f.dtype, fmt::join(f.shape, "x"),
                       f.stats ? stats_text(*f.stats) : std::string("digests differ"));
}

void junit::Counts::add(const Outcome& o) {
  ++tests;
  failures += o.element == "failure";
  errors += o.element == "error";
  skipped += o.element == "skipped";
}

void junit::Counts::add(const Counts& c) {
  tests += c.tests, failures += c.failures, errors += c.errors, skipped += c.skipped;
}

std::string junit::Counts::attributes() const {
  return fmt::format("tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\"", tests, failures, errors, skipped);
}

std::string junit::testcase(const std::string& classname, const std::string& name, const Outcome& o,
                            const std::string& system_out) {
  std::string out = fmt::format("    <testcase classname=\"{}\" name=\"{}\"", xml_value(classname), xml_value(name));
  if (o.element.empty() && system_out.empty()) return out + "/>\n";
  out += ">\n";
  if (!o.element.empty()) {
    out += fmt::format("      <{}", o.element);
    if (!o.type.empty()) out += fmt::format(" type=\"{}\"", xml_value(o.type));
    out += fmt::format(" message=\"{}\"", xml_value(o.message));
    out += o.body.empty() ? "/>\n" : fmt::format(">{}</{}>\n", xml_value(o.body, Context::Text), o.element);
  }
  if (!system_out.empty())
    out += fmt::format("      <system-out>{}</system-out>\n", xml_value(system_out, Context::Text));
  return out + "    </testcase>\n";
}

std::string junit::property(const std::string& name, const std::string& value) {
  return fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", xml_value(name), xml_value(value));
}

std::string junit::first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string junit::target_cases(const Target& t, Counts& counts) {
  std::string cases;
  for (const auto& c : t.configs) {
    const Outcome o = config_outcome(c);
    counts.add(o);
    cases += testcase(t.name, c.name, o);
  }
  if (t.dependence) {
    std::vector<std::string> groups;
    for (const auto& g : t.dependence->groups) groups.push_back(fmt::format("{{{}}}", fmt::join(g, ", ")));
    std::string text =
        fmt::format("each configuration is reproducible, but results differ between {}\n", fmt::join(groups, " and "));
    tensor_lines(text, t.dependence->differing);
    for (const auto& cause : t.dependence->causes) text += config_cause_text(cause) + "\n";
    counts.add(Outcome{});
    cases += testcase(t.name, "configuration-dependence", Outcome{}, text);
  }
  return cases;
}

std::string junit::target_suite(const Report& r, const Target& t, std::string_view kind,
                                const std::string& kind_properties, const Counts& counts, const std::string& cases) {
  std::string suite =
      fmt::format("  <testsuite name=\"{}\" {}>\n    <properties>\n", xml_value(t.name), counts.attributes());
  std::string props = property("kind", std::string(kind)) + property("device", t.device);
  if (!t.mode.empty()) props += property("mode", t.mode);
  props += kind_properties;
  props += property("seed", std::to_string(t.seed)) + property("verdict", verdict_text(t));
  for (const auto& c : t.configs)  // exec: what each run is compared by, per configuration
    if (c.compared) props += property("compared per run: " + c.name, compared_text(c));
  if (r.auto_repeats) props += property("repeats", auto_repeats_text(r));
  return suite + props + "    </properties>\n" + cases + "  </testsuite>\n";
}

std::string render_junit(const Report& r) {
  Counts all;
  // The targets' suites come before the baseline's, a self-test's or an invariance audit's after it.
  std::string suites, after;
  std::visit(overloaded{[&](const RunBody& b) { suites = run_junit(r, b, all); },
                        [&](const ExecBody& b) { suites = exec_junit(r, b, all); },
                        [&](const ProbesBody& b) { suites = probes_junit(r, b, all); },
                        [&](const Invariance& inv) {
                          after = invariance_junit_suites(inv, all.tests, all.failures, all.errors);
                        },
                        [&](const SelfTest& self) { after = selftest_junit(self, all); }},
             r.body);
  if (r.baseline) {
    const BaselineComparison& b = *r.baseline;
    Counts counts;
    std::string cases;
    for (const auto& res : b.results) {
      std::string system_out;
      const Outcome o = baseline_outcome(r, res, system_out);
      counts.add(o);
      cases += testcase(res.target, "baseline " + res.config, o, system_out);
    }
    all.add(counts);
    std::vector<std::string> changes;
    for (const auto& c : b.changes) changes.push_back(fmt::format("{}: {} -> {}", c.key, c.baseline, c.current));
    suites += fmt::format("  <testsuite name=\"baseline\" {}>\n    <properties>\n", counts.attributes());
    suites += property("source", b.source) + property("tool_version", b.tool_version) +
              property("environment_changes", fmt::format("{}", fmt::join(changes, "; ")));
    for (const auto& m : b.models) suites += property("model", m.reason);
    suites += "    </properties>\n" + cases + "  </testsuite>\n";
  }
  suites += after;
  // A torch newer than the newest tested: every suite's properties say so (render.h).
  if (const std::string untested = untested_torch_text(r); !untested.empty()) {
    const std::string head = "    <properties>\n", with = head + property("untested_torch", untested);
    for (size_t at = suites.find(head); at != std::string::npos; at = suites.find(head, at + with.size()))
      suites.replace(at, head.size(), with);
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"repro-audit\" {}>\n", all.attributes());
  out += suites;
  out += "</testsuites>\n";
  return out;
}

}  // namespace ra::report
