// SPDX-License-Identifier: Apache-2.0
// Options and checks both executables register alike: the front for every audit, the worker for
// the commands it runs for the user (lint, diff: audit/cmdline/worker_options.h).
#pragma once

#include "reports/core_model.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace ra::cmdline {

// --atol, --rtol and --tolerant (run, probes, diff): the informative tolerance verdict
// (report::Tolerance). Either of --atol and --rtol alone leaves the other 0.
struct ToleranceArgs {
  std::optional<double> atol;
  std::optional<double> rtol;
  bool tolerant = false;
};
void add_tolerance_options(CLI::App& sub, ToleranceArgs& a);
// The tolerance given, or nullopt (each dtype's default, report::default_tolerance).
std::optional<report::Tolerance> tolerance_option(const ToleranceArgs& a);

// Registers --allowlist FILE on `sub`, storing into `path`.
void add_allowlist_option(CLI::App& sub, std::string& path);

// Throws UsageError unless the folder of `path` exists and is writable (checked before any work,
// so that a report is never lost after a long audit).
void check_writable_target(const std::string& path);

// Validators whose messages say in words what an option takes (CLI11's own ones print the range as
// "0.000000 to 1.797...e308" and let "-1" wrap around to 2^64-1 for an unsigned option):
// an integer in [min, max]; a finite number of seconds in (0, max]; a positive finite number.
inline constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600;  // a week
CLI::Validator integer_in(uint64_t min, uint64_t max);
CLI::Validator seconds_up_to(double max);
CLI::Validator positive_real();
CLI::Validator non_negative_real();
// A rate written as a fraction ("0.2") or a percentage ("20%"): its value, or -1 when it is
// neither; and the validator of one in (0, 1).
double parse_rate(const std::string& text);
CLI::Validator rate_fraction();

}  // namespace ra::cmdline
