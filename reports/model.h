// SPDX-License-Identifier: Apache-2.0
// The report model: one data structure that every renderer (text, JSON, JUnit, Markdown, HTML)
// reads. It is filled by audit/ and depends on nothing but the standard library and
// nlohmann::json (for the opaque environment fingerprint).
//
// A report is a head that every audit fills (tool, command, environment, allowlist, baseline, shard,
// verdict, exit code, timing) and a body that is one closed alternative chosen by the audit's kind
// (`Body`): the targets of `run`, `exec` and `merge`, the probes of `probes`, the sweep of
// `invariance`, the checks of `selftest`. Every consumer (renderers, the JSON writer and reader,
// finalize, baseline, allowlist, merge) dispatches on it with one `std::visit` over an
// `overloaded` set, so a new kind is one more alternative and the compiler lists every place that
// must say what to do with it.
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
#include <variant>
#include <vector>

namespace ra::report {

inline constexpr int kSchemaVersion = 1;

// `run`, `exec`, and a merge of their shards: the targets audited (models, or exec's one command),
// each with its configurations.
struct TargetsBody {
  std::vector<Target> targets;
};

// `probes`: one target per probe (Target::probe set), and with --census the alerts cross-tabulated.
struct ProbesBody {
  std::vector<Target> targets;
  std::optional<Census> census;
};

// The body of a report, chosen by the audit's kind. `invariance` (reports/invariance_model.h) and
// `selftest` (reports/selftest_model.h) have no targets. A report starts as a TargetsBody (the
// skeleton plans targets for every kind); an audit whose result is another kind sets its own.
using Body = std::variant<TargetsBody, ProbesBody, Invariance, SelfTest>;

// The visitor for `std::visit`: one lambda per alternative, `[](const auto&)` only where every kind
// is truly treated alike.
template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
// Spelled out for clang before 17 (the fuzz build), which lacks C++20's deduction for aggregates.
template <class... F>
overloaded(F...) -> overloaded<F...>;

// The targets of a body that has them (run, exec, merge, probes), to fill or change; nullptr for
// invariance and selftest.
std::vector<Target>* target_list(Body& body);

struct Report {
  std::string tool_version;
  std::vector<std::string> command;  // argv, for replay
  nlohmann::ordered_json environment;
  Body body;
  std::vector<std::string> allowlist_expired;  // --allowlist: expired entries that matched, one sentence each
  std::vector<std::string> allowlist_notes;  // --allowlist: entries that did nothing, one sentence each (no exit code)
  std::optional<BaselineComparison> baseline;  // --baseline, compare
  std::optional<Tolerance> tolerance;          // --atol/--rtol as given (statistics count against it)
  bool tolerant = false;                       // --tolerant: a divergence within tolerance does not fail
  std::optional<AutoRepeats> auto_repeats;     // --repeats auto
  std::optional<ShardInfo> shard;              // --shard (absent from a merged report)
  std::optional<Fleet> fleet;                  // merge only
  Verdict verdict = Verdict::Reproducible;
  int exit_code = 0;
  double wall_ms = 0;      // timing
  std::string contention;  // timing: children that shared a GPU (audit/trial/placement.h), "" when none

  // The targets of a body that has them (run, exec, merge, probes); an empty list for invariance and
  // selftest, whose results are not targets. For what treats every target alike (loops, timing
  // lists, shard bookkeeping); what a kind means is decided by visiting `body`.
  const std::vector<Target>& targets() const;
  // The same, to fill or change; a report of a kind without targets has none to change (logic_error).
  std::vector<Target>& targets();
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

// Why the verdict is incomplete (exit 4), in one line, for stderr: the first configuration (or
// restart-replay, or invariance's negative control) that crashed, timed out or proved nothing, with
// its own reason ("model.pt, configuration det: repeat 0: ..."); "" when nothing in the report
// makes it incomplete. finish_report prints it, so that -q and --json still say why.
std::string incomplete_reason(const Report& report);

}  // namespace ra::report
