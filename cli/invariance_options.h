// SPDX-License-Identifier: Apache-2.0
// `invariance`'s options shared with the other audits: --allowlist, on the same code path as
// run's (load_allowlist_option).
#pragma once

#include "cli/common.h"

#include <optional>
#include <string>
#include <vector>

namespace ra::cli {

void add_invariance_fleet_options(CLI::App& sub, AuditArgs& a);

// Reads --allowlist before any work. Throws InputError or UsageError.
ReportJudges invariance_judges(const AuditArgs& a, const std::string& device, int rows, const std::string& filler,
                               const std::vector<std::string>& configs);

}  // namespace ra::cli
