// SPDX-License-Identifier: Apache-2.0
// Escaping, ids and small markup helpers for the HTML renderer (reports/html.h).
#include "reports/escape.h"
#include "reports/html.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ra::report::html {
// The escaping itself is the shared layer's (reports/escape.h).
std::string esc(std::string_view raw) { return escape::html(raw); }

std::string target_id(size_t target) { return fmt::format("t{}", target); }
std::string config_id(size_t target, size_t config) { return fmt::format("t{}-c{}", target, config); }
std::string fix_id(size_t target, size_t config, size_t candidate) {
  return fmt::format("t{}-c{}-f{}", target, config, candidate);
}

std::string shell_line(const std::vector<std::string>& argv) {
  std::vector<std::string> words;
  for (const auto& a : argv) {
    const bool plain = !a.empty() && a.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
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
