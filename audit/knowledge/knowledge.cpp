// SPDX-License-Identifier: Apache-2.0
#include "audit/knowledge/knowledge.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/common/json_document.h"
#include "audit/common/paths.h"
#include "audit/trial/config.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace ra {
namespace {

using nlohmann::json;

const std::map<std::string, Documented> kDocumented = {{"made-deterministic", Documented::MadeDeterministic},
                                                       {"raises", Documented::Raises},
                                                       {"undocumented", Documented::Undocumented}};

const std::map<std::string, Behaviour> kBehaviours = {{"made-deterministic", Behaviour::MadeDeterministic},
                                                      {"raises", Behaviour::Raises},
                                                      {"unaffected", Behaviour::Unaffected},
                                                      {"introduces", Behaviour::Introduces},
                                                      {"changes-results", Behaviour::ChangesResults}};

template <typename Map>
std::string keys_of(const Map& m) {
  std::string out;
  for (const auto& [k, v] : m) out += (out.empty() ? "" : ", ") + k;
  return out;
}

class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw InputError(fmt::format("knowledge base '{}': {}: {}", origin_, where, what));
  }

  void only_keys(const json& obj, const std::set<std::string>& allowed, const std::string& where) const {
    if (!obj.is_object()) fail(where, "expected an object");
    for (const auto& [k, v] : obj.items())
      if (!allowed.count(k)) fail(where, fmt::format("unknown key '{}'", k));
  }

  std::string string(const json& obj, const char* key, const std::string& where, bool required = true) const {
    if (!obj.contains(key)) {
      if (required) fail(where, fmt::format("missing '{}'", key));
      return "";
    }
    if (!obj[key].is_string()) fail(where, fmt::format("'{}' must be a string", key));
    return obj[key].get<std::string>();
  }

 private:
  std::string origin_;
};

Measurement parse_measurement(const Reader& r, const json& m, const std::string& entry, size_t index) {
  const std::string where = fmt::format("{}, measured[{}]", entry, index);
  r.only_keys(m, {"device", "device_type", "torch", "cuda", "cudnn", "date", "probe", "observed", "evidence", "note"},
              where);
  Measurement out;
  out.device = r.string(m, "device", where);
  out.device_type = r.string(m, "device_type", where);
  if (out.device_type != "cpu" && out.device_type != "cuda")
    r.fail(where, fmt::format("'device_type' is '{}', expected cpu or cuda", out.device_type));
  out.torch = r.string(m, "torch", where);
  out.cuda = r.string(m, "cuda", where, false);
  out.cudnn = r.string(m, "cudnn", where, false);
  out.date = r.string(m, "date", where);
  if (out.date.size() != 10 || out.date[4] != '-' || out.date[7] != '-')
    r.fail(where, fmt::format("'date' is '{}', expected YYYY-MM-DD", out.date));
  out.probe = r.string(m, "probe", where);
  if (!m.contains("observed") || !m["observed"].is_object() || m["observed"].empty())
    r.fail(where, "'observed' must be a non-empty object: configuration -> verdict");
  for (const auto& [config, verdict] : m["observed"].items()) {
    if (!verdict.is_string() || (verdict != "reproducible" && verdict != "diverged" && verdict != "raised"))
      r.fail(where, fmt::format("'observed.{}' must be reproducible, diverged or raised", config));
    out.observed[config] = verdict.get<std::string>();
  }
  out.evidence = r.string(m, "evidence", where);
  out.note = r.string(m, "note", where, false);
  return out;
}

