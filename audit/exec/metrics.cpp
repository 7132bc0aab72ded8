// SPDX-License-Identifier: Apache-2.0
#include "audit/exec/metrics.h"

#include "audit/common/errors.h"
#include "audit/digest/digest_kernel.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

// A pattern as a message shows it: at most 200 bytes.
std::string shown(const std::string& pattern) {
  return pattern.size() <= 200 ? pattern : pattern.substr(0, 200) + "...";
}

// The Perl or ECMAScript feature of `pattern` that RE2 does not implement, named for the user, or
// empty. Only asked once RE2 has refused the pattern, so its guesses never hide a valid one.
std::string unsupported_feature(const std::string& p) {
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '\\' && i + 1 < p.size()) {
      const char c = p[i + 1];
      if (c >= '1' && c <= '9') return fmt::format("a backreference (\\{})", c);
      if (c == 'k' || c == 'g') return fmt::format("a backreference (\\{})", c);
      ++i;
      continue;
    }
    if (p.compare(i, 3, "(?=") == 0) return "a lookahead ((?=...))";
    if (p.compare(i, 3, "(?!") == 0) return "a negative lookahead ((?!...))";
    if (p.compare(i, 4, "(?<=") == 0) return "a lookbehind ((?<=...))";
    if (p.compare(i, 4, "(?<!") == 0) return "a negative lookbehind ((?<!...))";
    if (p.compare(i, 3, "(?>") == 0) return "an atomic group ((?>...))";
    if (p.compare(i, 4, "(?P=") == 0) return "a backreference ((?P=name))";
    if (p.compare(i, 3, "(?(") == 0) return "a conditional ((?(...)...))";
    if (p.compare(i, 3, "(?R") == 0 || p.compare(i, 3, "(?&") == 0) return "recursion ((?R))";
    if (i > 0 && (p[i] == '+') && (p[i - 1] == '*' || p[i - 1] == '+' || p[i - 1] == '?' || p[i - 1] == '}'))
      return fmt::format("a possessive quantifier ({}+)", p[i - 1]);
  }
  return "";
}

// One line's first match of `re`: its first capture group, or the whole match.
std::optional<std::string> first_match(const re2::RE2& re, const std::string& line) {
  std::array<re2::StringPiece, 2> groups;
  const int n = re.NumberOfCapturingGroups() > 0 ? 2 : 1;
  if (!re.Match(line, 0, line.size(), re2::RE2::UNANCHORED, groups.data(), n)) return std::nullopt;
  const re2::StringPiece& v = groups[static_cast<size_t>(n - 1)];
  return v.data() == nullptr ? std::string() : std::string(v.data(), v.size());
}

// A line as a report shows it: after its last '\r' (a progress bar redrawn in place shows its last
// state), its first kShownLine bytes cut before a character that would cross them, then "…".
std::string shown_line(const std::string& line) {
  const size_t cr = line.rfind('\r');
  const std::string_view s = cr == std::string::npos ? std::string_view(line) : std::string_view(line).substr(cr + 1);
  if (s.size() <= kShownLine) return std::string(s);
  return std::string(s.substr(0, utf8_boundary(s, kShownLine))) + "…";
}

// Splits bytes fed in any chunks into lines, keeping at most kMaxMetricLine + 1 bytes of each
// (the one more tells a line of exactly kMaxMetricLine bytes and a '\r' from a longer one).
class LineScanner {
 public:
  explicit LineScanner(const std::vector<MetricSpec>& metrics) : metrics_(metrics) {
    for (const auto& m : metrics_) scan_.values[m.name], scan_.lines[m.name];
    line_.reserve(256);
  }

  void feed(const char* data, size_t size) {
    while (size > 0) {
      const void* nl = std::memchr(data, '\n', size);
      const size_t take = nl != nullptr ? static_cast<size_t>(static_cast<const char*>(nl) - data) : size;
      const size_t room = kMaxMetricLine + 1 - line_.size();
      line_.append(data, std::min(take, room));
      if (take > room) dropped_ = true;
      if (nl == nullptr) return;
      end_line();
      data += take + 1;
      size -= take + 1;
    }
  }

  MetricScan finish() {
    if (!line_.empty() || dropped_) end_line();
    return std::move(scan_);
  }

 private:
  void end_line() {
    ++lines_;
    if (!dropped_ && !line_.empty() && line_.back() == '\r') line_.pop_back();
    if (dropped_ || line_.size() > kMaxMetricLine) {
      line_.resize(kMaxMetricLine);
      if (scan_.lines_cut++ == 0) scan_.first_cut_line = lines_;
    }
    for (const auto& m : metrics_)
      if (auto v = first_match(*m.re, line_)) {
        scan_.values[m.name].push_back(std::move(*v));
        scan_.lines[m.name].push_back(shown_line(line_));
      }
    line_.clear();
    dropped_ = false;
  }

