// SPDX-License-Identifier: Apache-2.0
#include "audit/exec/metrics.h"

#include "audit/common/errors.h"
#include "audit/digest/digest_kernel.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>

namespace ra::exec {
namespace {

std::optional<double> as_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

// Representable doubles between a and b (both finite, same sign).
double ulp_distance(double a, double b) {
  int64_t ia = 0, ib = 0;
  std::memcpy(&ia, &a, sizeof a);
  std::memcpy(&ib, &b, sizeof b);
  return static_cast<double>(ia > ib ? ia - ib : ib - ia);
}

}  // namespace

MetricSpec parse_metric(const std::string& arg) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError(fmt::format("--metric '{}' is not NAME=REGEX (for example loss='loss=([0-9.e+-]+)')", arg));
  MetricSpec m;
  m.name = arg.substr(0, eq);
  m.regex = arg.substr(eq + 1);
  for (const char c : m.name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-')
      throw UsageError(fmt::format("--metric name '{}' may hold letters, digits, '_', '.' and '-' only", m.name));
  if (m.regex.empty()) throw UsageError(fmt::format("--metric {} has an empty regex", m.name));
  try {
    m.re = std::regex(m.regex, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw UsageError(fmt::format("--metric {}: the regex '{}' does not compile ({})", m.name, m.regex, e.what()));
  }
  return m;
}

std::map<std::string, std::vector<std::string>> extract_metrics(const std::vector<MetricSpec>& metrics,
                                                                 const std::string& stdout_text) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& m : metrics) out[m.name];
  std::istringstream in(stdout_text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    for (const auto& m : metrics) {
      std::smatch match;
      if (!std::regex_search(line, match, m.re)) continue;
      out[m.name].push_back(match.size() > 1 ? match[1].str() : match[0].str());
    }
  }
  return out;
}

report::TensorDigest metric_entry(const std::string& name, const std::vector<std::string>& values) {
  std::string joined;
  for (const auto& v : values) {
    joined += v;
    joined += '\n';
  }
  digest_kernel::Lanes lanes;
  lanes += digest_kernel::words8(reinterpret_cast<const uint8_t*>(joined.data()), joined.size(), 0);
  const auto n = static_cast<int64_t>(values.size());
  return {kMetricPrefix + name, "metric", {n}, digest_kernel::finish(lanes, "uint8", {static_cast<int64_t>(joined.size())})};
}

report::DivergenceStats metric_difference(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  report::DivergenceStats s;
  s.numel = static_cast<int64_t>(std::max(a.size(), b.size()));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  bool numeric = false;
  s.max_ulp = 0;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const bool both = i < a.size() && i < b.size();
    if (both && a[i] == b[i]) continue;
    ++s.differing;
    if (s.first_index < 0) s.first_index = static_cast<int64_t>(i);
    if (!both) continue;
    const auto x = as_number(a[i]), y = as_number(b[i]);
    if (!x || !y || !std::isfinite(*x) || !std::isfinite(*y)) continue;
    numeric = true;
    const double d = std::fabs(*x - *y);
    s.max_abs_diff = std::max(s.max_abs_diff, d);
    const double m = std::max(std::fabs(*x), std::fabs(*y));
    if (m > 0) s.max_rel_diff = std::max(s.max_rel_diff, d / m);
    if ((*x > 0) == (*y > 0) && *x != 0 && *y != 0) s.max_ulp = std::max(s.max_ulp, ulp_distance(*x, *y));
    else ++s.sign_differs;
  }
  if (!numeric) s.max_abs_diff = s.max_rel_diff = s.max_ulp = nan;
  s.first_index_nd = {s.first_index};
  s.beyond_tolerance = s.differing;
  if (s.first_index >= 0) {
    const auto i = static_cast<size_t>(s.first_index);
    const auto side = [i](const std::vector<std::string>& v) { return i < v.size() ? v[i] : std::string("(absent)"); };
    s.note = fmt::format("first differs at step {}: {} vs {}", i + 1, side(a), side(b));
    if (a.size() != b.size()) s.note += fmt::format(" ({} occurrences vs {})", a.size(), b.size());
  }
  return s;
}

}  // namespace ra::exec
