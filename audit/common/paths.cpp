// SPDX-License-Identifier: Apache-2.0
#include "audit/common/paths.h"

#include "audit/common/errors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace ra {

namespace fs = std::filesystem;

std::string self_executable() {
  std::error_code ec;
  const auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("repro-audit") : p.string();
}

std::string worker_executable() {
  if (const char* env = std::getenv("REPRO_AUDIT_WORKER"); env && *env) {
    if (::access(env, X_OK) == 0) return env;
    throw InputError(fmt::format("REPRO_AUDIT_WORKER='{}' is not an executable file", env));
  }
  const fs::path dir = fs::path(self_executable()).parent_path();
  const fs::path candidates[] = {dir / "repro-audit-worker",
                                 dir.parent_path() / "libexec" / "repro-audit" / "repro-audit-worker"};
  for (const auto& c : candidates)
    if (::access(c.c_str(), X_OK) == 0) return c.string();
  throw InputError(
      fmt::format("the worker executable repro-audit-worker is missing (looked in {} and {}); "
                  "reinstall repro-audit or set REPRO_AUDIT_WORKER",
                  candidates[0].parent_path().string(), candidates[1].parent_path().string()));
}

std::string share_dir() {
  if (const char* env = std::getenv("REPRO_AUDIT_SHARE"); env && *env) return env;
  std::error_code ec;
  fs::path prefix = fs::path(self_executable()).parent_path().parent_path();  // bin/.. or libexec/repro-audit/..
  for (int up = 0; up < 2; ++up, prefix = prefix.parent_path()) {
    const fs::path installed = prefix / "share" / "repro-audit";
    if (fs::is_directory(installed, ec)) return installed.string();
  }
  return RA_SOURCE_SHARE_DIR;
}

std::string tool_version() { return RA_VERSION; }

std::string working_directory() {
  std::error_code ec;
  const fs::path p = fs::current_path(ec);
  return ec ? std::string() : p.string();
}

std::string traced_source(const std::string& source) {
  // "PATH:LINE: PATH(LINE): FUNCTION"
  const size_t colon = source.find(':');
  if (colon == std::string::npos) return source;
  const std::string path = source.substr(0, colon);
  const size_t code = source.find(": ", colon + 1);
  if (code == std::string::npos || source.compare(code + 2, path.size() + 1, path + "(") != 0) return source;
  const size_t close = source.find("): ", code + 2 + path.size());
  if (close == std::string::npos) return source;
  const std::string where = source.substr(0, code), function = source.substr(close + 3);
  char* end = nullptr;
  const long line = std::strtol(source.c_str() + colon + 1, &end, 10);
  std::ifstream in(path);
  std::string text;
  for (long i = 0; in && i < line && i < 1000000; ++i) std::getline(in, text);
  const size_t b = text.find_first_not_of(" \t\r"), e = text.find_last_not_of(" \t\r");
  if (in && line > 0 && b != std::string::npos) return where + ": " + text.substr(b, e - b + 1);
  return where + " (in " + function + ")";
}

std::string shown_path(const std::string& path, const std::string& cwd) {
  for (const char* packages : {"/site-packages/", "/dist-packages/"})
    if (const size_t at = path.rfind(packages); at != std::string::npos)
      return path.substr(at + std::char_traits<char>::length(packages));
  if (!cwd.empty() && cwd != "/" && path.size() > cwd.size() + 1 && path.compare(0, cwd.size(), cwd) == 0 &&
      path[cwd.size()] == '/')
    return path.substr(cwd.size() + 1);
  return path;
}

std::string shown_source(const std::string& source, const std::string& cwd) {
  // PATH ends at the first ":<digits>" followed by ':', ' ' or the end.
  size_t colon = 0;
  for (size_t i = source.find(':'); i != std::string::npos; i = source.find(':', i + 1)) {
    size_t j = i + 1;
    while (j < source.size() && source[j] >= '0' && source[j] <= '9') ++j;
    if (j > i + 1 && (j == source.size() || source[j] == ':' || source[j] == ' ')) {
      colon = i;
      break;
    }
  }
  if (colon == 0) return source;
  std::string out = shown_path(source.substr(0, colon), cwd);
  const size_t code = source.find(": ", colon + 1);
  if (code == std::string::npos || code + 2 + kShownCode >= source.size()) return out + source.substr(colon);
  const size_t end = std::max(code + 2, utf8_boundary(source, code + 2 + kShownCode));  // not inside a character
  return out + source.substr(colon, end - colon) + "…";
}

}  // namespace ra
