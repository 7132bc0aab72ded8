// SPDX-License-Identifier: Apache-2.0
// `repro-audit lint MODEL ...`: a static scan of the model's graphs against the knowledge base (run
// by the worker: worker/services/service_lint.cpp). Exit 1 when an error is found (run-to-run nondeterminism),
// 0 when only notes are (configuration or machine dependence; 1 with --strict) or nothing; bad
// input exits 2 or 3 as `run` does.
#include "cli/common.h"
#include "cli/worker_options.h"

#include <memory>

namespace ra::cli {

void add_lint_options(CLI::App& sub, LintArgs& a) {
  sub.add_option("model", a.model, "TorchScript archive (torch.jit.save) or torch.export archive (torch.export.save)")
      ->required();
  sub.add_option("--device", a.device,
                 "cpu, cuda or cuda:N: selects the knowledge-base entries that apply (no GPU "
                 "is needed)")
      ->capture_default_str();
  sub.add_flag("--json", a.json, "print the JSON report on stdout instead of the summary");
  sub.add_option("--report", a.report, "write the JSON report here (atomically)");
  sub.add_option("--knowledge", a.knowledge, "knowledge-base file to use instead of the installed one");
  sub.add_option("--load-library", a.libraries, "shared library with custom ops the model needs (repeatable)");
  add_allowlist_option(sub, a.allowlist);
  sub.add_option("--mode", a.mode, "infer: forward entries only; train: backward entries too (as run --mode)")
      ->check(CLI::IsMember({"infer", "train"}))
      ->capture_default_str();
  sub.add_flag("--strict", a.strict, "notes (configuration or machine dependence) exit 1 too, not only errors");
  sub.add_flag("--batch-invariance", a.batch_invariance,
               "ops whose rows depend on the batch size (measured by the batch-invariance probes) are warnings ranked "
               "by the rows each GEMM multiplies, not notes");
  sub.add_flag("--verbose", a.verbose, "every finding in full, instead of one block per knowledge-base entry");
}

Action attach_lint(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<LintArgs>();
  add_lint_options(sub, *a);
  // The options write into *a while CLI11 parses, after this function returns: the action keeps it
  // alive (found by the ASan front: a heap-use-after-free on every env, lint and diff).
  return [a, forward = forward_to_worker(global)] { return forward(); };
}

}  // namespace ra::cli
