// SPDX-License-Identifier: Apache-2.0
// `diff` in the worker: torch.save files are read with LibTorch and our pickle reader.
#include "audit/cmdline/worker_options.h"
#include "audit/common/files.h"
#include "reports/diff_model.h"
#include "worker/diff/tensor_diff.h"
#include "worker/services/service_table.h"

#include <cstdio>
#include <memory>

namespace ra::services {
namespace {

int execute(const cmdline::DiffArgs& a) {
  if (!a.report.empty()) cmdline::check_writable_target(a.report);
  const report::DiffReport result =
      diff_tensor_files(a.a, a.b, a.key, cmdline::tolerance_option(a.tolerance), a.tolerance.tolerant);
  // The report is complete before anything is written: no half report on any error above.
  if (!a.report.empty()) write_file_atomic(a.report, report::render_diff_json(result));
  const std::string out = a.json ? report::render_diff_json(result) : report::render_diff_text(result);
  write_stdout(out);
  return result.exit_code;
}

}  // namespace

Action attach_diff(CLI::App& sub, const GlobalOptions&) {
  auto a = std::make_shared<cmdline::DiffArgs>();
  cmdline::add_diff_options(sub, *a);
  return [a] { return execute(*a); };
}

}  // namespace ra::services
