// SPDX-License-Identifier: Apache-2.0
// The `lint` report as SARIF 2.1.0 (`lint --sarif FILE`), for the code hosts that show a static
// analysis on the lines of a pull request: GitHub code scanning (github/codeql-action/upload-sarif)
// and GitLab (artifacts:reports:sarif).
//
// What a code host needs, and how the findings give it:
// - A place in the repository. A finding names the op's own line, the user's line that led into
//   torch, and the call sites above it; the result's physical location is the innermost of those
//   frames whose file lies in the repository (`in_repository`, made by audit/common/source_root.h),
//   as a path from the root with uriBaseId %SRCROOT%: no machine path is written. A finding none of
//   whose frames is there (a module defined from a string, a model inside an installed package)
//   gets a logical location, its module path, and says where the op is in its message.
// - One alert per line. A layer class used twelve times puts twelve findings (twelve module paths)
//   on one line of its file; code scanning would show twelve alerts there. Findings of one entry
//   and op at one line are one result, its logical locations naming every module path.
// - Alerts that survive edits. partialFingerprints' "reproAuditFinding/v1" is the rule, the file,
//   the enclosing function and the op, with an ordinal among results that share them: a line added
//   above keeps it, and it names no machine path (no line number, no absolute file).
// - Rules. Each knowledge-base entry that found something is a rule (sorted by id): its title, its
//   condition, its advice as the help text, and the level of its findings (error, warning, note).
// Determinism: results are sorted by (file, line, rule, op), the logical ones after them in the
// findings' order; nothing depends on time. lint's notes and expired allowlist entries are the
// invocation's tool execution notifications, next to its exit code.
#include "reports/escape.h"
#include "reports/lint_model.h"
#include "reports/utf8.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>

