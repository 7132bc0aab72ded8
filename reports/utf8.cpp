// SPDX-License-Identifier: Apache-2.0
#include "reports/utf8.h"

namespace ra::report {

size_t decode_utf8(std::string_view s, size_t i, uint32_t& cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t len = 0;
  uint32_t min = 0;
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  if ((c & 0xE0) == 0xC0)
    len = 2, cp = c & 0x1F, min = 0x80;
  else if ((c & 0xF0) == 0xE0)
    len = 3, cp = c & 0x0F, min = 0x800;
  else if ((c & 0xF8) == 0xF0)
    len = 4, cp = c & 0x07, min = 0x10000;
  if (len == 0 || i + len > s.size()) {
    cp = 0xFFFD;
    return 1;
  }
  for (size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) {
      cp = 0xFFFD;
      return 1;
    }
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if (cp < min || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = 0xFFFD;
  return len;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

namespace {

// The length of the well-formed UTF-8 sequence at s[i], or 0 when the byte there starts none.
size_t well_formed(std::string_view s, size_t i) {
  uint32_t cp = 0;
  const size_t len = decode_utf8(s, i, cp);
  if (cp != 0xFFFD) return len;
  return len == 3 && s.substr(i, 3) == "\xEF\xBF\xBD" ? 3 : 0;  // a real U+FFFD
}

}  // namespace

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t len = well_formed(s, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string printable(std::string_view s, bool controls) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = well_formed(s, i);
    const bool control = controls && ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f);
    // C1 controls (U+0080-U+009F, 0xC2 0x80-0x9F): U+009B is a CSI on terminals that honour it.
    const bool c1 = controls && len == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) <= 0x9F;
    if (c1) {
      for (const size_t k : {i, i + 1}) {
        const auto b = static_cast<unsigned char>(s[k]);
        ((out += "\\x") += kHex[b >> 4]) += kHex[b & 15];
      }
      i += 2;
    } else if (len == 0 || control) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

}  // namespace ra::report
