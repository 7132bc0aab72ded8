// SPDX-License-Identifier: Apache-2.0
// What every harness shares. A harness feeds its input to a parser as the tool would, and lets
// through only what the tool turns into one line and an exit code (ra::Error: usage or input);
// any other exception, a crash, a leak or a sanitizer report is a finding.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include <unistd.h>

namespace ra::fuzz {

inline std::string text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// The input as a file, for the readers that take a path (one file per process, rewritten each run).
inline std::string as_file(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/ra-fuzz-input-" + std::to_string(::getpid());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return path;
  if (size > 0) std::fwrite(data, 1, size, f);
  std::fclose(f);
  return path;
}

}  // namespace ra::fuzz
