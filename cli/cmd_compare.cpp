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
#include "audit/skeleton/changed_ops.h"
#include "cli/command_table.h"
#include "cli/common.h"

#include <memory>

namespace ra::cli {
namespace {

struct CompareArgs {
  std::string baseline;
  std::string current;
  std::string allowlist;           // --allowlist FILE
  bool fail_on_explained = false;  // --fail-on-explained
  ReportOutputs out;
};

int execute(const CompareArgs& a) {
  check_outputs(a.out);
  // Both files are read and checked against each other before anything is written.
  ReportJudges judges;
  load_allowlist_option(a.allowlist, judges);
  judges.baseline = load_baseline(a.baseline, "baseline");
  judges.fail_on_explained = a.fail_on_explained;
  report::Report current = load_baseline(a.current, "report").results;
  // B's own allowlist decisions are in B already; --allowlist adds this list's (finish_report applies
  // it before the comparison, whose nondeterministic results it may allow).
  return finish_report(std::move(current), a.out, judges);
}

}  // namespace

Action attach_compare(CLI::App& sub, const GlobalOptions&) {
  auto a = std::make_shared<CompareArgs>();
  sub.add_option("baseline", a->baseline, "A: the baseline (--save-baseline) or JSON report to compare with")
      ->required();
  sub.add_option("current", a->current, "B: the JSON report (or baseline) whose results are compared with A's")
      ->required();
  add_output_options(sub, a->out,
                     {.what = "B's JSON report with the comparison",
                      .junit = "a 'baseline' suite holds the comparison",
                      .html = "of B with the comparison"});
  add_allowlist_option(sub, a->allowlist);
  add_fail_on_explained_option(sub, a->fail_on_explained);
  return [a] { return execute(*a); };
}

}  // namespace ra::cli
