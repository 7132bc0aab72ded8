// SPDX-License-Identifier: Apache-2.0
// Internal to reports/: an enum's values and their names in one table, and the two lookups over it
// (the to_string and *_from_string functions of core_model.h and baseline_model.h), so that each
// name is written once and both directions agree.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>

namespace ra::report::detail {

template <class E, std::size_t N>
using NameTable = std::array<std::pair<E, const char*>, N>;

// The name of `v`, or "?" for a value the table lacks.
template <class E, std::size_t N>
const char* name_of(const NameTable<E, N>& table, E v) {
  for (const auto& [value, name] : table)
    if (value == v) return name;
  return "?";
}

// The value that `name` names, or nullopt.
template <class E, std::size_t N>
std::optional<E> value_named(const NameTable<E, N>& table, const std::string& name) {
  for (const auto& [value, n] : table)
    if (name == n) return value;
  return std::nullopt;
}

}  // namespace ra::report::detail
