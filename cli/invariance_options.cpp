// SPDX-License-Identifier: Apache-2.0
#include "cli/invariance_options.h"

namespace ra::cli {

void add_invariance_fleet_options(CLI::App& sub, AuditArgs& a) {
  add_allowlist_option(sub, a.allowlist);
}

ReportJudges invariance_judges(const AuditArgs& a, const std::string& device, int rows, const std::string& filler,
                               const std::vector<std::string>& configs) {
  ReportJudges judges;
  load_allowlist_option(a.allowlist, judges);
  (void)device, (void)rows, (void)filler, (void)configs;  // for --baseline
  return judges;
}

}  // namespace ra::cli