namespace ra::report {
namespace {

using json = nlohmann::ordered_json;

constexpr const char* kSarifSchema =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";
constexpr const char* kFingerprintKey = "reproAuditFinding/v1";
// Values from the model (op, module path, file and function names) are cut to this many bytes in a
// message, as errors quote untrusted values (audit/common/errors.h, kMaxQuoted).
constexpr size_t kSarifQuoted = 200;
constexpr size_t kSarifModulesShown = 8;  // module paths a message names; the logical locations hold all

std::string sarif_quoted(const std::string& s) {
  if (s.size() <= kSarifQuoted) return s;
  size_t at = kSarifQuoted;
  while (at > 0 && (static_cast<unsigned char>(s[at]) & 0xC0) == 0x80) --at;  // not inside a character
  return fmt::format("{}... ({} bytes)", s.substr(0, at), s.size());
}

std::string sarif_level(const std::string& severity) {
  return severity == "error" ? "error" : severity == "warning" ? "warning" : "note";
}
int level_rank(const std::string& level) { return level == "error" ? 2 : level == "warning" ? 1 : 0; }

// A path as a URI reference: every byte but the unreserved characters and '/' percent-encoded
// (a space, '#', '%', and bytes that are not ASCII).
std::string uri_reference(const std::string& path) {
  std::string out;
  for (const unsigned char c : path) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

// Where code scanning shows a finding: the innermost frame whose file is in the repository.
struct RepositoryPlace {
  std::string path;  // from the repository root
  int line = 0;
  const SourceLocation* frame = nullptr;
};

std::optional<RepositoryPlace> repository_place(const LintFinding& f,
                                                const std::map<std::string, std::string>& in_repository) {
  std::vector<const SourceLocation*> frames = {&f.source};
  if (f.user_frame) frames.push_back(&*f.user_frame);
  for (auto it = f.called_from.rbegin(); it != f.called_from.rend(); ++it) frames.push_back(&*it);
  for (const SourceLocation* frame : frames)
    if (const auto it = in_repository.find(frame->file); frame->line > 0 && it != in_repository.end())
      return RepositoryPlace{it->second, frame->line, frame};
  return std::nullopt;
}

// One SARIF result: the findings of one entry and op at one place in the repository, or one
// finding with no such place.
struct SarifResult {
  std::optional<RepositoryPlace> place;
  std::vector<const LintFinding*> findings;  // in the report's order
  std::string level;                         // the most severe of theirs
};

std::vector<SarifResult> sarif_results(const LintReport& r, const std::map<std::string, std::string>& in_repository) {
  std::vector<SarifResult> out;
  std::map<std::tuple<std::string, int, std::string, std::string>, size_t> at_place;
  for (const auto& f : r.findings) {
    const std::optional<RepositoryPlace> place = repository_place(f, in_repository);
    const std::string level = sarif_level(f.severity);
    if (place) {
      const auto [it, added] = at_place.try_emplace({place->path, place->line, f.entry, f.op}, out.size());
      if (!added) {
        SarifResult& result = out[it->second];
        result.findings.push_back(&f);
        if (level_rank(level) > level_rank(result.level)) result.level = level;
        continue;
      }
    }
    out.push_back({place, {&f}, level});
  }
  std::stable_sort(out.begin(), out.end(), [](const SarifResult& a, const SarifResult& b) {
    if (a.place.has_value() != b.place.has_value()) return a.place.has_value();
    if (!a.place) return false;  // logical ones keep the findings' order
    return std::tie(a.place->path, a.place->line, a.findings.front()->entry, a.findings.front()->op) <
           std::tie(b.place->path, b.place->line, b.findings.front()->entry, b.findings.front()->op);
  });
  return out;
}

std::vector<std::string> module_paths(const SarifResult& result) {
  std::vector<std::string> paths;
  for (const LintFinding* f : result.findings)
    if (std::find(paths.begin(), paths.end(), f->module_path) == paths.end()) paths.push_back(f->module_path);
  return paths;
}

std::string shown_place(const SourceLocation& loc) {
  return fmt::format("{} in {}", display_location({sarif_quoted(loc.file), loc.line, ""}), sarif_quoted(loc.function));
}

// One line of text: what was found, where in the model, what deterministic mode does, and where
// the op itself is when that is not the line shown.
std::string sarif_message(const SarifResult& result) {
  const LintFinding& f = *result.findings.front();
  const std::vector<std::string> paths = module_paths(result);
  std::vector<std::string> shown;
  for (size_t i = 0; i < std::min(paths.size(), kSarifModulesShown); ++i)
    shown.push_back(display_module_path(sarif_quoted(paths[i])));
  std::string modules = fmt::format("{} {}", paths.size() == 1 ? "module" : fmt::format("{} modules", paths.size()),
                                    fmt::join(shown, ", "));
  if (paths.size() > kSarifModulesShown) modules += fmt::format(", ... and {} more", paths.size() - kSarifModulesShown);
  std::string text = fmt::format("{} ({}) in {}: {}.", sarif_quoted(f.op), f.direction, modules, f.title);
  if (!f.depends_on.empty())
    text += fmt::format(" Whether it applies depends on {}, which the graph does not fix.",
                        sarif_quoted(fmt::format("{}", fmt::join(f.depends_on, ", "))));
  for (const auto& rows : f.rows) text += fmt::format(" Rows: {}.", rows);
  text += fmt::format(" Under use_deterministic_algorithms(True): {}{}.", f.deterministic,
                      f.deterministic_documented.empty()
                          ? ""
                          : fmt::format(" as measured (documented: {})", f.deterministic_documented));
  if (!result.place) {
    text += fmt::format(" The op is at {}", shown_place(f.source));
    if (f.user_frame) text += fmt::format(", reached from {}", shown_place(*f.user_frame));
    text += "; none of its frames is a file in the repository.";
  } else if (result.place->frame != &f.source && (f.source.line > 0 || !f.source.file.empty())) {
    text += fmt::format(" The op itself is at {}.", shown_place(f.source));
  }
  return escape::text_line(text);
}

// The finding's condition without the " [depends on ARG]" lint adds: the entry's own.
std::string entry_condition(const LintFinding& f) {
  const size_t at = f.condition.rfind(" [depends on ");
  return f.depends_on.empty() || at == std::string::npos ? f.condition : f.condition.substr(0, at);
}

json sarif_rule(const LintFinding& f, const std::string& level) {
  json properties = {{"tags", json::array({"reproducibility", f.device, f.direction})},
                     {"documented", f.documented},
                     {"deterministic", f.deterministic}};
  if (!f.alert.empty()) properties["alert"] = f.alert;
  if (!f.measured.empty()) properties["measured"] = f.measured;
  return {{"id", f.entry},
          {"shortDescription", {{"text", f.title}}},
          {"fullDescription", {{"text", fmt::format("{}: {}", f.title, entry_condition(f))}}},
          {"help", {{"text", f.advice}}},
          {"defaultConfiguration", {{"level", level}}},
          {"properties", properties}};
}

json sarif_location(const SarifResult& result) {
  json logical = json::array();
  for (const auto& path : module_paths(result))
    logical.push_back({{"fullyQualifiedName", display_module_path(path)}, {"kind", "module"}});
  json location = json::object();
  if (result.place)
    location["physicalLocation"] = {
        {"artifactLocation", {{"uri", uri_reference(result.place->path)}, {"uriBaseId", "%SRCROOT%"}}},
        {"region", {{"startLine", result.place->line}}}};
  location["logicalLocations"] = logical;
  return location;
}

// The rule, the file (or the module path), the enclosing function and the op: what an edit
// elsewhere in the file leaves as it is.
std::string fingerprint_key(const SarifResult& result) {
  const LintFinding& f = *result.findings.front();
  if (result.place) return fmt::format("{}:{}:{}:{}", f.entry, result.place->path, result.place->frame->function, f.op);
  return fmt::format("{}:module:{}:{}:{}", f.entry, f.module_path, f.source.function, f.op);
}

bool semantic_version(const std::string& v) {
  int dots = 0;
  bool digit = false;
  for (const char c : v) {
    if (c == '.' && digit) {
      ++dots;
      digit = false;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      digit = true;
    } else {
      return dots == 2 && digit && (c == '-' || c == '+');
    }
  }
  return dots == 2 && digit;
}

}  // namespace

nlohmann::ordered_json lint_to_sarif(const LintReport& r, const std::map<std::string, std::string>& in_repository) {
  // Rules: the entries with findings, by id, each at the most severe level of its findings.
  std::map<std::string, std::pair<const LintFinding*, std::string>> entries;
  for (const auto& f : r.findings) {
    auto [it, added] = entries.try_emplace(f.entry, &f, sarif_level(f.severity));
    if (!added && level_rank(sarif_level(f.severity)) > level_rank(it->second.second))
      it->second.second = sarif_level(f.severity);
  }
  json rules = json::array();
  std::map<std::string, int> rule_index;
  for (const auto& [id, first] : entries) {
    rule_index[id] = static_cast<int>(rules.size());
    rules.push_back(sarif_rule(*first.first, first.second));
  }

  json results = json::array();
  std::map<std::string, int> seen;  // fingerprint key -> results so far
  for (const SarifResult& result : sarif_results(r, in_repository)) {
    const LintFinding& f = *result.findings.front();
    const std::string key = fingerprint_key(result);
    json out = {{"ruleId", f.entry},
                {"ruleIndex", rule_index.at(f.entry)},
                {"level", result.level},
                {"message", {{"text", sarif_message(result)}}},
                {"locations", json::array({sarif_location(result)})},
                {"partialFingerprints", {{kFingerprintKey, fmt::format("{}:{}", key, ++seen[key])}}}};
    // An allowlist entry accepted it. No "status": absent, it means accepted, and the field was
    // "state" in drafts of 2.1.0 that consumers' schemas still follow.
    if (f.allowed_by)
      out["suppressions"] = json::array({{{"kind", "external"}, {"justification", f.allowed_by->reason}}});
    out["properties"] = {{"op", f.op}, {"direction", f.direction}, {"findings", result.findings.size()}};
    results.push_back(std::move(out));
  }

  json notifications = json::array();
  for (const auto& note : r.notes)
    notifications.push_back({{"level", "note"}, {"message", {{"text", escape::text_line(note)}}}});
  for (const auto& expired : r.allowlist_expired)
    notifications.push_back({{"level", "error"}, {"message", {{"text", escape::text_line(expired)}}}});
  json invocation = {{"executionSuccessful", true}, {"exitCode", r.exit_code}};
  if (!notifications.empty()) invocation["toolExecutionNotifications"] = notifications;

  json driver = {{"name", "repro-audit"}, {"version", r.tool_version}};
  if (semantic_version(r.tool_version)) driver["semanticVersion"] = r.tool_version;
  driver["rules"] = rules;
  return {{"$schema", kSarifSchema},
          {"version", "2.1.0"},
          {"runs", json::array({{{"tool", {{"driver", driver}}},
                                 {"invocations", json::array({invocation})},
                                 {"results", results},
                                 {"properties",
                                  {{"model", r.model},
                                   {"device", r.device},
                                   {"mode", r.mode},
                                   {"strict", r.strict},
                                   {"knowledge",
                                    {{"torch", r.knowledge_torch},
                                     {"entries", r.knowledge_entries},
                                     {"applicable", r.applicable_entries}}}}}}})}};
}

std::string render_lint_sarif(const LintReport& r, const std::map<std::string, std::string>& in_repository) {
  auto j = lint_to_sarif(r, in_repository);
  make_printable(j);  // names are bytes: shown as \xNN where they are not UTF-8
  return j.dump(2) + "\n";
}

}  // namespace ra::report
