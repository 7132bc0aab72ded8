// SPDX-License-Identifier: Apache-2.0
#include "audit/paths.h"

#include <cstdlib>
#include <filesystem>

namespace ra {

namespace fs = std::filesystem;

std::string self_executable() {
  std::error_code ec;
  const auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("repro-audit") : p.string();
}

std::string share_dir() {
  if (const char* env = std::getenv("REPRO_AUDIT_SHARE"); env && *env) return env;
  std::error_code ec;
  const fs::path installed = fs::path(self_executable()).parent_path().parent_path() / "share" / "repro-audit";
  if (fs::is_directory(installed, ec)) return installed.string();
  return RA_SOURCE_SHARE_DIR;
}

std::string tool_version() { return RA_VERSION; }

}  // namespace ra
