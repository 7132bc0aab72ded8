// SPDX-License-Identifier: Apache-2.0
// A folder of the unit tests' own under TMPDIR (or /tmp), removed with everything in it when the
// test ends. nftw and remove, not std::filesystem::remove_all: libtorch.so exports its own copy,
// which crashes when a test binary's call binds to it.
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ra::test {

struct TempFolder {
  std::string path;
  explicit TempFolder(const std::string& prefix = "ra-unit") {
    const char* base = std::getenv("TMPDIR");
    path = std::string(base && *base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
    REQUIRE(::mkdtemp(path.data()) != nullptr);
  }
  ~TempFolder() {
    ::nftw(
        path.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p) == 0 ? 0 : 0; }, 16,
        FTW_DEPTH | FTW_PHYS);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  std::string file(const std::string& name) const { return path + "/" + name; }
  // Writes `bytes` to the file `name` in the folder and returns its path.
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(file(name), std::ios::binary) << bytes;
    return file(name);
  }
};

}  // namespace ra::test