KnowledgeEntry parse_entry(const Reader& r, const json& e, size_t index) {
  std::string where = fmt::format("entry {}", index);
  r.only_keys(e,
              {"id", "title", "doc_row", "documented", "severity", "ops", "args", "unless", "device", "direction",
               "condition", "behaviour", "alert", "advice", "measured", "concern"},
              where);
  KnowledgeEntry k;
  k.id = r.string(e, "id", where);
  where = fmt::format("entry '{}'", k.id);
  if (k.id.empty()) r.fail(where, "'id' is empty");
  k.title = r.string(e, "title", where);
  k.doc_row = r.string(e, "doc_row", where, false);
  const std::string documented = r.string(e, "documented", where);
  if (!kDocumented.count(documented))
    r.fail(where, fmt::format("'documented' is '{}', expected one of {}", documented, keys_of(kDocumented)));
  k.documented = kDocumented.at(documented);
  if ((k.documented == Documented::Undocumented) != k.doc_row.empty())
    r.fail(where, "'doc_row' must be given exactly when the entry is documented");
  if (!e.contains("ops") || !e["ops"].is_array() || e["ops"].empty()) r.fail(where, "'ops' must be a non-empty list");
  for (const auto& op : e["ops"]) {
    if (!op.is_string() || op.get<std::string>().find("::") == std::string::npos)
      r.fail(where, "'ops' holds qualified op names such as \"aten::index_add\"");
    k.ops.push_back(op.get<std::string>());
  }
  const std::string severity = r.string(e, "severity", where);
  if (severity != "error" && severity != "note")
    r.fail(where, fmt::format("'severity' is '{}', expected error or note", severity));
  k.severity = severity;
  if (e.contains("concern")) {
    k.concern = r.string(e, "concern", where);
    if (k.concern != "run-to-run" && k.concern != "batch-invariance")
      r.fail(where, fmt::format("'concern' is '{}', expected run-to-run or batch-invariance", k.concern));
  }
  for (const char* field : {"args", "unless"}) {
    if (!e.contains(field)) continue;
    if (!e[field].is_object()) r.fail(where, fmt::format("'{}' must be an object", field));
    for (const auto& [name, value] : e[field].items()) {
      const auto scalar = [](const json& v) { return v.is_boolean() || v.is_number_integer() || v.is_string(); };
      const auto ints = [](const json& v) {
        return v.is_array() && !v.empty() &&
               std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_number_integer(); });
      };
      const auto item = [&](const json& v) { return scalar(v) || ints(v); };
      const bool ok =
          item(value) || (value.is_array() && !value.empty() && std::all_of(value.begin(), value.end(), item));
      if (!ok)
        r.fail(where,
               fmt::format("'{}.{}' must be a boolean, an integer, a string, a list of integers, or a list of them",
                           field, name));
      (std::string(field) == "args" ? k.args : k.unless)[name] = value.dump();
    }
  }
  k.device = r.string(e, "device", where);
  if (k.device != "cpu" && k.device != "cuda" && k.device != "any")
    r.fail(where, fmt::format("'device' is '{}', expected cpu, cuda or any", k.device));
  k.direction = r.string(e, "direction", where);
  if (k.direction != "forward" && k.direction != "backward")
    r.fail(where, fmt::format("'direction' is '{}', expected forward or backward", k.direction));
  k.condition = r.string(e, "condition", where);
  if (!e.contains("behaviour") || !e["behaviour"].is_object()) r.fail(where, "'behaviour' must be an object");
  for (const auto& [key, value] : e["behaviour"].items()) {
    if (!find_switch(key)) r.fail(where, fmt::format("'behaviour' names an unknown switch '{}'", key));
    if (!value.is_string() || !kBehaviours.count(value.get<std::string>()))
      r.fail(where, fmt::format("'behaviour.{}' must be one of {}", key, keys_of(kBehaviours)));
    k.behaviour[key] = kBehaviours.at(value.get<std::string>());
  }
  const Behaviour under_det = KnowledgeBase::behaviour_under(k, "deterministic");
  if (k.documented == Documented::MadeDeterministic && under_det != Behaviour::MadeDeterministic)
    r.fail(where, "a 'made-deterministic' entry needs behaviour.deterministic = made-deterministic");
  if (k.documented == Documented::Raises && under_det != Behaviour::Raises)
    r.fail(where, "a 'raises' entry needs behaviour.deterministic = raises");
  k.alert = r.string(e, "alert", where, false);
  k.advice = r.string(e, "advice", where);
  if (e.contains("measured")) {
    if (!e["measured"].is_array()) r.fail(where, "'measured' must be a list");
    for (size_t i = 0; i < e["measured"].size(); ++i)
      k.measured.push_back(parse_measurement(r, e["measured"][i], where, i));
  }
  return k;
}

}  // namespace

const char* to_string(Documented d) {
  switch (d) {
    case Documented::MadeDeterministic:
      return "made-deterministic";
    case Documented::Raises:
      return "raises";
    case Documented::Undocumented:
      return "undocumented";
  }
  return "?";
}

