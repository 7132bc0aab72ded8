// SPDX-License-Identifier: Apache-2.0
#include "reports/baseline_file.h"
#include "reports/utf8.h"

#include "reports/json_node.h"
#include "reports/json_parts.h"
#include "reports/json_read.h"

#include <fmt/format.h>

#include <filesystem>

namespace ra::report {
namespace {

using json = nlohmann::ordered_json;
using detail::Node;
using detail::verdict;

json config_json(const ConfigResult& c, bool tensors) {
  ConfigResult kept = c;
  if (kept.op_stream) kept.op_stream = kept.op_stream->without_names();  // 32 characters per record, no names
  json j = detail::config_head_json(kept);
  j["reference_digests"] = detail::digests_json(c.reference);
  if (tensors && !c.reference_tensors.empty()) j["reference_tensors"] = c.reference_tensors;
  // The reference repeat's error per floating tensor against the float64 referee, for an upgrade's
  // direction (audit/baseline/upgrade_direction.h); only where the referee ran: older files stay as they were.
  if (c.referee) {
    json errors = json::array();
    for (const auto& e : c.referee->errors) errors.push_back(detail::compact_error_json(e));
    j["referee"] = {{"errors", errors}};
  }
  return j;
}

// A target as a baseline keeps it: its head (its kind's, target_json.cpp) and configurations.
template <class Element>
json target_json(const Element& t, bool tensors) {
  json configs = json::array();
  for (const auto& c : t.common.configs) configs.push_back(config_json(c, tensors));
  json j = detail::target_head_json(t, detail::TargetDoc::Baseline);
  if (t.common.referee) j["referee"] = detail::referee_json(*t.common.referee);  // ran, or why not
  j["configs"] = configs;
  return j;
}

template <class Element>
json targets_json(const std::vector<Element>& targets, bool tensors) {
  json out = json::array();
  for (const auto& t : targets) out.push_back(target_json(t, tensors));
  return out;
}

// A file or folder name the baseline gives: one plain name, never a path that leaves the folder.
std::string plain_name(const Node& n) {
  const std::string name = n.str();
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos)
    n.fail(fmt::format("'{}' is not a plain file name", name));
  return name;
}

ConfigResult config(const Node& n, const std::string& folder) {
  ConfigResult c;
  detail::read_config_head(n, c);
  c.reference = detail::read_digests(n.at("reference_digests"));
  c.tensor_count = c.reference.size();
  if (n.has("reference_tensors")) {
    if (folder.empty())
      n.at("reference_tensors").fail("names kept tensors, but the baseline names no \"tensors\" folder");
    c.reference_tensors = folder + "/" + plain_name(n.at("reference_tensors"));
  }
  if (n.has("referee")) c.referee = ConfigReferee{n.at("referee").at("errors").list(detail::read_compact_error), {}};
  return c;
}

template <class Element>
std::vector<Element> targets(const Node& list, const std::string& folder) {
  return list.list([&folder](const Node& n) {
    Element t;
    detail::read_target_head(n, t, detail::TargetDoc::Baseline);
    if (n.has("referee")) t.common.referee = detail::read_referee(n.at("referee"));
    t.common.configs = n.at("configs").list([&folder](const Node& c) { return config(c, folder); });
    return t;
  });
}

// The schema's name, or "" when the document has none.
std::string schema_of(const json& j) {
  return j.is_object() && j.contains("schema") && j["schema"].is_string() ? j["schema"].get<std::string>() : "";
}

}  // namespace

