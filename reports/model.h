// SPDX-License-Identifier: Apache-2.0
// The report model: one data structure that every renderer (text, JSON, JUnit, Markdown, HTML)
// reads. It is filled by audit/ and depends on nothing but the standard library and
// nlohmann::json (for the opaque environment fingerprint).
//
// The model is split by concern, and this header keeps only the `Report` that joins them (and what
// is computed over a whole report): core_model.h (verdicts, digests, statistics, trials),
// trace_model.h, probe_model.h, replay_model.h, exec_model.h, target_model.h (a target and its
// configurations), baseline_model.h, fleet_model.h and selftest_model.h. Each concern's JSON writer
// and reader sit side by side in the file beside its header (trace_json.cpp, ...; json_parts.h),
// so a new field touches one header and that file; json.cpp writes and reads the `Report` itself.
// What is computed over a concern's structs sits in <concern>_model.cpp (model.cpp: the report's).
// Include the concern headers you need rather than this one.
//
// Determinism of the tool's own output: every list here is kept in a defined order (targets as
// given, configurations as given, tensors in execution order, trials by repeat index), and
// everything that depends on wall-clock time lives in `Timing` sections that renderers keep apart.
#pragma once

#include "reports/baseline_model.h"
#include "reports/core_model.h"
#include "reports/fleet_model.h"
#include "reports/invariance_model.h"
#include "reports/probe_model.h"
#include "reports/selftest_model.h"
#include "reports/target_model.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ra::report {

inline constexpr int kSchemaVersion = 1;

struct Report {
  std::string tool_version;
  std::vector<std::string> command;  // argv, for replay
  nlohmann::ordered_json environment;
  std::vector<Target> targets;
  std::optional<Census> census;                // `probes` only
  std::vector<std::string> allowlist_expired;  // --allowlist: expired entries that matched, one sentence each
  std::vector<std::string> allowlist_notes;  // --allowlist: entries that did nothing, one sentence each (no exit code)
  std::optional<BaselineComparison> baseline;  // --baseline, compare
  std::optional<SelfTest> selftest;            // `selftest` only; such a report has no targets
  std::optional<Tolerance> tolerance;          // --atol/--rtol as given (statistics count against it)
  bool tolerant = false;                       // --tolerant: a divergence within tolerance does not fail
  std::optional<AutoRepeats> auto_repeats;     // --repeats auto
  std::optional<ShardInfo> shard;              // --shard (absent from a merged report)
  std::optional<Fleet> fleet;                  // merge only
  std::optional<Invariance> invariance;        // `invariance` only (reports/invariance_model.h); no targets
  Verdict verdict = Verdict::Reproducible;
  int exit_code = 0;
  double wall_ms = 0;      // timing
  std::string contention;  // timing: children that shared a GPU (audit/trial/placement.h), "" when none
};

// True when a baseline result fails the exit code: a regression, a nondeterministic result
// whose configuration --allowlist did not allow in this report, or (--fail-on-explained) an
// explained one.
bool baseline_failure(const Report& report, const BaselineResult& result);

// The verdict as the renderers print it: to_string(verdict), except that findings the exit code
// accepted are not hidden behind "reproducible": "diverged (allowed: known scatter in the loss)",
// "raised (allowed: ...)", "diverged (within tolerance, --tolerant)". For a target or a report.
std::string verdict_text(const Target& target);
std::string verdict_text(const Report& report);

// Overall verdict and exit code from the targets (precedence: diverged/raised > crashed/timeout >
// reproducible; skipped does not fail). A configuration with `allowed_by` counts as reproducible;
// an expired allowlist entry (`allowlist_expired`) makes the exit code 1. A target's restart-replay counts too: diverged as diverged,
// crashed as crashed; inconclusive does not change the verdict. A baseline result that
// `baseline_failure` counts makes the exit code 1 (the verdict stays what the targets say). A
// self-test's failed check makes the exit code 1. With `tolerant`, a diverged configuration
// within tolerance counts as reproducible for the exit code (its verdict stays diverged).
void finalize(Report& report);

}  // namespace ra::report
