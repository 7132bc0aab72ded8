// SPDX-License-Identifier: Apache-2.0
#include "audit/baseline/identity.h"

#include "audit/digest/digest_kernel.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace ra {
namespace {

// Removes every "stack_trace" key, at any depth.
void drop_stack_traces(nlohmann::json& j) {
  if (j.is_object()) {
    j.erase("stack_trace");
    for (auto& [key, value] : j.items()) drop_stack_traces(value);
  } else if (j.is_array()) {
    for (auto& value : j) drop_stack_traces(value);
  }
}

bool has_content_identity(const report::Target& t) { return !t.weights_digest.empty() && !t.graph_digest.empty(); }

}  // namespace

std::string text_digest(const std::string& text) { return digest_kernel::bytes_digest(text.data(), text.size()); }

std::string weights_digest(std::vector<WeightLine> lines) {
  std::stable_sort(lines.begin(), lines.end(),
                   [](const WeightLine& a, const WeightLine& b) { return a.name < b.name; });
  std::string text;
  for (const auto& l : lines)
    text += fmt::format("{} {} [{}] {}\n", l.name, l.dtype, fmt::join(l.shape, ","), l.digest);
  return text_digest(text);
}

std::string normalise_torchscript(const std::string& text) {
  static const std::string kMangle = "___torch_mangle_";
  std::string out;
  out.reserve(text.size());
  size_t at = 0;
  for (size_t hit = text.find(kMangle); hit != std::string::npos; hit = text.find(kMangle, at)) {
    size_t end = hit + kMangle.size();
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    // Only a complete "___torch_mangle_<digits>." is a mangled namespace; anything else stays.
    if (end == hit + kMangle.size() || end >= text.size() || text[end] != '.') {
      out.append(text, at, end - at);
      at = end;
      continue;
    }
    out.append(text, at, hit - at);
    at = end + 1;
  }
  out.append(text, at, std::string::npos);
  return out;
}

std::string canonical_compiled_source(const std::string& cpp) {
  std::string out;
  size_t at = 0;
  while (at < cpp.size()) {
    const size_t end = std::min(cpp.find('\n', at), cpp.size());
    const size_t first = cpp.find_first_not_of(" \t\r", at);
    const bool comment = first != std::string::npos && first + 1 < end && cpp.compare(first, 2, "//") == 0;
    const bool blank = first == std::string::npos || first >= end;
    if (!comment && !blank) out.append(cpp, at, end - at).push_back('\n');
    at = end + 1;
  }
  return out;
}

std::string canonical_export_graph(nlohmann::json model) {  // nlohmann::json keeps keys sorted
  if (model.is_object()) model.erase("torch_version");
  drop_stack_traces(model);
  return model.dump();
}

ModelSameness model_sameness(const report::Target& b, const report::Target& c) {
  if (b.model_digest.empty() || c.model_digest.empty() || b.model_digest == c.model_digest) return ModelSameness::Same;
  if (!has_content_identity(b) || !has_content_identity(c)) return ModelSameness::OtherBytes;
  if (b.graph_digest != c.graph_digest) return ModelSameness::OtherGraph;
  return b.weights_digest == c.weights_digest ? ModelSameness::Resaved : ModelSameness::OtherWeights;
}

}  // namespace ra