  const std::vector<MetricSpec>& metrics_;
  MetricScan scan_;
  std::string line_;
  bool dropped_ = false;  // bytes of this line beyond line_ were skipped
  size_t lines_ = 0;
};

constexpr size_t kMetricsChunk = size_t{64} << 10;

}  // namespace

MetricSpec parse_metric(const std::string& arg) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError(fmt::format("--metric '{}' is not NAME=REGEX (for example loss='loss=([0-9.e+-]+)')", shown(arg)));
  MetricSpec m;
  m.name = arg.substr(0, eq);
  m.regex = arg.substr(eq + 1);
  for (const char c : m.name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-')
      throw UsageError(
          fmt::format("--metric name '{}' may hold letters, digits, '_', '.' and '-' only", shown(m.name)));
  if (m.regex.empty()) throw UsageError(fmt::format("--metric {} has an empty regex", m.name));
  re2::RE2::Options options;
  options.set_encoding(re2::RE2::Options::EncodingLatin1);  // bytes, whatever the program prints
  options.set_log_errors(false);
  auto re = std::make_shared<const re2::RE2>(m.regex, options);
  if (!re->ok()) {
    const std::string feature = unsupported_feature(m.regex);
    if (!feature.empty())
      throw UsageError(
          fmt::format("--metric {}: the regex '{}' uses {}, which --metric's regex engine (RE2) does not support",
                      m.name, shown(m.regex), feature));
    throw UsageError(
        fmt::format("--metric {}: the regex '{}' does not compile ({})", m.name, shown(m.regex), re->error()));
  }
  m.re = std::move(re);
  return m;
}

MetricScan extract_metrics(const std::vector<MetricSpec>& metrics, std::istream& in) {
  LineScanner scanner(metrics);
  std::vector<char> chunk(kMetricsChunk);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    scanner.feed(chunk.data(), static_cast<size_t>(in.gcount()));
  }
  return scanner.finish();
}

MetricScan extract_metrics(const std::vector<MetricSpec>& metrics, const std::string& stdout_text) {
  LineScanner scanner(metrics);
  scanner.feed(stdout_text.data(), stdout_text.size());
  return scanner.finish();
}

MetricScan extract_metrics_file(const std::vector<MetricSpec>& metrics, const std::string& path) {
  LineScanner scanner(metrics);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    MetricScan scan = scanner.finish();
    scan.unread = fd < 0 ? fmt::format("stdout ({}) could not be opened: {}", path, std::strerror(errno))
                         : fmt::format("stdout ({}) is no longer a regular file: not read", path);
    if (fd >= 0) ::close(fd);
    return scan;
  }
  std::vector<char> chunk(kMetricsChunk);
  for (;;) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    scanner.feed(chunk.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return scanner.finish();
}

std::string cut_lines_note(const MetricScan& scan) {
  if (scan.lines_cut == 0) return "";
  return fmt::format(
      "{} stdout line{} longer than {} KiB (the first: line {}): --metric matched only the first {} bytes of each",
      scan.lines_cut, scan.lines_cut == 1 ? " was" : "s were", kMaxMetricLine >> 10, scan.first_cut_line,
      kMaxMetricLine);
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
  return {kMetricPrefix + name,
          "metric",
          {n},
          digest_kernel::finish(lanes, "uint8", {static_cast<int64_t>(joined.size())})};
}

report::DivergenceStats metric_difference(const std::vector<std::string>& a, const std::vector<std::string>& b,
                                          const std::vector<std::string>& lines_a,
                                          const std::vector<std::string>& lines_b) {
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
    if ((*x > 0) == (*y > 0) && *x != 0 && *y != 0)
      s.max_ulp = std::max(s.max_ulp, ulp_distance(*x, *y));
    else
      ++s.sign_differs;
  }
  if (!numeric) s.max_abs_diff = s.max_rel_diff = s.max_ulp = nan;
  s.first_index_nd = {s.first_index};
  s.beyond_tolerance = s.differing;
  if (s.first_index >= 0) {
    const auto i = static_cast<size_t>(s.first_index);
    const auto side = [i](const std::vector<std::string>& v) { return i < v.size() ? v[i] : std::string("(absent)"); };
    const std::string line = i < lines_a.size() ? lines_a[i] : i < lines_b.size() ? lines_b[i] : "";
    s.note = fmt::format("first differs at occurrence {} of {}{}: {} vs {}", i + 1, std::max(a.size(), b.size()),
                         line.empty() ? "" : fmt::format(" (\"{}\")", line), side(a), side(b));
    if (a.size() != b.size()) s.note += fmt::format(" ({} occurrences vs {})", a.size(), b.size());
  }
  return s;
}

}  // namespace ra::exec
