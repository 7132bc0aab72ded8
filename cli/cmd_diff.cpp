// SPDX-License-Identifier: Apache-2.0
// `repro-audit diff A.pt B.pt`: a bitwise diff of two torch.save files (a tensor, or containers
// of tensors such as a state_dict). Exit 0 when the files are bitwise identical, 1 when they
// differ, 3 when either file is unreadable or holds something other than tensors.
#include "audit/diff.h"
#include "audit/files.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "reports/diff.h"

#include <cstdio>
#include <memory>

namespace ra::cli {
namespace {

struct DiffArgs {
  std::string a;
  std::string b;
  std::string report;
  bool json = false;
};

int execute(const DiffArgs& a) {
  if (!a.report.empty()) check_writable_target(a.report);
  const report::DiffReport result = diff_tensor_files(a.a, a.b);
  // The report is complete before anything is written: no half report on any error above.
  if (!a.report.empty()) write_file_atomic(a.report, report::render_diff_json(result));
  const std::string out = a.json ? report::render_diff_json(result) : report::render_diff_text(result);
  std::fputs(out.c_str(), stdout);
  return result.exit_code;
}

}  // namespace

Action attach_diff(CLI::App& sub, const GlobalOptions&) {
  auto a = std::make_shared<DiffArgs>();
  sub.add_option("a", a->a, "first torch.save file (A)")->required();
  sub.add_option("b", a->b, "second torch.save file (B)")->required();
  sub.add_flag("--json", a->json, "print the JSON document on stdout instead of the table");
  sub.add_option("--report", a->report, "write the JSON document here (atomically)");
  return [a] { return execute(*a); };
}

}  // namespace ra::cli
