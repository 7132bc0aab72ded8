// SPDX-License-Identifier: Apache-2.0
#include "reports/escape.h"

#include "reports/utf8.h"

#include <algorithm>

namespace ra::report::escape {
namespace {

// The longest run of backticks in `s`.
size_t longest_backticks(std::string_view s) {
  size_t run = 0, longest = 0;
  for (const char c : s) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

// `s` as UTF-8 that says which bytes were there: bytes that are not UTF-8 as the text \xNN.
std::string well_formed(std::string_view s) { return valid_utf8(s) ? std::string(s) : printable(s, false); }

// Code points an HTML document may carry as text: no control characters but tab, newline and
// carriage return, and no noncharacters (the parser reports both as errors).
bool html_allowed(uint32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return true;
  if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) return false;
  if (cp >= 0xFDD0 && cp <= 0xFDEF) return false;
  return (cp & 0xFFFE) != 0xFFFE;
}

bool xml_allowed(uint32_t cp) {
  return cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) || (cp >= 0xE000 && cp <= 0xFFFD) ||
         (cp >= 0x10000 && cp <= 0x10FFFF);
}

}  // namespace

std::string text_line(std::string_view s) {
  std::string named;
  named.reserve(s.size());
  for (const char c : s) {
    if (c == '\n')
      named += "\\n";
    else if (c == '\r')
      named += "\\r";
    else if (c == '\t')
      named += "\\t";
    else
      named += c;
  }
  return printable(named, true);  // the other control characters, C1 included, and stray bytes
}

std::string text_block(std::string_view s, std::string_view indent) {
  std::string out;
  for (size_t start = 0; start <= s.size();) {
    const size_t nl = s.find('\n', start);
    const std::string_view part = s.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    if (start > 0) (out += '\n') += indent;
    out += text_line(part);
    if (nl == std::string_view::npos || nl + 1 == s.size()) break;  // a final line break adds no line
    start = nl + 1;
  }
  return out;
}

std::string markdown(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    if (c == '\n' || c == '\r')
      out += ' ';
    else if (c == '&')
      out += "&amp;";
    else if (std::string_view("\\`*_[]<>|#~!").find(c) != std::string_view::npos)
      (out += '\\') += c;
    else
      out += c;
  }
  return out;
}

std::string markdown_code(std::string_view s) {
  std::string body;
  body.reserve(s.size());
  for (const char c : s) {
    if (c == '\n' || c == '\r')
      body += ' ';
    else if (c == '|')
      body += "\\|";
    else
      body += c;
  }
  const std::string fence(longest_backticks(s) + 1, '`');
  const bool pad = !body.empty() && (body.front() == '`' || body.back() == '`');
  return pad ? fence + " " + body + " " + fence : fence + body + fence;
}

std::string markdown_block(std::string_view text, std::string_view lang, std::string_view indent) {
  const std::string fence(std::max<size_t>(3, longest_backticks(text) + 1), '`');
  std::string out = std::string(indent) + fence + std::string(lang) + "\n";
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  for (size_t start = 0; start <= text.size();) {
    const size_t nl = text.find('\n', start);
    ((out += indent) += text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start)) += '\n';
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return out + std::string(indent) + fence + "\n";
}

namespace {

// Markup text: each code point of `raw` (made well-formed UTF-8 first) as `entity(cp)` gives it
// (an entity, or null to keep it), kept when `allowed`, else U+FFFD. HTML and XML differ only there.
template <typename Entity, typename Allowed>
std::string markup(std::string_view raw, Entity entity, Allowed allowed) {
  const std::string s = well_formed(raw);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    i += decode_utf8(s, i, cp);
    if (const char* e = entity(cp))
      out += e;
    else
      append_utf8(out, allowed(cp) ? cp : 0xFFFD);
  }
  return out;
}

const char* common_entity(uint32_t cp) {
  switch (cp) {
    case '&':
      return "&amp;";
    case '<':
      return "&lt;";
    case '>':
      return "&gt;";
    case '"':
      return "&quot;";
    default:
      return nullptr;
  }
}

}  // namespace

std::string html(std::string_view raw) {
  return markup(
      raw, [](uint32_t cp) { return cp == '\'' ? "&#39;" : common_entity(cp); }, html_allowed);
}

std::string xml(std::string_view raw, XmlContext where) {
  const bool attribute = where == XmlContext::Attribute;
  return markup(
      raw,
      [attribute](uint32_t cp) -> const char* {
        switch (cp) {
          case '\'':
            return "&apos;";
          case '\r':
            return "&#13;";
          case '\t':
            return attribute ? "&#9;" : nullptr;
          case '\n':
            return attribute ? "&#10;" : nullptr;
          default:
            return common_entity(cp);
        }
      },
      xml_allowed);
}

}  // namespace ra::report::escape
