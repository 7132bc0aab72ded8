// SPDX-License-Identifier: Apache-2.0
// Progress of a batch of children on stderr: "[3/12] det repeat 1: 612 ms, ETA 6 s". On a terminal
// the line rewrites itself; otherwise (or with --quiet) it goes to the debug log only.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace ra {

class Progress {
 public:
  Progress(size_t total, bool terminal)
      : total_(total), terminal_(terminal), start_(std::chrono::steady_clock::now()) {}
  // One more of `total` finished; `what` describes it. The ETA extrapolates the mean time per
  // finished item (children run side by side, so this is wall time, not CPU time).
  void done(const std::string& what);
  void add(size_t more) { total_ += more; }  // work found on the way (a retry after a crash)
  size_t finished() const { return done_; }

 private:
  size_t total_;
  size_t done_ = 0;
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
};

// "ETA 6 s", "ETA 2 min 10 s"; "" when nothing remains.
std::string eta_text(double seconds_left);

}  // namespace ra
