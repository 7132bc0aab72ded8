// SPDX-License-Identifier: Apache-2.0
// Which repro-audit the GPU tests drive. A GPU machine gets the binaries without their build
// folder (bench/gpu_check.sh carries an install tree), so the path compiled in (RA_BINARY) is only
// the last resort: REPRO_AUDIT_BINARY first, then a repro-audit beside this test or in ../bin
// (an install tree's layout). Resolved before the test looks for a GPU, so that a wrong
// REPRO_AUDIT_BINARY is an error (exit 2) on any machine rather than a silent skip.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

namespace ra::gpu_test {

inline bool executable(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// The binary to test, or exits 2 with one line on stderr when none is found.
inline std::string repro_audit_binary() {
  if (const char* env = std::getenv("REPRO_AUDIT_BINARY"); env != nullptr && *env != '\0') {
    if (executable(env)) return env;
    std::fprintf(stderr, "REPRO_AUDIT_BINARY=%s is not an executable file\n", env);
    std::exit(2);
  }
  std::error_code ec;
  const auto here = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  for (const auto& p : {here / "repro-audit", here.parent_path() / "bin" / "repro-audit"})
    if (!ec && executable(p)) return p.string();
#if defined(RA_BINARY)
  if (executable(RA_BINARY)) return RA_BINARY;
#endif
  std::fprintf(stderr, "no repro-audit found: set REPRO_AUDIT_BINARY\n");
  std::exit(2);
}

}  // namespace ra::gpu_test
