// SPDX-License-Identifier: Apache-2.0
// Escaping, ids and small markup helpers for the HTML renderer (reports/html.h).
#include "reports/html.h"
#include "reports/utf8.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ra::report::html {
namespace {

// Code points an HTML document may carry as text: no control characters but tab, newline and
// carriage return, and no noncharacters (the parser reports both as errors).
bool allowed(uint32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return true;
  if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) return false;
  if (cp >= 0xFDD0 && cp <= 0xFDEF) return false;
  return (cp & 0xFFFE) != 0xFFFE;
}

}  // namespace

std::string esc(std::string_view raw) {
  // Bytes that are not UTF-8 show as \xNN, as in every other format.
  const std::string s = valid_utf8(raw) ? std::string(raw) : printable(raw, false);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    i += decode_utf8(s, i, cp);
    switch (cp) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: append_utf8(out, allowed(cp) ? cp : 0xFFFD);
    }
  }
  return out;
}

std::string target_id(size_t target) { return fmt::format("t{}", target); }
std::string config_id(size_t target, size_t config) { return fmt::format("t{}-c{}", target, config); }
std::string fix_id(size_t target, size_t config, size_t candidate) {
  return fmt::format("t{}-c{}-f{}", target, config, candidate);
}

std::string shell_line(const std::vector<std::string>& argv) {
  std::vector<std::string> words;
  for (const auto& a : argv) {
    const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                         "0123456789-_./:=,+@%") == std::string::npos;
    if (plain) {
      words.push_back(a);
      continue;
    }
    std::string q = "'";
    for (const char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    words.push_back(q + "'");
  }
  return fmt::format("{}", fmt::join(words, " "));
}

std::string badge(const char* verdict) { return fmt::format("<span class=\"badge v-{0}\">{0}</span>", verdict); }
std::string badge(Verdict v) { return badge(to_string(v)); }
std::string code(const std::string& s) { return "<code>" + esc(s) + "</code>"; }

// A message: one line as a paragraph, several (a stack, an alert with its context) as a block.
std::string message(const std::string& m) {
  if (m.find('\n') == std::string::npos) return fmt::format("<p class=\"message\">{}</p>", esc(m));
  return fmt::format("<pre class=\"message\">{}</pre>", esc(m));
}

std::string tensor_type(const std::string& dtype, const std::vector<int64_t>& shape) {
  return fmt::format("{}[{}]", dtype, fmt::join(shape, "x"));
}

}  // namespace ra::report::html
