// SPDX-License-Identifier: Apache-2.0
// Internal to reports/: reading a JSON document field by field with the JSON path of every value,
// so that an error names the field ("targets[0].configs[1].trials[2].status: expected a string").
// Shared by every reader in reports/: the concerns' (*_json.cpp), the report's (json.cpp) and the baseline
// file's (baseline_file.cpp).
#pragma once

#include "reports/json_read.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ra::report::detail {

using json = nlohmann::ordered_json;

// A value and where it sits in the document.
struct Node {
  const json& v;
  std::string path;

  [[noreturn]] void fail(const std::string& what) const {
    throw ReportError(fmt::format("{}: {}", path.empty() ? "(top level)" : path, what));
  }

  Node at(const std::string& key) const {
    if (!v.is_object()) fail("expected an object");
    const auto it = v.find(key);
    const std::string p = path.empty() ? key : path + "." + key;
    if (it == v.end()) throw ReportError(fmt::format("{}: missing", p));
    return {*it, p};
  }
  bool has(const std::string& key) const { return v.is_object() && v.contains(key); }
  bool null() const { return v.is_null(); }

  size_t size() const {
    if (!v.is_array()) fail("expected an array");
    return v.size();
  }
  Node operator[](size_t i) const { return {v[i], fmt::format("{}[{}]", path, i)}; }

  std::string str() const {
    if (!v.is_string()) fail("expected a string");
    return v.get<std::string>();
  }
  // A string that to_json writes as null when empty.
  std::string str_or_null() const { return null() ? std::string() : str(); }
  int64_t i64() const {
    if (!v.is_number_integer()) fail("expected an integer");
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      fail("integer out of range");
    return v.get<int64_t>();
  }
  int i32() const {
    const int64_t x = i64();
    if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max()) fail("integer out of range");
    return int(x);
  }
  uint64_t u64() const {
    if (!v.is_number_unsigned()) fail("expected a non-negative integer");
    return v.get<uint64_t>();
  }
  double num() const {
    if (!v.is_number()) fail("expected a number");
    return v.get<double>();
  }
  // A number that to_json writes as null when not finite.
  double num_or_nan() const { return null() ? std::numeric_limits<double>::quiet_NaN() : num(); }
  std::optional<double> opt_num() const { return null() ? std::nullopt : std::optional<double>(num()); }
  bool boolean() const {
    if (!v.is_boolean()) fail("expected true or false");
    return v.get<bool>();
  }

  template <class F>
  auto list(F read) const {
    std::vector<decltype(read(std::declval<Node>()))> out;
    const size_t n = size();
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) out.push_back(read((*this)[i]));
    return out;
  }
  std::vector<std::string> strings() const {
    return list([](const Node& n) { return n.str(); });
  }
  std::vector<int64_t> i64s() const {
    return list([](const Node& n) { return n.i64(); });
  }
  std::vector<int> i32s() const {
    return list([](const Node& n) { return n.i32(); });
  }
  std::vector<uint64_t> u64s() const {
    return list([](const Node& n) { return n.u64(); });
  }
  std::vector<size_t> sizes() const {
    return list([](const Node& n) { return size_t(n.u64()); });
  }
};

inline Verdict verdict(const Node& n) {
  const auto v = verdict_from_string(n.str());
  if (!v) n.fail(fmt::format("unknown verdict '{}'", n.str()));
  return *v;
}

}  // namespace ra::report::detail
