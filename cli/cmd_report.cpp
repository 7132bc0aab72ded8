// SPDX-License-Identifier: Apache-2.0
// `repro-audit report IN.json`: re-render a saved report (from `run` or `probes`) as the text
// summary, the JSON, JUnit XML, Markdown or HTML, exactly as the audit that wrote it would have. Exits
// with the report's own exit code; 3 when IN.json is unreadable, not JSON, not a report, or of a
// schema version this build does not read (nothing is written then).
#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/common/json_document.h"
#include "cli/command_table.h"
#include "cli/common.h"
#include "reports/json_read.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>

namespace ra::cli {
namespace {

struct ReportArgs {
  std::string input;
  ReportOutputs out;
};

int execute(const ReportArgs& a) {
  check_outputs(a.out);
  // The whole report is read before anything is written: no output on any error.
  // The saved report already carries its allowlist decisions: none is applied again.
  return finish_report(read_report(a.input), a.out, {});
}

}  // namespace

Action attach_report(CLI::App& sub, const GlobalOptions&) {
  auto a = std::make_shared<ReportArgs>();
  sub.add_option("input", a->input, "JSON report written by run, probes, exec or merge (--report)")->required();
  add_output_options(sub, a->out);
  return [a] { return execute(*a); };
}

}  // namespace ra::cli
