// SPDX-License-Identifier: Apache-2.0
// UTF-8 decoding and encoding for the markup renderers (JUnit XML, HTML): text from the model
// (names, messages, a child's stderr) may hold any bytes, and the documents must stay well-formed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ra::report {

// Decodes one UTF-8 sequence at s[i] (i < s.size()); returns its length and sets `cp`. Bytes that
// are not well-formed UTF-8 (truncated, overlong, surrogates, past U+10FFFF) give U+FFFD and
// length 1.
size_t decode_utf8(std::string_view s, size_t i, uint32_t& cp);

// Appends the code point (at most U+10FFFF) as UTF-8.
void append_utf8(std::string& out, uint32_t cp);

// Whether `s` is well-formed UTF-8 throughout.
bool valid_utf8(std::string_view s);

// `s` with every byte that is not part of well-formed UTF-8 written as the text \xNN, so that a
// path of arbitrary bytes shows as what it is ("caf\xe9.pt") in a JSON or text document. With
// `controls`, control characters other than newline and tab (ESC, NUL, CR..., and the C1 range) are written so too:
// a target name must not move the cursor or hide text in a terminal or a CI log.
std::string printable(std::string_view s, bool controls);

// Applies printable(s, false) to every string (keys too) of a JSON document, in place, so that it
// can be dumped: nlohmann refuses invalid UTF-8, and U+FFFD would hide which bytes were there.
template <typename Json>
void make_printable(Json& j) {
  if (j.is_string()) {
    const auto& s = j.template get_ref<const std::string&>();
    if (!valid_utf8(s)) j = printable(s, false);
  } else if (j.is_array()) {
    for (auto& item : j) make_printable(item);
  } else if (j.is_object()) {
    Json out = Json::object();
    bool renamed = false;
    for (auto it = j.begin(); it != j.end(); ++it) {
      make_printable(it.value());
      renamed = renamed || !valid_utf8(it.key());
    }
    if (!renamed) return;
    for (auto it = j.begin(); it != j.end(); ++it) out[printable(it.key(), false)] = std::move(it.value());
    j = std::move(out);
  }
}

}  // namespace ra::report