const char* to_string(Behaviour b) {
  switch (b) {
    case Behaviour::MadeDeterministic:
      return "made-deterministic";
    case Behaviour::Raises:
      return "raises";
    case Behaviour::Unaffected:
      return "unaffected";
    case Behaviour::Introduces:
      return "introduces";
    case Behaviour::ChangesResults:
      return "changes-results";
  }
  return "?";
}

std::optional<Behaviour> measured_under_det(const Measurement& m) {
  const auto det = m.observed.find("det");
  if (det == m.observed.end()) return std::nullopt;
  if (det->second == "raised") return Behaviour::Raises;
  if (det->second == "diverged") return Behaviour::Unaffected;
  const auto def = m.observed.find("default");
  if (def != m.observed.end() && def->second == "diverged") return Behaviour::MadeDeterministic;
  return std::nullopt;  // reproducible both ways: the measurement shows no nondeterminism to fix
}

std::string describe(const Measurement& m) {
  std::string versions = "torch " + m.torch;
  if (!m.cuda.empty()) versions += ", CUDA " + m.cuda;
  if (!m.cudnn.empty()) versions += ", cuDNN " + m.cudnn;
  std::string seen;
  for (const char* config : {"default", "det"})
    if (const auto it = m.observed.find(config); it != m.observed.end())
      seen += fmt::format("{}{} {}", seen.empty() ? "" : ", ", config, it->second);
  for (const auto& [config, verdict] : m.observed)
    if (config != "default" && config != "det")
      seen += fmt::format("{}{} {}", seen.empty() ? "" : ", ", config, verdict);
  return fmt::format("{} ({}), {}, probe {}: {}{}", m.device, versions, m.date, m.probe, seen,
                     m.note.empty() ? "" : "; " + m.note);
}

const Measurement* KnowledgeEntry::measured_on(const Device& device) const {
  for (const auto& m : measured)
    if (m.device_type == device.type() && measured_under_det(m)) return &m;
  return nullptr;
}

const KnowledgeEntry* KnowledgeBase::find(const std::string& id) const {
  for (const auto& e : entries)
    if (e.id == id) return &e;
  return nullptr;
}

bool KnowledgeBase::applies_to(const KnowledgeEntry& e, const Device& device) {
  return e.device == "any" || e.device == device.type();
}

Behaviour KnowledgeBase::behaviour_under(const KnowledgeEntry& e, const std::string& key) {
  const auto it = e.behaviour.find(key);
  return it == e.behaviour.end() ? Behaviour::Unaffected : it->second;
}

KnowledgeBase parse_knowledge(const std::string& json_text, const std::string& origin) {
  const Reader r(origin);
  json doc;
  try {
    doc = parse_json_document<json>(json_text, fmt::format("knowledge base '{}'", origin));
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number too large
    r.fail("not valid JSON", e.what());
  }
  r.only_keys(doc, {"schema", "schema_version", "torch", "source", "entries"}, "top level");
  if (r.string(doc, "schema", "top level") != "repro-audit/knowledge")
    r.fail("top level", "'schema' must be \"repro-audit/knowledge\"");
  if (!doc.contains("schema_version") || doc["schema_version"] != 1)
    r.fail("top level", "unsupported 'schema_version' (this build reads version 1)");
  KnowledgeBase kb;
  kb.torch_version = r.string(doc, "torch", "top level");
  kb.source = r.string(doc, "source", "top level");
  if (!doc.contains("entries") || !doc["entries"].is_array()) r.fail("top level", "'entries' must be a list");
  std::set<std::string> ids;
  for (size_t i = 0; i < doc["entries"].size(); ++i) {
    KnowledgeEntry e = parse_entry(r, doc["entries"][i], i);
    if (!ids.insert(e.id).second) r.fail(fmt::format("entry '{}'", e.id), "duplicate id");
    kb.entries.push_back(std::move(e));
  }
  return kb;
}

KnowledgeBase load_knowledge(const std::string& path) {
  check_not_special(path, "knowledge base");  // a FIFO would hold the open until a writer came
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("knowledge base '{}' cannot be read", path));
  std::stringstream text;
  text << in.rdbuf();
  return parse_knowledge(text.str(), path);
}

std::string knowledge_path() { return share_dir() + "/knowledge/ops.json"; }

}  // namespace ra
