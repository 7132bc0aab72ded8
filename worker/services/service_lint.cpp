// SPDX-License-Identifier: Apache-2.0
// `lint` in the worker: the model's graphs are read with LibTorch (worker/lint/lint_graph.h).
#include "audit/baseline/allowlist.h"
#include "audit/cmdline/worker_options.h"
#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/common/paths.h"
#include "audit/common/source_root.h"
#include "audit/common/zip_check.h"
#include "audit/knowledge/knowledge.h"
#include "reports/lint_model.h"
#include "worker/lint/lint_graph.h"
#include "worker/services/service_table.h"
#include "worker/targets/export_check.h"
#include "worker/tensor_io/model_file.h"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>
#include <memory>
#include <optional>

#include <sys/stat.h>

namespace ra::services {
namespace {

// --sarif-root as an absolute folder, or the repository of the working directory (a usage error
// when it names no folder).
std::string sarif_root(const cmdline::LintArgs& a, const std::string& cwd) {
  if (a.sarif_root.empty()) return repository_root(cwd);
  struct stat st {};
  if (::stat(a.sarif_root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UsageError(fmt::format("--sarif-root '{}' is not a folder", a.sarif_root));
  return a.sarif_root.front() == '/' || cwd.empty() ? a.sarif_root : cwd + "/" + a.sarif_root;
}

// Each file the findings name (as they will be shown, after shown_path) -> its path in the
// repository, for those that lie there (audit/common/source_root.h). Read from the full paths.
std::map<std::string, std::string> repository_files(const LintResult& result, const std::string& root,
                                                    const std::string& cwd) {
  std::map<std::string, std::string> out;
  const auto add = [&](const report::SourceLocation& loc) {
    if (const auto path = repository_path(loc.file, root, cwd)) out[shown_path(loc.file, cwd)] = *path;
  };
  for (const auto& f : result.findings) {
    add(f.source);
    if (f.user_frame) add(*f.user_frame);
    for (const auto& call : f.called_from) add(call);
  }
  return out;
}

int execute(const cmdline::LintArgs& a) {
  const Device device = Device::parse(a.device);
  if (!a.report.empty()) cmdline::check_writable_target(a.report);
  if (!a.sarif.empty()) cmdline::check_writable_target(a.sarif);
  const std::string cwd = working_directory();
  const std::string root = a.sarif.empty() ? std::string() : sarif_root(a, cwd);
  // --allowlist is read before any work, with today's date (InputError for a bad file).
  const std::optional<Allowlist> allowlist =
      a.allowlist.empty() ? std::nullopt : std::optional<Allowlist>(load_allowlist(a.allowlist));
  const std::string today = allowlist ? today_date() : std::string();
  const std::string knowledge = a.knowledge.empty() ? knowledge_path() : a.knowledge;
  const KnowledgeBase kb = load_knowledge(knowledge);
  // A file that is not a TorchScript archive gets the sentence that says what it is instead.
  // torch.export archives are linted from their graph JSON; lint_model answers AOTInductor packages.
  check_readable(a.model, "model");
  // An archive's entry names and sizes, before any record is read (audit/common/zip_check.h), as
  // `run` checks them before any worker opens the file.
  if (looks_like_zip(a.model)) (void)checked_zip_entries(a.model, fmt::format("model '{}'", a.model));
  if (const ArchiveKind kind = archive_kind(a.model); kind != ArchiveKind::Export && kind != ArchiveKind::Aoti)
    if (const std::string why = not_torchscript_because(a.model); !why.empty())
      throw InputError(fmt::format("model '{}' {}", a.model, why));
  // A torch.export archive is checked as `run` checks it (the one check, worker/targets/export_program.h):
  // lint refuses what run refuses, with run's line.
  LintResult result = lint_model(a.model, device, kb, targets::checked_export_model, a.libraries, a.mode, a.strict,
                                 a.batch_invariance ? BatchVariant::Error : BatchVariant::Note);
  result.device = a.device;
  result.knowledge_path = knowledge;
  const std::map<std::string, std::string> in_repository =
      a.sarif.empty() ? std::map<std::string, std::string>() : repository_files(result, root, cwd);
  // Places as a reviewer reads them (audit/common/paths.h): torch's files below site-packages
  // ("torch/nn/modules/linear.py"), the user's relative to the working directory. Done after the
  // analysis, which tells torch's own frames from the user's by their full paths.
  for (auto& f : result.findings) {
    f.source.file = shown_path(f.source.file, cwd);
    for (auto& call : f.called_from) call.file = shown_path(call.file, cwd);
    if (f.user_frame) f.user_frame->file = shown_path(f.user_frame->file, cwd);
  }
  if (allowlist) apply_allowlist(result, *allowlist, today);
  // The report is complete before anything is written: no half report on any error above.
  if (!a.report.empty()) write_file_atomic(a.report, report::render_lint_json(result));
  if (!a.sarif.empty()) write_file_atomic(a.sarif, report::render_lint_sarif(result, in_repository));
  const std::string out = a.json ? report::render_lint_json(result) : report::render_lint_text(result, a.verbose);
  write_stdout(out);
  return result.exit_code;
}

}  // namespace

Action attach_lint(CLI::App& sub, const GlobalOptions&) {
  auto a = std::make_shared<cmdline::LintArgs>();
  cmdline::add_lint_options(sub, *a);
  return [a] { return execute(*a); };
}

}  // namespace ra::services
