// SPDX-License-Identifier: Apache-2.0
// `repro-audit compare A B`: B's results judged against A as the baseline, as `run --baseline A`
// would judge a fresh run (audit/baseline/baseline.h). A and B are each a baseline (--save-baseline) or a
// JSON report (--report). The output is B's report with its baseline section, through the same
// renderers as run and probes: the text summary (or --json), --report, --junit, --markdown, --html.
// Exit 0 when every compared result matches or is explained by an environment change, 1 for a
// regression or a nondeterministic configuration (and when B itself found nondeterminism), 4 when
// B is itself incomplete, 3 when either file is unreadable or invalid or B was not made from the
// same targets as A (nothing is written then).
#include "audit/baseline/baseline.h"
#include "audit/run/changed_ops.h"
#include "cli/command_table.h"
#include "cli/common.h"

#include <memory>

namespace ra::cli {
namespace {

struct CompareArgs {
  std::string baseline;
  std::string current;
  std::string allowlist;  // --allowlist FILE
  AuditArgs out;  // only report, junit, markdown, html and json are used
};

int execute(const CompareArgs& a) {
  for (const std::string* path : {&a.out.report, &a.out.junit, &a.out.markdown, &a.out.html})
    if (!path->empty()) check_writable_target(*path);
  // Both files are read and checked against each other before anything is written.
  const AllowlistOption allow = load_allowlist_option(a.allowlist);
  const Baseline baseline = load_baseline(a.baseline, "baseline");
  report::Report current = load_baseline(a.current, "report").results;
  // B's own allowlist decisions are in B already; --allowlist adds this list's (emit_report applies
  // it before the comparison, whose nondeterministic results it may allow).
  return emit_report(std::move(current), a.out, allow, baseline);
}

}  // namespace

Action attach_compare(CLI::App& sub, const GlobalOptions&) {
  auto a = std::make_shared<CompareArgs>();
  sub.add_option("baseline", a->baseline, "A: the baseline (--save-baseline) or JSON report to compare with")->required();
  sub.add_option("current", a->current, "B: the JSON report (or baseline) whose results are compared with A's")->required();
  sub.add_flag("--json", a->out.json, "print B's JSON report with the comparison on stdout instead of the summary");
  sub.add_option("--report", a->out.report, "write B's JSON report with the comparison here (atomically)");
  sub.add_option("--html", a->out.html, "write a self-contained HTML report of B with the comparison here (atomically)");
  sub.add_option("--junit", a->out.junit, "write a JUnit XML report here (atomically; a 'baseline' suite holds the comparison)");
  sub.add_option("--markdown", a->out.markdown, "write a Markdown summary here (atomically)");
  add_allowlist_option(sub, a->allowlist);
  add_fail_on_explained_option(sub, a->out.fail_on_explained);
  return [a] { return execute(*a); };
}

}  // namespace ra::cli
