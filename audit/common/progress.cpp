// SPDX-License-Identifier: Apache-2.0
#include "audit/common/progress.h"

#include "audit/common/log.h"
#include "reports/escape.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

namespace ra {

std::string eta_text(double s) {
  if (!(s > 0.5)) return "";
  const long total = std::lround(s);
  if (total < 60) return fmt::format("ETA {} s", total);
  return fmt::format("ETA {} min {} s", total / 60, total % 60);
}

void Progress::done(const std::string& what) {
  ++done_;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double left = done_ < total_ ? elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_) : 0;
  const std::string eta = eta_text(left);
  // `what` names a target or a cell: one line, no control characters (reports/escape.h).
  const std::string line =
      fmt::format("[{}/{}] {}{}{}", done_, total_, report::escape::text_line(what), eta.empty() ? "" : ", ", eta);
  if (terminal_)
    std::fprintf(stderr, "\r%s\033[K%s", line.c_str(), done_ >= total_ ? "\n" : "");
  else
    log::debug("{}", line);
}

}  // namespace ra
