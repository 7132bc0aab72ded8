// SPDX-License-Identifier: Apache-2.0
// What `run` (worker/targets/export.cpp) and `lint` (worker/lint/lint_graph.cpp) both read of a
// torch.export archive's models/model.json: its schema version, and a node's module path.
//
// The schema: the torch.export serialization schema this LibTorch reads, checked before an
// archive is run or linted. NativeRT itself does not check it: an archive marked with a future major version ran.
// torch 2.11 writes and reads SCHEMA_VERSION = (8, 17) (torch/_export/serde/schema.py); its Python
// loader refuses another major version, except 0.0 (unversioned). The C++ headers do not export the
// number, so it is pinned here with the wheel.
#pragma once

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

namespace ra {

inline constexpr int kExportSchemaMajor = 8;

// "" when `model` (an archive's models/model.json, parsed) has a schema this LibTorch reads; else
// the end of a sentence that begins "model 'PATH' ".
inline std::string export_schema_problem(const nlohmann::json& model) {
  if (!model.is_object() || !model.contains("schema_version")) return "";  // unversioned, as Python accepts
  const nlohmann::json& v = model["schema_version"];
  if (!v.is_object() || !v.contains("major") || !v["major"].is_number_integer() || !v.contains("minor") ||
      !v["minor"].is_number_integer())
    return "is a torch.export archive whose schema_version is malformed";
  const auto major = v["major"].get<int64_t>(), minor = v["minor"].get<int64_t>();
  if (major == kExportSchemaMajor || (major == 0 && minor == 0)) return "";
  return fmt::format(
      "is a torch.export archive of schema version {}.{}, which this build's LibTorch (schema {}.x) "
      "does not read: export it again with the torch this tool is built with",
      major, minor, kExportSchemaMajor);
}

// "L__self__,,__main__.Net;L__self__fc,fc,torch.nn.modules.linear.Linear" (a node's
// nn_module_stack) -> "fc": the innermost module's path, "" for the top module.
inline std::string module_path_of(const std::string& stack) {
  std::string last;
  size_t begin = 0;
  while (begin < stack.size()) {
    const size_t end = std::min(stack.find(';', begin), stack.size());
    const std::string entry = stack.substr(begin, end - begin);
    const size_t c1 = entry.find(',');
    const size_t c2 = c1 == std::string::npos ? std::string::npos : entry.find(',', c1 + 1);
    if (c2 != std::string::npos) last = entry.substr(c1 + 1, c2 - c1 - 1);
    begin = end + 1;
  }
  return last;
}

}  // namespace ra
