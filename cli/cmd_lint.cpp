// SPDX-License-Identifier: Apache-2.0
// `repro-audit lint MODEL ...`: a static scan of the model's graphs against the knowledge base (run
// by the worker: worker/services/service_lint.cpp). Exit 1 when an error is found (run-to-run nondeterminism),
// 0 when only notes are (configuration or machine dependence; 1 with --strict) or nothing; bad
// input exits 2 or 3 as `run` does.
#include "audit/cmdline/worker_options.h"
#include "cli/command_table.h"

#include <memory>

namespace ra::cli {

Action attach_lint(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<cmdline::LintArgs>();
  cmdline::add_lint_options(sub, *a);
  // The options write into *a while CLI11 parses, after this function returns: the action keeps it
  // alive (found by the ASan front: a heap-use-after-free on every env, lint and diff).
  return [a, forward = forward_to_worker(global)] { return forward(); };
}

}  // namespace ra::cli
