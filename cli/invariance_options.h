// SPDX-License-Identifier: Apache-2.0
// `invariance`'s options shared with the other audits: --save-baseline, --baseline,
// --fail-on-explained, --allowlist and --shard/--shards, on the same code paths as run's
// (load_allowlist_option, load_baseline, shard_option; audit/baseline/invariance_baseline.h).
#pragma once

#include "cli/common.h"

#include <optional>
#include <string>
#include <vector>

namespace ra::cli {

void add_invariance_fleet_options(CLI::App& sub, AuditArgs& a);

// Reads --allowlist and --baseline before any work and checks the baseline against what is known
// before the sweep (device, anchor rows, filler, configurations). Throws InputError or UsageError.
ReportJudges invariance_judges(const AuditArgs& a, const Device& device, int rows, const std::string& filler,
                               const std::string& axis, const std::vector<std::string>& configs);

}  // namespace ra::cli
