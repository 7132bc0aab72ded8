// SPDX-License-Identifier: Apache-2.0
#include "audit/common/paths.h"

#include "audit/common/errors.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

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

}  // namespace ra
