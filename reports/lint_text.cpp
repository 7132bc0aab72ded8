// SPDX-License-Identifier: Apache-2.0
// The `lint` report for stdout: one block per finding, grouped by module path (the findings are
// already sorted by it), then notes and a one-line summary.
#include "reports/utf8.h"
#include "reports/lint.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ra::report {

std::string display_module_path(const std::string& path) { return path.empty() ? "<top>" : path; }

std::string display_location(const SourceLocation& loc) {
  if (loc.line <= 0) return loc.file.empty() ? "unknown line" : loc.file;
  return loc.file.empty() ? fmt::format("line {}", loc.line) : fmt::format("{}:{}", loc.file, loc.line);
}

int raising_findings(const LintReport& report) {
  int n = 0;
  for (const auto& f : report.findings) n += f.deterministic == "raises";
  return n;
}

namespace {

std::string render_lint_text_raw(const LintReport& r) {
  std::string out = fmt::format("lint {} for {}: {} of {} knowledge-base entries apply (torch {})\n", r.model,
                                r.device, r.applicable_entries, r.knowledge_entries, r.knowledge_torch);
  out += fmt::format("methods scanned: {}\n",
                     r.methods.empty() ? std::string("none") : fmt::format("{}", fmt::join(r.methods, ", ")));
  const std::string* group = nullptr;
  for (const auto& f : r.findings) {
    if (group == nullptr || *group != f.module_path) {
      group = &f.module_path;
      out += fmt::format("\n{}\n", display_module_path(f.module_path));
    }
    out += fmt::format("  {}  {} ({})\n", f.entry, f.op, f.direction);
    out += fmt::format("    {}\n", f.title);
    out += fmt::format("    at:            {} in {}\n", display_location(f.source), f.source.function);
    for (auto it = f.called_from.rbegin(); it != f.called_from.rend(); ++it)
      out += fmt::format("    called from:   {} in {}\n", display_location(*it), it->function);
    if (f.entry_methods.size() != 1 || f.entry_methods.front() != "forward")
      out += fmt::format("    reached from:  {}\n", fmt::join(f.entry_methods, ", "));
    out += fmt::format("    when:          {}\n", f.condition);
    out += fmt::format("    documented:    {}\n", f.documented);
    out += fmt::format("    deterministic: {} under use_deterministic_algorithms(True){}\n", f.deterministic,
                       f.alert.empty() ? "" : fmt::format(" (alert: {})", f.alert));
    out += fmt::format("    advice:        {}\n", f.advice);
    if (f.allowed_by)
      out += fmt::format("    allowed: {} (allowlist entry {})\n", f.allowed_by->reason, f.allowed_by->entry);
  }
  if (!r.notes.empty()) out += "\n";
  for (const auto& n : r.notes) out += fmt::format("note: {}\n", n);
  const size_t n = r.findings.size();
  out += fmt::format("\n{} finding{} ({} raise under use_deterministic_algorithms)\n", n, n == 1 ? "" : "s",
                     raising_findings(r));
  size_t allowed = 0;
  for (const auto& f : r.findings) allowed += f.allowed_by.has_value();
  if (allowed > 0) out += fmt::format("{} allowed by the allowlist\n", allowed);
  for (const auto& e : r.allowlist_expired) out += fmt::format("{}\n", e);
  return out;
}

}  // namespace

// Names and messages may hold control characters and bytes that are not UTF-8: shown as \xNN.
std::string render_lint_text(const LintReport& r) { return printable(render_lint_text_raw(r), true); }

}  // namespace ra::report
