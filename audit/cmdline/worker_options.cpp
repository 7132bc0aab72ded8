// SPDX-License-Identifier: Apache-2.0
#include "audit/cmdline/worker_options.h"

namespace ra::cmdline {

void add_env_options(CLI::App& sub, EnvArgs& a) { sub.add_flag("--json", a.json, "machine-readable JSON on stdout"); }

void add_lint_options(CLI::App& sub, LintArgs& a) {
  sub.add_option("model", a.model, "TorchScript archive (torch.jit.save) or torch.export archive (torch.export.save)")
      ->required();
  sub.add_option("--device", a.device,
                 "cpu, cuda or cuda:N: selects the knowledge-base entries that apply (no GPU "
                 "is needed)")
      ->capture_default_str();
  sub.add_flag("--json", a.json, "print the JSON report on stdout instead of the summary");
  sub.add_option("--report", a.report, "write the JSON report here (atomically)");
  CLI::Option* sarif = sub.add_option(
      "--sarif", a.sarif,
      "write the findings as SARIF 2.1.0 here (atomically), at the source lines code scanning shows them on");
  sub.add_option("--sarif-root", a.sarif_root,
                 "the repository root that --sarif's file paths start from [the git repository of the working "
                 "directory, else the working directory]")
      ->needs(sarif);
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

void add_diff_options(CLI::App& sub, DiffArgs& a) {
  sub.add_option("a", a.a, "first torch.save file or TorchScript archive (A)")->required();
  sub.add_option("b", a.b, "second torch.save file or TorchScript archive (B)")->required();
  sub.add_option("--key", a.key,
                 "compare only this entry of both files and what is below it: \"model\", \"optimizer/state\"");
  sub.add_flag("--json", a.json, "print the JSON document on stdout instead of the table");
  sub.add_option("--report", a.report, "write the JSON document here (atomically)");
  add_tolerance_options(sub, a.tolerance);
}

}  // namespace ra::cmdline
