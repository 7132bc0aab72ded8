// SPDX-License-Identifier: Apache-2.0
#include "audit/common/torch_release.h"

#include "audit/common/errors.h"
#include "audit/common/json_document.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <vector>

namespace ra {
namespace fs = std::filesystem;

namespace {

constexpr const char* kTestBound = "REPRO_AUDIT_TEST_TORCH_NEWEST_TESTED";

// (major, minor) of "2.16.0+cu130", nullopt when it does not start with two numbers.
std::optional<std::pair<int, int>> minor_of(const std::string& version) {
  static const std::regex release(R"(^(\d{1,4})\.(\d{1,4})(\.\d+)*([+.-].*)?$)");
  std::smatch m;
  if (!std::regex_match(version, m, release)) return std::nullopt;
  return std::pair{std::stoi(m[1].str()), std::stoi(m[2].str())};
}

// "2.15" of "2.15.0".
std::string minor_text(const std::string& version) {
  const auto m = minor_of(version);
  return m ? fmt::format("{}.{}", m->first, m->second) : version;
}

// FNV-1a: a short, stable name for a worker build (its path, size and modification time).
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (const unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// What the first use's selftest found, from its report: "all 6 checks passed", "2 of 6 checks failed:
// detection, tracing", "did not finish", or "not run yet" without a report.
std::string first_use_result(const std::string& report) {
  std::error_code ec;
  if (report.empty() || !fs::is_regular_file(report, ec)) return "not run yet";
  std::ifstream in(report);
  std::stringstream text;
  text << in.rdbuf();
  try {
    const auto doc = parse_json_document<nlohmann::json>(text.str(), report);
    const auto& checks = doc.at("selftest").at("checks");
    std::vector<std::string> failed;
    for (const auto& c : checks)
      if (!c.at("passed").get<bool>()) failed.push_back(c.at("name").get<std::string>());
    if (failed.empty()) return fmt::format("all {} checks passed", checks.size());
    return fmt::format("{} of {} checks failed: {}", failed.size(), checks.size(), fmt::join(failed, ", "));
  } catch (const std::exception&) {
    return "did not finish";
  }
}

}  // namespace

std::string built_torch() { return RA_TORCH_BUILT; }

std::string newest_tested_torch() {
  const char* test = std::getenv(kTestBound);
  if (!test || !*test) return RA_TORCH_NEWEST_TESTED;
  if (!minor_of(test)) throw UsageError(fmt::format("{}='{}': name a torch release, e.g. 2.10.0", kTestBound, test));
  return test;
}

bool untested_torch(const std::string& version) {
  const auto v = minor_of(version), newest = minor_of(newest_tested_torch());
  return v && newest && *v > *newest;
}

std::string first_use_report(const std::string& version, const std::string& worker) {
  fs::path cache;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && fs::path(xdg).is_absolute())
    cache = xdg;
  else if (const char* home = std::getenv("HOME"); home && fs::path(home).is_absolute())
    cache = fs::path(home) / ".cache";
  else
    return "";
  std::error_code ec;
  const fs::path exe = fs::weakly_canonical(worker, ec);
  const auto size = fs::file_size(exe, ec);
  const auto time = fs::last_write_time(exe, ec).time_since_epoch().count();
  const uint64_t build = fnv1a(fmt::format("{}\n{}\n{}", exe.string(), size, time));
  return (cache / "repro-audit" / "first-use" / fmt::format("torch-{}-{:016x}.json", version, build)).string();
}

std::string untested_torch_line(const std::string& version, const std::string& worker) {
  if (!untested_torch(version)) return "";
  const std::string newest = newest_tested_torch();
  const char* test = std::getenv(kTestBound);
  const std::string report = first_use_report(version, worker);
  std::string result = first_use_result(report);
  if (result != "not run yet") result += fmt::format(" (report: {})", report);
  if (report.empty()) result = "not run (no cache folder: set XDG_CACHE_HOME or HOME)";
  return fmt::format(
      "torch {} is newer than {}, the newest release repro-audit is tested with{}; selftest at its "
      "first use here: {}",
      version, minor_text(newest), test && *test ? fmt::format(" ({}={})", kTestBound, test) : "", result);
}

}  // namespace ra
