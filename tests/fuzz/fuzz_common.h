// SPDX-License-Identifier: Apache-2.0
// What every harness shares. A harness feeds its input to a parser as the tool would, and lets
// through only what the tool turns into one line and an exit code (ra::Error: usage or input);
// any other exception, a crash, a leak or a sanitizer report is a finding.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <unistd.h>

namespace ra::fuzz {

inline std::string text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A path for this process's scratch file or folder `name` in TMPDIR (./dev fuzz gives each harness
// its own), else /tmp: "<TMPDIR>/ra-fuzz-<name>-<pid>".
inline std::string scratch_path(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/ra-fuzz-" + name + "-" + std::to_string(::getpid());
}

// The input as a file, for the readers that take a path (one file per process, rewritten each run).
inline std::string as_file(const uint8_t* data, size_t size) {
  static const std::string path = scratch_path("input");
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return path;
  if (size > 0) std::fwrite(data, 1, size, f);
  std::fclose(f);
  return path;
}

}  // namespace ra::fuzz
