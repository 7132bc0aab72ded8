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

}  // namespace ra::report