json baseline_to_json(const Report& r, const std::string& tensors) {
  // The body's targets, and its own section: invariance's classes (optional: older files lack it).
  json targets = json::array(), invariance;
  const bool kept = !tensors.empty();
  std::visit(
      overloaded{[&](const RunBody& b) { targets = targets_json(b.targets, kept); },
                 [&](const ExecBody& b) { targets = targets_json(b.targets, kept); },
                 [&](const ProbesBody& b) { targets = targets_json(b.targets, kept); },
                 [&](const Invariance& inv) { invariance = invariance_baseline_to_json(inv); }, [](const SelfTest&) {}},
      r.body);
  // A baseline is path-free, so that the same audit gives the same file wherever it was written
  // from and to: the command keeps its program and subcommand (not the files it named), and the
  // fingerprint drops the folders of this installation (they explain no difference).
  std::vector<std::string> command(r.command.begin(), r.command.begin() + std::min<size_t>(r.command.size(), 2));
  if (!command.empty()) command.front() = std::filesystem::path(command.front()).filename().string();
  json environment = r.environment;
  for (const auto& [section, key] : {std::pair{"tool", "share_dir"}, std::pair{"torch", "library_dir"}})
    if (environment.is_object() && environment.contains(section) && environment[section].is_object())
      environment[section].erase(key);
  json j = {{"schema", kBaselineSchema},
            {"schema_version", kBaselineSchemaVersion},
            {"kind", std::string(kind_of(r.body).name)},
            {"tool", {{"name", "repro-audit"}, {"version", r.tool_version}}},
            {"command", command},
            {"verdict", to_string(r.verdict)},
            {"environment", environment},
            {"targets", targets}};
  if (!tensors.empty()) j["tensors"] = tensors;  // only then: a baseline without kept tensors stays as it was
  if (!invariance.is_null()) j["invariance"] = std::move(invariance);
  return j;
}

std::string render_baseline(const Report& r, const std::string& tensors) {
  auto j = baseline_to_json(r, tensors);
  make_printable(j);  // paths are bytes: shown as \xNN where they are not UTF-8
  return j.dump(2) + "\n";
}

Report baseline_from_json(const json& j) {
  const Node root{j, ""};
  if (schema_of(j) != kBaselineSchema)
    throw ReportError(schema_of(j).empty()
                          ? fmt::format("not a repro-audit baseline (no \"schema\": \"{}\")", kBaselineSchema)
                          : fmt::format("not a repro-audit baseline (its schema is '{}')", schema_of(j)));
  const Node version = root.at("schema_version");
  if (!version.v.is_number_integer()) version.fail("expected an integer");
  if (version.v.get<int64_t>() != kBaselineSchemaVersion)
    throw ReportError(
        fmt::format("baseline schema version {} is not supported by this repro-audit (it reads version {})",
                    version.v.dump(), kBaselineSchemaVersion));
  Report r;
  r.tool_version = root.at("tool").at("version").str();
  r.command = root.at("command").strings();
  r.verdict = verdict(root.at("verdict"));
  const Node env = root.at("environment");
  if (!env.v.is_object()) env.fail("expected an object");
  r.environment = env.v;
  // The kind, read as the report reader reads it (reports/json.cpp), and each kind's targets.
  const std::string folder = root.has("tensors") ? plain_name(root.at("tensors")) : "";
  const Node list = root.at("targets");
  r.body = detail::read_kind(root);
  std::visit(overloaded{[&](RunBody& b) { b.targets = targets<RunTarget>(list, folder); },
                        [&](ExecBody& b) { b.targets = targets<ExecTarget>(list, folder); },
                        [&](ProbesBody& b) { b.targets = targets<ProbeTarget>(list, folder); },
                        [&](Invariance& inv) {
                          if (list.size() != 0) list.fail("an invariance baseline has no targets");
                          inv = invariance_baseline_from_json(root.at("invariance").v);
                        },
                        [&](SelfTest&) {
                          if (list.size() != 0) list.fail("a self-test baseline has no targets");
                        }},
             r.body);
  return r;
}

Report results_from_json(const json& j, std::string& schema) {
  schema = schema_of(j);
  if (schema == kBaselineSchema) return baseline_from_json(j);
  if (schema == kReportSchema) return report_from_json(j);
  throw ReportError(schema.empty() ? std::string("not a repro-audit baseline or report (no \"schema\")")
                                   : fmt::format("not a repro-audit baseline or report (its schema is '{}')", schema));
}

}  // namespace ra::report
