// SPDX-License-Identifier: Apache-2.0
// Lenient readers of the start-up hook's record. The hook runs inside the user's Python and may
// have been cut short or edited, so a missing or mistyped member reads as empty, false or null:
// what the record does not say is reported as unknown, never thrown as the user's error.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace ra::exec::hook_json {

inline std::string text(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j.at(key).is_string()) return "";
  return j.at(key).get<std::string>();
}

inline bool flag(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j.at(key).is_boolean() && j.at(key).get<bool>();
}

inline const nlohmann::json& member(const nlohmann::json& j, const char* key) {
  static const nlohmann::json null;
  return j.is_object() && j.contains(key) ? j.at(key) : null;
}

}  // namespace ra::exec::hook_json
