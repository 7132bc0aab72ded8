// SPDX-License-Identifier: Apache-2.0
// A self-test's one-line summary (reports/selftest_model.h).
#include "reports/selftest_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ra::report {

std::string selftest_summary(const SelfTest& self) {
  std::vector<std::string> failed;
  for (const auto& c : self.checks)
    if (!c.passed) failed.push_back(c.name);
  if (failed.empty()) return fmt::format("all {} checks passed", self.checks.size());
  return fmt::format("{} of {} checks failed: {}", failed.size(), self.checks.size(), fmt::join(failed, ", "));
}

}  // namespace ra::report
