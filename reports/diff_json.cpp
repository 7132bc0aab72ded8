// SPDX-License-Identifier: Apache-2.0
#include "reports/diff_model.h"
#include "reports/render.h"
#include "reports/utf8.h"

namespace ra::report {
namespace {

using json = nlohmann::ordered_json;

json or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

bool has_b_type(const DiffEntry& e) {
  return e.status == DiffStatus::DtypeDiffers || e.status == DiffStatus::ShapeDiffers;
}

json entry_json(const DiffEntry& e) {
  return {{"name", e.name},
          {"status", diff_status_name(e.status)},
          {"dtype", e.dtype},
          {"shape", e.shape},
          {"dtype_b", has_b_type(e) ? json(e.dtype_b) : json(nullptr)},
          {"shape_b", has_b_type(e) ? json(e.shape_b) : json(nullptr)},
          {"digest_a", or_null(e.digest_a)},
          {"digest_b", or_null(e.digest_b)},
          {"value_a", or_null(e.value_a)},
          {"value_b", or_null(e.value_b)},
          {"stats", e.stats ? stats_to_json(*e.stats) : json(nullptr)}};
}

}  // namespace

nlohmann::ordered_json diff_to_json(const DiffReport& r) {
  json entries = json::array();
  for (const auto& e : r.entries) entries.push_back(entry_json(e));
  const DiffSummary s = diff_summary(r);
  return {{"schema", "repro-audit/diff"},
          {"schema_version", kDiffSchemaVersion},
          {"tool", {{"name", "repro-audit"}, {"version", r.tool_version}}},
          {"a", r.a},
          {"b", r.b},
          {"key", or_null(r.key)},
          {"entries", entries},
          {"summary",
           {{"entries", s.entries},
            {"identical", s.identical},
            {"differ", s.differs},
            {"only_a", s.only_a},
            {"only_b", s.only_b},
            {"within_tolerance", s.within_tolerance},
            {"bitwise_identical", s.differs == 0 && s.only_a == 0 && s.only_b == 0}}},
          {"tolerance",
           {{"atol", r.tolerance ? json(r.tolerance->atol) : json(nullptr)},
            {"rtol", r.tolerance ? json(r.tolerance->rtol) : json(nullptr)},
            {"tolerant", r.tolerant}}},
          {"exit_code", r.exit_code}};
}

std::string render_diff_json(const DiffReport& r) {
  auto j = diff_to_json(r);
  make_printable(j);  // paths are bytes: shown as \xNN where they are not UTF-8
  return j.dump(2) + "\n";
}

}  // namespace ra::report
