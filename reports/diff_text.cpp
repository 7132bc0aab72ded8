// SPDX-License-Identifier: Apache-2.0
// The `diff` table: one line per entry, status first, names aligned; identical entries show only
// their type, differing ones their divergence statistics; then one summary line.
#include "reports/diff_model.h"
#include "reports/escape.h"
#include "reports/render.h"
#include "reports/utf8.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace ra::report {
namespace {

std::string type_text(const std::string& dtype, const std::vector<int64_t>& shape) {
  return fmt::format("{}[{}]", dtype, fmt::join(shape, "x"));
}

std::string detail(const DiffEntry& e) {
  if (!e.value_a.empty() || !e.value_b.empty()) {  // a plain value on at least one side
    const auto shown = [](const std::string& type, const std::string& value) {
      return type == "None" ? value : fmt::format("{} {}", type, value);
    };
    const std::string type_b = e.dtype_b.empty() ? e.dtype : e.dtype_b;
    const std::string a = e.value_a.empty() ? type_text(e.dtype, e.shape) : shown(e.dtype, e.value_a);
    const std::string b = e.value_b.empty() ? type_text(type_b, e.shape_b) : shown(type_b, e.value_b);
    switch (e.status) {
      case DiffStatus::Identical:
      case DiffStatus::OnlyA:
        return a;
      case DiffStatus::OnlyB:
        return shown(e.dtype, e.value_b);
      default:
        return fmt::format("{} vs {}", a, b);
    }
  }
  const std::string a = type_text(e.dtype, e.shape);
  switch (e.status) {
    case DiffStatus::Identical:
    case DiffStatus::OnlyA:
    case DiffStatus::OnlyB:
      return a;
    case DiffStatus::DtypeDiffers:
    case DiffStatus::ShapeDiffers:
      return fmt::format("{} vs {}", a, type_text(e.dtype_b, e.shape_b));
    case DiffStatus::Differs:
      return fmt::format("{}  {}", a, e.stats ? stats_text(*e.stats) : "digests differ");
  }
  return a;
}

}  // namespace

const char* diff_status_name(DiffStatus status) {
  switch (status) {
    case DiffStatus::Identical:
      return "identical";
    case DiffStatus::Differs:
      return "differs";
    case DiffStatus::DtypeDiffers:
      return "dtype-differs";
    case DiffStatus::ShapeDiffers:
      return "shape-differs";
    case DiffStatus::OnlyA:
      return "only-a";
    case DiffStatus::OnlyB:
      return "only-b";
  }
  return "unknown";
}

DiffSummary diff_summary(const DiffReport& r) {
  DiffSummary s;
  s.entries = static_cast<int>(r.entries.size());
  for (const auto& e : r.entries) {
    switch (e.status) {
      case DiffStatus::Identical:
        ++s.identical;
        break;
      case DiffStatus::OnlyA:
        ++s.only_a;
        break;
      case DiffStatus::OnlyB:
        ++s.only_b;
        break;
      default:
        ++s.differs;
        break;
    }
    if (e.status == DiffStatus::Differs && e.stats && within_tolerance(*e.stats)) ++s.within_tolerance;
  }
  return s;
}

std::string diff_summary_line(const DiffReport& r) {
  const DiffSummary s = diff_summary(r);
  std::string line = fmt::format("{} of {} {} differ", s.differs, s.entries, s.entries == 1 ? "entry" : "entries");
  if (s.only_a > 0) line += fmt::format(", {} only in A", s.only_a);
  if (s.only_b > 0) line += fmt::format(", {} only in B", s.only_b);
  if (s.within_tolerance > 0 && s.within_tolerance == s.differs)
    line += ", all within tolerance";
  else if (s.within_tolerance > 0)
    line += fmt::format(", {} of them within tolerance", s.within_tolerance);
  if (s.differs == 0 && s.only_a == 0 && s.only_b == 0)
    line += ": the files are bitwise identical";
  else if (r.exit_code == 0)
    line += ": accepted (--tolerant)";
  return line;
}

namespace {

std::string render_diff_text_raw(const DiffReport& r) {
  // Paths, entry names and plain values come from the files: one line each (reports/escape.h).
  const auto ln = [](std::string_view s) { return escape::text_line(s); };
  std::string out = fmt::format("A: {}\nB: {}\n", ln(r.a), ln(r.b));
  size_t width = 0;
  for (const auto& e : r.entries) width = std::max(width, ln(e.name).size());
  width = std::min<size_t>(width, 48);
  for (const auto& e : r.entries)
    out += fmt::format("  {:<13}  {:<{}}  {}\n", diff_status_name(e.status), ln(e.name), width, ln(detail(e)));
  out += diff_summary_line(r) + "\n";
  return out;
}

}  // namespace

// Names and messages may hold control characters and bytes that are not UTF-8: shown as \xNN.
std::string render_diff_text(const DiffReport& r) { return printable(render_diff_text_raw(r), true); }

}  // namespace ra::report
