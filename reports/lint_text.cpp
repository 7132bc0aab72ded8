// SPDX-License-Identifier: Apache-2.0
// The `lint` report for stdout: one block per finding, grouped by module path (the findings are
// already sorted by it), then notes and a one-line summary.
#include "reports/escape.h"
#include "reports/lint_model.h"
#include "reports/utf8.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

namespace ra::report {
namespace {

// Every string from the model or the knowledge base is one line here (reports/escape.h).
using escaped::ln;

}  // namespace

std::string display_module_path(const std::string& path) { return path.empty() ? "<top>" : ln(path); }

std::string display_location(const SourceLocation& loc) {
  if (loc.line <= 0) return loc.file.empty() ? "unknown line" : ln(loc.file);
  return loc.file.empty() ? fmt::format("line {}", loc.line) : fmt::format("{}:{}", ln(loc.file), loc.line);
}

int lint_exit_code(const LintReport& report) {
  if (!report.allowlist_expired.empty()) return 1;
  for (const auto& f : report.findings)
    if (!f.allowed_by && ((f.severity != "note" && f.severity != "warning") || report.strict)) return 1;
  return 0;
}

int raising_findings(const LintReport& report) {
  int n = 0;
  for (const auto& f : report.findings) n += f.deterministic == "raises";
  return n;
}

namespace {

// What deterministic mode does, and what was measured: where a probe on a real machine saw
// otherwise than the documentation, the measurement is stated and the documentation shown beside it.
std::string deterministic_lines(const LintFinding& f) {
  std::string out =
      fmt::format("    deterministic: {} under use_deterministic_algorithms(True){}{}\n", ln(f.deterministic),
                  f.deterministic_documented.empty()
                      ? ""
                      : fmt::format(", as measured (documented: {})", ln(f.deterministic_documented)),
                  f.alert.empty() ? "" : fmt::format(" (alert: {})", ln(f.alert)));
  for (const auto& m : f.measured) out += fmt::format("    measured:      {}\n", ln(m));
  return out;
}

// Every finding in full, grouped by module path (the findings are sorted by it).
void verbose_findings(std::string& out, const LintReport& r) {
  const std::string* group = nullptr;
  for (const auto& f : r.findings) {
    if (group == nullptr || *group != f.module_path) {
      group = &f.module_path;
      out += fmt::format("\n{}\n", display_module_path(f.module_path));
    }
    out += fmt::format("  {} [{}]  {} ({})\n", ln(f.entry), ln(f.severity), ln(f.op), ln(f.direction));
    out += fmt::format("    {}\n", ln(f.title));
    out += fmt::format("    at:            {} in {}\n", display_location(f.source), ln(f.source.function));
    if (f.user_frame)
      out += fmt::format("    your code:     {} in {}\n", display_location(*f.user_frame), ln(f.user_frame->function));
    for (auto it = f.called_from.rbegin(); it != f.called_from.rend(); ++it)
      out += fmt::format("    called from:   {} in {}\n", display_location(*it), ln(it->function));
    if (f.entry_methods.size() != 1 || f.entry_methods.front() != "forward")
      out += fmt::format("    reached from:  {}\n", ln(fmt::format("{}", fmt::join(f.entry_methods, ", "))));
    out += fmt::format("    when:          {}\n", ln(f.condition));
    for (const auto& rows : f.rows) out += fmt::format("    rows:          {}\n", ln(rows));
    out += fmt::format("    documented:    {}\n", ln(f.documented));
    out += deterministic_lines(f);
    out += fmt::format("    advice:        {}\n", ln(f.advice));
    if (f.allowed_by)
      out += fmt::format("    allowed: {} (allowlist entry {})\n", ln(f.allowed_by->reason), f.allowed_by->entry);
  }
}

// One block per knowledge-base entry, errors first: its findings' count, where they are (module
// paths), and the entry's text once.
void grouped_findings(std::string& out, const LintReport& r) {
  std::vector<std::string> order;  // entry ids: errors, warnings, then notes, each in first-finding order
  for (const char* severity : {"error", "warning", "note"})
    for (const auto& f : r.findings)
      if (f.severity == severity && std::find(order.begin(), order.end(), f.entry) == order.end())
        order.push_back(f.entry);
  for (const auto& id : order) {
    std::vector<const LintFinding*> fs;
    for (const auto& f : r.findings)
      if (f.entry == id) fs.push_back(&f);
    const LintFinding& first = *fs.front();
    std::vector<std::string> places, ops;
    size_t allowed = 0;
    for (const LintFinding* f : fs) {
      const std::string place = display_module_path(f->module_path);
      if (std::find(places.begin(), places.end(), place) == places.end()) places.push_back(place);
      if (std::find(ops.begin(), ops.end(), ln(f->op)) == ops.end()) ops.push_back(ln(f->op));
      allowed += f->allowed_by.has_value();
    }
    constexpr size_t kPlacesShown = 8;
    std::string where = fmt::format(
        "{}",
        fmt::join(places.begin(), places.begin() + static_cast<long>(std::min(places.size(), kPlacesShown)), ", "));
    if (places.size() > kPlacesShown) where += fmt::format(", ... and {} more", places.size() - kPlacesShown);
    out += fmt::format("\n{:<5} {}  {} ({}): {} finding{}\n", first.severity, ln(first.entry), fmt::join(ops, ", "),
                       ln(first.direction), fs.size(), fs.size() == 1 ? "" : "s");
    out += fmt::format("    {}\n", ln(first.title));
    out += fmt::format("    in:            {}\n", where);
    if (fs.size() == 1) {
      const SourceLocation& at = first.user_frame ? *first.user_frame : first.source;
      out += fmt::format("    at:            {} in {}\n", display_location(at), ln(at.function));
    }
    out += fmt::format("    when:          {}\n", ln(first.condition));
    // Each distinct M of the entry's nodes ("high risk: M = x.size(0): ..."), with how many
    // findings share it, highest rank first.
    std::map<std::string, size_t> rows;
    for (const LintFinding* f : fs)
      for (const auto& line : f->rows) ++rows[line];
    for (const char* rank : {"high", "unknown", "low", "none"})
      for (const auto& [line, n] : rows)
        if (line.rfind(std::string(rank) + " risk: ", 0) == 0)
          out += fmt::format("    rows:          {}{}\n", ln(line), n > 1 ? fmt::format(" ({} findings)", n) : "");
    out += deterministic_lines(first);
    out += fmt::format("    advice:        {}\n", ln(first.advice));
    for (const LintFinding* f : fs)
      if (f->allowed_by) {
        out += fmt::format("    allowed: {} (allowlist entry {}){}\n", ln(f->allowed_by->reason), f->allowed_by->entry,
                           allowed < fs.size() ? fmt::format(", {} of {} findings", allowed, fs.size()) : "");
        break;
      }
  }
}

std::string render_lint_text_raw(const LintReport& r, bool verbose) {
  std::string out =
      fmt::format("lint {} for {} ({}): {} of {} knowledge-base entries apply (torch {})\n", ln(r.model), ln(r.device),
                  ln(r.mode), r.applicable_entries, r.knowledge_entries, ln(r.knowledge_torch));
  out += fmt::format("methods scanned: {}\n",
                     r.methods.empty() ? std::string("none") : ln(fmt::format("{}", fmt::join(r.methods, ", "))));
  if (verbose)
    verbose_findings(out, r);
  else
    grouped_findings(out, r);
  if (!r.notes.empty()) out += "\n";
  for (const auto& n : r.notes) out += fmt::format("note: {}\n", ln(n));
  size_t errors = 0, warnings = 0, notes = 0, allowed = 0;
  for (const auto& f : r.findings) {
    (f.severity == "note" ? notes : f.severity == "warning" ? warnings : errors) += 1;
    allowed += f.allowed_by.has_value();
  }
  out += fmt::format(
      "\n{} error{}, {}{} note{} ({} raise under use_deterministic_algorithms){}\n", errors, errors == 1 ? "" : "s",
      warnings > 0 ? fmt::format("{} warning{}, ", warnings, warnings == 1 ? "" : "s") : "", notes,
      notes == 1 ? "" : "s", raising_findings(r),
      notes + warnings > 0 && errors == 0 && !r.strict
          ? fmt::format("; {} do not fail (--strict makes them)", warnings > 0 && notes > 0 ? "warnings and notes"
                                                                  : warnings > 0            ? "warnings"
                                                                                            : "notes")
          : "");
  if (allowed > 0) out += fmt::format("{} allowed by the allowlist\n", allowed);
  for (const auto& e : r.allowlist_expired) out += fmt::format("{}\n", ln(e));
  return out;
}

}  // namespace

// Names and messages may hold control characters and bytes that are not UTF-8: shown as \xNN.
std::string render_lint_text(const LintReport& r, bool verbose) {
  return printable(render_lint_text_raw(r, verbose), true);
}

}  // namespace ra::report
