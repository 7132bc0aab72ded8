// SPDX-License-Identifier: Apache-2.0
#include "worker/lint/gemm_rows.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <regex>

namespace ra::lint {
namespace {

constexpr int64_t kMaxFactor = int64_t{1} << 40;  // beyond it a product is not a row count

// A sympy srepr that is a product of Integer(n) and Symbol('s') terms, or nullopt.
std::optional<GemmRows> product_of(const std::string& expr) {
  static const std::regex symbol(R"(Symbol\('([A-Za-z_][A-Za-z0-9_]*)'[^)]*\))");
  static const std::regex integer(R"(Integer\((-?[0-9]+)\))");
  std::string rest = expr;
  GemmRows out;
  for (std::sregex_iterator it(expr.begin(), expr.end(), symbol), end; it != end; ++it)
    out.symbols.push_back((*it)[1].str());
  rest = std::regex_replace(rest, symbol, "");
  for (std::sregex_iterator it(rest.begin(), rest.end(), integer), end; it != end; ++it) {
    const int64_t v = std::stoll((*it)[1].str());
    if (v <= 0 || out.factor > kMaxFactor / v) return std::nullopt;
    out.factor *= v;
  }
  rest = std::regex_replace(rest, integer, "");
  // What is left may only be the product's own spelling: "Mul(, )" around the terms.
  rest = std::regex_replace(rest, std::regex(R"(Mul\(|[(), ])"), "");
  if (!rest.empty() || (out.symbols.empty() && expr.find("Integer") == std::string::npos)) return std::nullopt;
  std::sort(out.symbols.begin(), out.symbols.end());
  return out;
}

GemmRows times(GemmRows a, const GemmRows& b) {
  a.factor = a.factor > kMaxFactor / std::max<int64_t>(b.factor, 1) ? kMaxFactor : a.factor * b.factor;
  a.symbols.insert(a.symbols.end(), b.symbols.begin(), b.symbols.end());
  std::sort(a.symbols.begin(), a.symbols.end());
  return a;
}

// The input that carries a GEMM's rows, and how many of its leading dimensions are rows (-1: all
// but the last).
std::optional<std::pair<std::string, int>> row_input(const std::string& op) {
  if (op == "aten::linear") return std::pair<std::string, int>{"input", -1};
  if (op == "aten::matmul") return std::pair<std::string, int>{"self", -1};
  if (op == "aten::mm") return std::pair<std::string, int>{"self", 1};
  if (op == "aten::addmm") return std::pair<std::string, int>{"mat1", 1};
  if (op == "aten::bmm") return std::pair<std::string, int>{"self", 2};
  if (op == "aten::conv2d") return std::pair<std::string, int>{"input", 1};
  return std::nullopt;
}

std::string class_text(const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  std::vector<std::string> parts;
  for (const auto& [lo, hi] : ranges) parts.push_back(lo == hi ? std::to_string(lo) : fmt::format("{}…{}", lo, hi));
  return fmt::format("{{{}}}", fmt::join(parts, ","));
}

int class_of(const BatchClasses& classes, int64_t m) {
  for (size_t c = 0; c < classes.size(); ++c)
    for (const auto& [lo, hi] : classes[c])
      if (m >= lo && m <= hi) return static_cast<int>(c);
  return -1;
}

std::string rows_text(const GemmRows& rows, const std::map<std::string, SymbolInfo>& symbols) {
  std::vector<std::string> terms;
  if (rows.factor != 1 || rows.symbols.empty()) terms.push_back(std::to_string(rows.factor));
  for (const auto& s : rows.symbols) {
    const auto it = symbols.find(s);
    terms.push_back(it == symbols.end() || it->second.name.empty() ? s : it->second.name);
  }
  return fmt::format("M = {}", fmt::join(terms, " × "));
}

}  // namespace

std::optional<GemmRows> size_product(const nlohmann::json& size) {
  if (!size.is_object()) return std::nullopt;
  if (size.contains("as_int") && size["as_int"].is_number_integer()) {
    const int64_t v = size["as_int"].get<int64_t>();
    if (v < 0 || v > kMaxFactor) return std::nullopt;
    return GemmRows{v, {}};
  }
  if (size.contains("as_expr") && size["as_expr"].is_object() && size["as_expr"].contains("expr_str") &&
      size["as_expr"]["expr_str"].is_string())
    return product_of(size["as_expr"]["expr_str"].get<std::string>());
  return std::nullopt;
}

std::optional<GemmRows> gemm_rows(const std::string& op, const std::map<std::string, nlohmann::json>& args,
                                  const nlohmann::json& tensor_values) {
  const auto which = row_input(op);
  if (!which || !tensor_values.is_object()) return std::nullopt;
  const auto arg = args.find(which->first);
  if (arg == args.end() || !arg->second.is_object() || !arg->second.contains("as_tensor") ||
      !arg->second["as_tensor"].is_object() || !arg->second["as_tensor"].contains("name") ||
      !arg->second["as_tensor"]["name"].is_string())
    return std::nullopt;
  const auto t = tensor_values.find(arg->second["as_tensor"]["name"].get<std::string>());
  if (t == tensor_values.end() || !t->is_object() || !t->contains("sizes") || !(*t)["sizes"].is_array())
    return std::nullopt;
  const nlohmann::json& sizes = (*t)["sizes"];
  const int64_t n = static_cast<int64_t>(sizes.size());
  const int64_t rows = which->second < 0 ? n - 1 : std::min<int64_t>(which->second, n);
  if (n < 1 || rows < 1) return std::nullopt;
  GemmRows out;
  for (int64_t d = 0; d < rows; ++d) {
    const auto s = size_product(sizes[static_cast<size_t>(d)]);
    if (!s) return std::nullopt;
    out = times(out, *s);
  }
  return out;
}

BatchClasses parse_batch_classes(const std::string& note) {
  BatchClasses out;
  const size_t at = note.find("batch classes ");
  if (at == std::string::npos) return out;
  static const std::regex klass(R"(\{([^}]*)\})");
  static const std::regex range(R"(([0-9]+)(?:…([0-9]+))?)");
  const std::string text = note.substr(at);
  for (std::sregex_iterator it(text.begin(), text.end(), klass), end; it != end; ++it) {
    const std::string body = (*it)[1].str();
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (std::sregex_iterator r(body.begin(), body.end(), range), rend; r != rend; ++r) {
      const int64_t lo = std::stoll((*r)[1].str());
      const int64_t hi = (*r)[2].matched ? std::stoll((*r)[2].str()) : lo;
      if (hi >= lo) ranges.emplace_back(lo, hi);
    }
    if (!ranges.empty()) out.push_back(std::move(ranges));
  }
  return out;
}

RowsAssessment assess_rows(const std::optional<GemmRows>& rows, const std::map<std::string, SymbolInfo>& symbols,
                           const BatchClasses& classes) {
  if (!rows) return {Risk::Unknown, "M (the rows the GEMM multiplies) is not known from the graph's shapes"};
  const std::string m = rows_text(*rows, symbols);
  if (rows->symbols.empty())
    return {Risk::None, fmt::format("{}, fixed by the exported shapes: the batch size cannot change it", m)};
  if (classes.empty())
    return {Risk::Unknown, fmt::format("{}; no batch classes were measured for this op on this device type", m)};
  int64_t least = 1;
  for (const auto& s : rows->symbols) {
    const auto it = symbols.find(s);
    least *= std::max<int64_t>(it == symbols.end() ? 1 : it->second.least, 1);
  }
  int64_t top = 0;
  for (const auto& c : classes)
    for (const auto& r : c) top = std::max(top, r.second);
  const int64_t first = rows->factor * least;
  if (first > top)
    return {Risk::Unknown, fmt::format("{} ≥ {}: beyond the sizes the probes measured (up to {})", m, first, top)};
  const int start = class_of(classes, first);
  // The first multiple of the factor whose M falls in another measured class.
  for (int64_t p = least; rows->factor * p <= top; ++p) {
    const int c = class_of(classes, rows->factor * p);
    if (c >= 0 && c != start) {
      std::vector<std::string> all;
      for (const auto& k : classes) all.push_back(class_text(k));
      return {Risk::High, fmt::format("{}: M = {} and M = {} fall in different measured classes ({})", m, first,
                                      rows->factor * p, fmt::join(all, " | "))};
    }
  }
  if (start < 0)
    return {Risk::Unknown, fmt::format("{} ≥ {}: the smallest M was not measured by the probes", m, first)};
  return {Risk::Low, fmt::format("{} ≥ {}: every batch size puts M in the measured class {} (measured up to {})", m,
                                 first, class_text(classes[static_cast<size_t>(start)]), top)};
}

}  // namespace ra::lint
