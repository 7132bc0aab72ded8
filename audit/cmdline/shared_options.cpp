// SPDX-License-Identifier: Apache-2.0
#include "audit/cmdline/shared_options.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <sys/stat.h>
#include <unistd.h>

namespace ra::cmdline {

void check_writable_target(const std::string& path) {
  // What the report will really be written to (audit/common/files.h): a device, FIFO or our own
  // stdout is written through, so its folder need not be writable; a symlink's target's folder must.
  const OutputTarget target = output_target(path);
  if (target.kind == OutputTarget::Kind::Through) {
    if (target.path.rfind("/proc/", 0) != 0 && target.path.rfind("/dev/fd/", 0) != 0 && target.path != "/dev/stdout" &&
        target.path != "/dev/stderr" && ::access(target.path.c_str(), W_OK) != 0)
      throw UsageError(fmt::format("cannot write report '{}': {}", path, std::strerror(errno)));
    return;
  }
  const auto dir = std::filesystem::absolute(target.path).parent_path();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    // Created as `mkdir -p` would, one level at a time (not std::filesystem::create_directories:
    // the worker, which checks `diff --report`, links libtorch, whose copy of <filesystem> is not
    // to be trusted).
    std::string prefix;
    for (const auto& part : dir) {
      prefix = prefix.empty() || prefix == "/" ? prefix + part.string() : prefix + "/" + part.string();
      if (prefix == "/" || std::filesystem::is_directory(prefix, ec)) continue;
      if (::mkdir(prefix.c_str(), 0777) == 0) continue;
      const int err = errno;
      if (err == EEXIST && std::filesystem::is_directory(prefix, ec)) continue;  // made meanwhile
      throw UsageError(
          fmt::format("cannot write report '{}': cannot create folder '{}' ({})", path, prefix, std::strerror(err)));
    }
  }
  if (::access(dir.c_str(), W_OK) != 0)
    throw UsageError(fmt::format("cannot write report '{}': folder '{}' is not writable", path, dir.string()));
}

CLI::Validator integer_in(uint64_t min, uint64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        const bool digits = !text.empty() && text.size() <= 20 &&
                            std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
        errno = 0;
        const unsigned long long v = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
        if (digits && errno == 0 && v >= min && v <= max) return "";
        return fmt::format("expected an integer from {} to {}, got '{}'", min, max, text);
      },
      fmt::format("INT in [{}, {}]", min, max));
}

CLI::Validator seconds_up_to(double max) {
  return CLI::Validator(
      [max](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (!text.empty() && end != nullptr && *end == '\0' && std::isfinite(v) && v > 0 && v <= max) return "";
        return fmt::format("expected a number of seconds above 0 and at most {}, got '{}'", max, text);
      },
      fmt::format("SECONDS in (0, {}]", max));
}

CLI::Validator positive_real() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (!text.empty() && end != nullptr && *end == '\0' && std::isfinite(v) && v > 0) return "";
        return fmt::format("expected a positive number, got '{}'", text);
      },
      "POSITIVE");
}

double parse_rate(const std::string& text) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::string number = percent ? text.substr(0, text.size() - 1) : text;
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  if (number.empty() || end == nullptr || *end != '\0' || !std::isfinite(v)) return -1;
  return percent ? v / 100 : v;
}

CLI::Validator rate_fraction() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const double v = parse_rate(text);
        if (v > 0 && v < 1) return "";
        return fmt::format("expected a rate above 0 and below 1 (0.2 or 20%), got '{}'", text);
      },
      "RATE in (0, 1)");
}

CLI::Validator non_negative_real() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (!text.empty() && end != nullptr && *end == '\0' && std::isfinite(v) && v >= 0) return "";
        return fmt::format("expected a number of at least 0, got '{}'", text);
      },
      "NUMBER >= 0");
}

void add_tolerance_options(CLI::App& sub, ToleranceArgs& a) {
  sub.add_option("--atol", a.atol,
                 "absolute tolerance of the informative per-tensor verdict: an element is within tolerance when "
                 "|a - b| <= atol + rtol * |a| (default: torch.testing.assert_close's for the dtype)")
      ->check(non_negative_real());
  sub.add_option("--rtol", a.rtol, "relative tolerance of that verdict (see --atol)")->check(non_negative_real());
  sub.add_flag("--tolerant", a.tolerant,
               "exit 0 for differences that stay within tolerance (the bitwise verdict is still reported)");
}

std::optional<report::Tolerance> tolerance_option(const ToleranceArgs& a) {
  if (!a.atol && !a.rtol) return std::nullopt;
  return report::Tolerance{a.atol.value_or(0.0), a.rtol.value_or(0.0)};
}

void add_allowlist_option(CLI::App& sub, std::string& path) {
  sub.add_option("--allowlist", path,
                 "JSON file of accepted nondeterminism (op or target, reason, optional expiry and config); allowed "
                 "findings do not fail the exit code, expired entries that match do");
}

}  // namespace ra::cmdline
