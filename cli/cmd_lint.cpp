// SPDX-License-Identifier: Apache-2.0
// `repro-audit lint MODEL ...`: a static scan of the model's graphs against the knowledge base.
// Exit 1 when anything is found, 0 when nothing is; bad input exits 2 or 3 as `run` does.
#include "audit/files.h"
#include "audit/knowledge.h"
#include "audit/lint.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "reports/lint.h"

#include <cstdio>

namespace ra::cli {
namespace {

struct LintArgs {
  std::string model;
  std::string device = "cpu";
  std::string report;
  std::string knowledge;
  bool json = false;
  std::vector<std::string> libraries;
  std::string allowlist;
};

int execute(const LintArgs& a) {
  const std::string type = device_type(a.device);
  if (!a.report.empty()) check_writable_target(a.report);
  const AllowlistOption allow = load_allowlist_option(a.allowlist);
  const std::string knowledge = a.knowledge.empty() ? knowledge_path() : a.knowledge;
  const KnowledgeBase kb = load_knowledge(knowledge);
  LintResult result = lint_model(a.model, type, kb, a.libraries);
  result.device = a.device;
  result.knowledge_path = knowledge;
  if (allow.list) apply_allowlist(result, *allow.list, allow.today);
  // The report is complete before anything is written: no half report on any error above.
  if (!a.report.empty()) write_file_atomic(a.report, report::render_lint_json(result));
  const std::string out = a.json ? report::render_lint_json(result) : report::render_lint_text(result);
  std::fputs(out.c_str(), stdout);
  return result.exit_code;
}

}  // namespace

Action attach_lint(CLI::App& sub, const GlobalOptions&) {
  auto a = std::make_shared<LintArgs>();
  sub.add_option("model", a->model, "TorchScript archive (torch.jit.save)")->required();
  sub.add_option("--device", a->device, "cpu, cuda or cuda:N: selects the knowledge-base entries that apply (no GPU "
                                        "is needed)")
      ->capture_default_str();
  sub.add_flag("--json", a->json, "print the JSON report on stdout instead of the summary");
  sub.add_option("--report", a->report, "write the JSON report here (atomically)");
  sub.add_option("--knowledge", a->knowledge, "knowledge-base file to use instead of the installed one");
  sub.add_option("--load-library", a->libraries, "shared library with custom ops the model needs (repeatable)");
  add_allowlist_option(sub, a->allowlist);
  return [a] { return execute(*a); };
}

}  // namespace ra::cli
