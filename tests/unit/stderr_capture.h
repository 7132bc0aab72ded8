// SPDX-License-Identifier: Apache-2.0
// What this process writes on stderr while a StderrCapture lives (the log's records, the progress
// line's): file descriptor 2 goes to a file of the capture's and comes back when it ends, and the log
// keeps debug records for that time, so that a test reads what `-v` would show.
#pragma once

#include "audit/common/log.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace ra::test {

class StderrCapture {
 public:
  // `path`: the file that holds what is written (the caller's, in its temporary folder).
  explicit StderrCapture(std::string path) : path_(std::move(path)), level_(log::level()) {
    std::fflush(stderr);
    saved_ = ::dup(STDERR_FILENO);
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(saved_ >= 0);
    REQUIRE(fd >= 0);
    ::dup2(fd, STDERR_FILENO);
    ::close(fd);
    log::set_level(log::Level::Debug);
  }
  ~StderrCapture() {
    log::set_level(level_);
    std::fflush(stderr);
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  // The lines written so far.
  std::vector<std::string> lines() const {
    std::fflush(stderr);
    std::ifstream in(path_);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }

 private:
  std::string path_;
  log::Level level_;
  int saved_ = -1;
};

}  // namespace ra::test
