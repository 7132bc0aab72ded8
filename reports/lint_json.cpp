// SPDX-License-Identifier: Apache-2.0
// The `lint` report as JSON (`lint --json`, `lint --report`). Keys are written in a fixed order and
// nothing depends on time, so equal scans give byte-identical files.
#include "reports/lint_model.h"
#include "reports/utf8.h"

namespace ra::report {
namespace {

using json = nlohmann::ordered_json;

json location_json(const SourceLocation& loc) {
  return {{"file", loc.file.empty() ? json(nullptr) : json(loc.file)},
          {"line", loc.line > 0 ? json(loc.line) : json(nullptr)},
          {"function", loc.function}};
}

json finding_json(const LintFinding& f) {
  json called_from = json::array();
  for (const auto& c : f.called_from) called_from.push_back(location_json(c));
  return {{"entry", f.entry},
          {"title", f.title},
          {"op", f.op},
          {"direction", f.direction},
          {"device", f.device},
          {"severity", f.severity},
          {"module_path", f.module_path},
          {"source", location_json(f.source)},
          {"called_from", called_from},
          {"user_frame", f.user_frame ? location_json(*f.user_frame) : json(nullptr)},
          {"entry_methods", f.entry_methods},
          {"condition", f.condition},
          {"depends_on", f.depends_on},
          {"documented", f.documented},
          {"deterministic", f.deterministic},
          {"deterministic_documented",
           f.deterministic_documented.empty() ? json(nullptr) : json(f.deterministic_documented)},
          {"measured", f.measured},
          {"alert", f.alert.empty() ? json(nullptr) : json(f.alert)},
          {"advice", f.advice},
          {"rows", f.rows},
          {"risk", f.risk.empty() ? json(nullptr) : json(f.risk)},
          {"allowed_by",
           f.allowed_by ? json{{"entry", f.allowed_by->entry},
                               {"reason", f.allowed_by->reason},
                               {"expires", f.allowed_by->expires.empty() ? json(nullptr) : json(f.allowed_by->expires)}}
                        : json(nullptr)}};
}

}  // namespace

nlohmann::ordered_json lint_to_json(const LintReport& r) {
  json findings = json::array();
  size_t errors = 0, warnings = 0;
  for (const auto& f : r.findings) {
    findings.push_back(finding_json(f));
    errors += f.severity == "error";
    warnings += f.severity == "warning";
  }
  return {{"schema", "repro-audit/lint"},
          {"schema_version", kLintSchemaVersion},
          {"tool", {{"name", "repro-audit"}, {"version", r.tool_version}}},
          {"model", r.model},
          {"device", r.device},
          {"device_type", r.device_type},
          {"mode", r.mode},
          {"strict", r.strict},
          {"knowledge",
           {{"path", r.knowledge_path},
            {"torch", r.knowledge_torch},
            {"entries", r.knowledge_entries},
            {"applicable", r.applicable_entries}}},
          {"methods", r.methods},
          {"summary",
           {{"findings", r.findings.size()},
            {"errors", errors},
            {"warnings", warnings},
            {"notes", r.findings.size() - errors - warnings},
            {"raise", raising_findings(r)}}},
          {"findings", findings},
          {"notes", r.notes},
          {"allowlist_expired", r.allowlist_expired},
          {"exit_code", r.exit_code}};
}

std::string render_lint_json(const LintReport& r) {
  auto j = lint_to_json(r);
  make_printable(j);  // paths are bytes: shown as \xNN where they are not UTF-8
  return j.dump(2) + "\n";
}

}  // namespace ra::report
