// SPDX-License-Identifier: Apache-2.0
// Parsing a JSON document from a file the user gave (report, baseline, allowlist, knowledge base)
// within a fixed memory budget. A parsed value costs nlohmann 16 bytes and more (a 40 MB array of
// zeros became 880 MB), so the number of values is capped: far above any report the tool writes
// (a probe suite's is about 10^5), far below what a hostile file could otherwise claim.
#pragma once

#include "audit/common/errors.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace ra {

inline constexpr int64_t kMaxJsonValues = int64_t{1} << 21;

// Parses `text`; throws InputError naming `what` past kMaxJsonValues values, and lets nlohmann's
// own exceptions (not JSON, a number too large) through for the caller's message.
template <typename Json>
Json parse_json_document(const std::string& text, const std::string& what) {
  int64_t values = 0;
  const typename Json::parser_callback_t count = [&](int, typename Json::parse_event_t event, Json&) {
    using E = typename Json::parse_event_t;
    if ((event == E::value || event == E::object_start || event == E::array_start) && ++values > kMaxJsonValues)
      throw InputError(fmt::format("{} holds more than {} JSON values, more than repro-audit reads", what, kMaxJsonValues));
    return true;
  };
  return Json::parse(text, count);
}

}  // namespace ra
