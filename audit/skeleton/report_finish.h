// SPDX-License-Identifier: Apache-2.0
// The finish: the last step of every audit (audit/skeleton/audit_kind.h), and all that `merge`,
// `compare` and `report` do after reading their reports. It judges the report (the allowlist with
// today's date, then the baseline, and the ops an environment change altered), writes each asked
// format whole or not at all, prints the summary or the JSON on stdout, and returns the exit code.
// The options that fill these structs are checked in cli/ before any work; nothing here parses
// a command line.
#pragma once

#include "audit/baseline/allowlist.h"
#include "audit/baseline/baseline.h"
#include "reports/model.h"

#include <optional>
#include <string>

namespace ra {

// Where a finished report goes: each file written atomically where its path is not empty, and
// stdout's text summary (or the JSON with `json`).
struct ReportOutputs {
  std::string report;             // --report: the JSON report
  std::string junit;              // --junit
  std::string markdown;           // --markdown
  std::string html;               // --html
  std::string save_baseline;      // --save-baseline
  bool baseline_tensors = false;  // --baseline-tensors: the reference tensors too, in SAVE_BASELINE.tensors/
  bool json = false;              // --json: the JSON on stdout instead of the summary
};

// What judges a report before it is rendered.
struct ReportJudges {
  std::optional<Allowlist> allowlist;  // --allowlist
  std::string today;                   // the date the allowlist's expiries are read against
  std::optional<Baseline> baseline;    // --baseline (compare's A)
  bool fail_on_explained = false;      // --fail-on-explained
  double timeout_s = 600;              // the worker that measures changed tensors (--timeout)
};

// Applies the allowlist and the baseline (if any; where both sides kept reference tensors, one
// worker measures how far each changed tensor moved), names the ops the baseline's environment
// change altered, writes the JSON, JUnit, Markdown and HTML reports and the --save-baseline file
// (each atomically; with --baseline-tensors, its tensors folder whole before it) where asked,
// prints the summary (or the JSON) on stdout, and returns the report's exit code. A stop signal is
// honoured between the files.
int finish_report(report::Report rep, const ReportOutputs& out, const ReportJudges& judges);

}  // namespace ra
