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

// Counts a document's values without building it: nlohmann's parser with a callback walks an
// object's members again each time one of them ends (its check for discarded values), quadratic
// in an object's width: a safetensors header of 20,000 tensors took minutes. So the count is a
// pass of its own over the text, and the document is then parsed without a callback.
template <typename Json>
struct JsonValueCounter : nlohmann::json_sax<Json> {
  const std::string& what;
  int64_t values = 0;
  explicit JsonValueCounter(const std::string& w) : what(w) {}
  bool count() {
    if (++values > kMaxJsonValues)
      throw InputError(
          fmt::format("{} holds more than {} JSON values, more than repro-audit reads", what, kMaxJsonValues));
    return true;
  }
  bool null() override { return count(); }
  bool boolean(bool) override { return count(); }
  bool number_integer(typename Json::number_integer_t) override { return count(); }
  bool number_unsigned(typename Json::number_unsigned_t) override { return count(); }
  bool number_float(typename Json::number_float_t, const typename Json::string_t&) override { return count(); }
  bool string(typename Json::string_t&) override { return count(); }
  bool binary(typename Json::binary_t&) override { return count(); }
  bool start_object(std::size_t) override { return count(); }
  bool key(typename Json::string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return count(); }
  bool end_array() override { return true; }
  // The second pass, the parse itself, throws nlohmann's own exception for the caller's message.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
};

// Parses `text`; throws InputError naming `what` past kMaxJsonValues values, and lets nlohmann's
// own exceptions (not JSON, a number too large) through for the caller's message.
template <typename Json>
Json parse_json_document(const std::string& text, const std::string& what) {
  JsonValueCounter<Json> counter(what);
  if (!Json::sax_parse(text, &counter)) return Json::parse(text);  // throws the parse error
  return Json::parse(text);
}

}  // namespace ra
