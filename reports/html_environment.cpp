// SPDX-License-Identifier: Apache-2.0
// The environment section of the HTML report (reports/html.cpp has the essay). The fingerprint is
// opaque to the report model (an ordered JSON object), so it is rendered generically, in key order:
// objects as nested tables, arrays of objects as one table with a column per key. A short summary
// of the fields people look for first (torch, CUDA libraries, GPUs with their SM counts, CPU,
// threads) comes before it, where the fingerprint has them.
#include "reports/html.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace ra::report::html {
namespace {

std::string env_value(const nlohmann::ordered_json& v);

std::string env_table(const nlohmann::ordered_json& obj) {
  std::string out = "<table class=\"env\"><tbody>";
  for (auto it = obj.begin(); it != obj.end(); ++it)
    out += fmt::format("<tr><th scope=\"row\">{}</th><td>{}</td></tr>", esc(it.key()), env_value(*it));
  return out + "</tbody></table>";
}

// A value of the fingerprint, whatever its shape: objects as nested tables, arrays of objects as
// one table with a column per key (in order of first appearance), other arrays as lists.
std::string env_value(const nlohmann::ordered_json& v) {
  if (v.is_null()) return "<span class=\"none\">not set</span>";
  if (v.is_string()) return esc(v.get<std::string>());
  if (v.is_object()) return v.empty() ? "<span class=\"none\">none</span>" : env_table(v);
  if (!v.is_array()) return esc(v.dump());
  if (v.empty()) return "<span class=\"none\">none</span>";
  const bool objects = std::all_of(v.begin(), v.end(), [](const auto& e) { return e.is_object(); });
  if (!objects) {
    std::vector<std::string> items;
    for (const auto& e : v) items.push_back(env_value(e));
    return fmt::format("{}", fmt::join(items, ", "));
  }
  std::vector<std::string> keys;
  for (const auto& e : v)
    for (auto it = e.begin(); it != e.end(); ++it)
      if (std::find(keys.begin(), keys.end(), it.key()) == keys.end()) keys.push_back(it.key());
  std::string out = "<table class=\"env-list\"><thead><tr>";
  for (const auto& k : keys) out += fmt::format("<th>{}</th>", esc(k));
  out += "</tr></thead><tbody>";
  for (const auto& e : v) {
    out += "<tr>";
    for (const auto& k : keys) out += fmt::format("<td>{}</td>", e.contains(k) ? env_value(e.at(k)) : "");
    out += "</tr>";
  }
  return out + "</tbody></table>";
}

// The fields people look for first, where the fingerprint has them (the whole of it follows).
void environment_summary(std::string& out, const nlohmann::ordered_json& env) {
  const auto text = [&](const char* pointer) -> std::string {
    const nlohmann::ordered_json::json_pointer p(pointer);
    if (!env.contains(p)) return "";
    const auto& v = env.at(p);
    return v.is_string() ? v.get<std::string>() : v.is_null() ? "" : v.dump();
  };
  std::vector<std::pair<std::string, std::string>> rows;
  const auto add = [&](const char* label, const std::vector<std::pair<const char*, const char*>>& parts) {
    std::vector<std::string> found;
    for (const auto& [name, pointer] : parts)
      if (const std::string v = text(pointer); !v.empty()) found.push_back(*name ? fmt::format("{} {}", name, v) : v);
    if (!found.empty()) rows.emplace_back(label, fmt::format("{}", fmt::join(found, ", ")));
  };
  add("torch", {{"", "/torch/version"}});
  add("CUDA",
      {{"runtime", "/cuda/runtime"}, {"cuDNN", "/cuda/cudnn"}, {"cuBLAS", "/cuda/cublas"}, {"driver", "/cuda/driver"}});
  const nlohmann::ordered_json::json_pointer devices("/cuda/devices");
  if (env.contains(devices) && env.at(devices).is_array()) {
    std::vector<std::string> gpus;
    for (const auto& d : env.at(devices)) {
      if (!d.is_object()) continue;
      std::string g = d.contains("name") && d["name"].is_string() ? d["name"].get<std::string>() : "GPU";
      if (d.contains("sm_count")) g += fmt::format(" ({} SMs)", d["sm_count"].dump());
      gpus.push_back(g);
    }
    const std::string reason = text("/cuda/reason");
    rows.emplace_back("GPUs", gpus.empty() ? (reason.empty() ? "none" : "none: " + reason)
                                           : fmt::format("{}", fmt::join(gpus, "; ")));
  }
  add("CPU", {{"", "/cpu/model"}, {"logical CPUs", "/cpu/logical_cpus"}, {"ATen capability", "/cpu/aten_capability"}});
  add("threads", {{"intra-op", "/threads/intra_op"}, {"inter-op", "/threads/inter_op"}});
  if (rows.empty()) return;
  out += "<dl class=\"env-summary\">";
  for (const auto& [label, value] : rows)
    out += fmt::format("<div><dt>{}</dt><dd>{}</dd></div>", esc(label), esc(value));
  out += "</dl>\n";
}

}  // namespace

void environment_section(std::string& out, const Report& r) {
  out += "<section id=\"environment\">\n<h2>Environment</h2>\n";
  if (!r.environment.is_object() || r.environment.empty()) {
    out += "<p class=\"empty\">No environment fingerprint recorded.</p>\n</section>\n";
    return;
  }
  environment_summary(out, r.environment);
  out += "<details class=\"env-full\"><summary>The whole fingerprint, as the child processes read it</summary>\n";
  out += "<div class=\"env-grid\">\n";
  nlohmann::ordered_json scalars = nlohmann::ordered_json::object();
  for (auto it = r.environment.begin(); it != r.environment.end(); ++it)
    if (!it->is_object()) scalars[it.key()] = *it;
  if (!scalars.empty()) out += fmt::format("<div class=\"env-group\"><h3>general</h3>{}</div>\n", env_table(scalars));
  for (auto it = r.environment.begin(); it != r.environment.end(); ++it)
    if (it->is_object())
      out += fmt::format("<div class=\"env-group\" data-key=\"{0}\"><h3>{0}</h3>{1}</div>\n", esc(it.key()),
                         env_value(*it));
  out += "</div>\n</details>\n</section>\n";
}

}  // namespace ra::report::html
