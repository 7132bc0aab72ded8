// SPDX-License-Identifier: Apache-2.0
// The state a call may change, digested by name (see call_state.h).
#include "worker/targets/call_state.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

namespace ra::targets {

void record_state_value(Recorder& rec, const std::string& name, const c10::IValue& v) {
  if (v.isTensor()) {
    if (v.toTensor().defined()) rec.add(name, v.toTensor());
  } else if (v.isInt()) {
    rec.add(name, at::scalar_tensor(v.toInt(), at::kLong));
  } else if (v.isDouble()) {
    rec.add(name, at::scalar_tensor(v.toDouble(), at::kDouble));
  } else if (v.isBool()) {
    rec.add(name, at::scalar_tensor(v.toBool(), at::kBool));
  } else if (v.isNone()) {
    rec.add(name, at::empty({0}, at::kByte));
  } else if (v.isString()) {
    const std::string& s = v.toStringRef();
    rec.add(name, at::tensor(std::vector<uint8_t>(s.begin(), s.end()), at::kByte));
  } else if (v.isList()) {
    const auto list = v.toListRef();
    rec.add(name, at::scalar_tensor(static_cast<int64_t>(list.size()), at::kLong));  // a length that changes
    for (size_t i = 0; i < list.size(); ++i) record_state_value(rec, fmt::format("{}/{}", name, i), list[i]);
  } else if (v.isTuple()) {
    const auto& elements = v.toTupleRef().elements();
    for (size_t i = 0; i < elements.size(); ++i) record_state_value(rec, fmt::format("{}/{}", name, i), elements[i]);
  } else if (v.isGenericDict()) {
    // By the key's printed form, sorted: a dict's order is its insertion order, not its content.
    std::map<std::string, c10::IValue> entries;
    for (const auto& e : v.toGenericDict()) {
      std::ostringstream key;
      key << e.key();
      entries.emplace(key.str(), e.value());
    }
    rec.add(name, at::scalar_tensor(static_cast<int64_t>(entries.size()), at::kLong));
    for (const auto& [key, value] : entries) record_state_value(rec, name + "/" + key, value);
  }
  // Objects (submodules, script classes) and anything else: not state this check can read.
}

void record_inputs(Recorder& rec, const std::vector<c10::IValue>& args, const std::vector<std::string>& names) {
  for (size_t i = 0; i < args.size(); ++i)
    record_state_value(rec, "input/" + (i < names.size() ? names[i] : fmt::format("{}", i)), args[i]);
}

void record_attributes(Recorder& rec, const torch::jit::Module& module) {
  std::set<std::string> named;  // parameters and buffers, recorded under their own names
  for (const auto& p : module.named_parameters(true)) named.insert(p.name);
  for (const auto& b : module.named_buffers(true)) named.insert(b.name);
  for (const auto& a : module.named_attributes(true)) {
    if (named.count(a.name) != 0 || a.value.isObject() || a.value.isModule()) continue;
    record_state_value(rec, "attr/" + a.name, a.value);
  }
}

namespace {

// "buffer/count" -> "buffer 'count'"; "attr/cache/0" -> "attribute 'cache'" (a container by its name).
std::string state_name(const std::string& name) {
  const size_t slash = name.find('/');
  const std::string kind = name.substr(0, slash);
  std::string rest = slash == std::string::npos ? name : name.substr(slash + 1);
  if (kind == "attr" || kind == "input") rest = rest.substr(0, rest.find('/'));
  static const std::map<std::string, std::string, std::less<>> words = {{"param", "parameter"},
                                                                        {"buffer", "buffer"},
                                                                        {"attr", "attribute"},
                                                                        {"input", "input"},
                                                                        {"constant", "constant"}};
  const auto it = words.find(kind);
  return fmt::format("{} '{}'", it == words.end() ? kind : it->second, rest);
}

}  // namespace

std::vector<std::string> changed_state(const std::vector<report::TensorDigest>& before,
                                       const std::vector<report::TensorDigest>& after, bool caches_allowed) {
  std::map<std::string, const report::TensorDigest*> was, is;
  for (const auto& d : before) was.emplace(d.name, &d);
  for (const auto& d : after) is.emplace(d.name, &d);
  std::set<std::string> changed;
  const auto note = [&](const std::string& name) {
    if (caches_allowed && std::string_view(name).substr(0, 5) == "attr/") return;
    changed.insert(state_name(name));
  };
  for (const auto& [name, d] : is)
    if (const auto it = was.find(name); it == was.end() || !(*it->second == *d)) note(name);
  for (const auto& [name, d] : was)
    if (is.count(name) == 0) note(name);
  return {changed.begin(), changed.end()};
}

}  // namespace ra::targets
