// SPDX-License-Identifier: Apache-2.0
// The skeleton every audit runs on: plan -> shard -> run cells -> analyse -> finish.
//
// An audit kind (`run`, `probes`, `exec`, `selftest`, and the ones to come) differs from the others
// in what it plans, what a trial is and what it concludes; it does not differ in how a plan is cut
// into shards, what an empty shard writes, or how a report is closed, judged and written. So a kind
// is a class that fills in three parts, and `run_kind` owns the order and everything between them:
//
//   plan()           checks the inputs, runs the preflight, and names every target of the plan in
//                    the kind's own body (reports/model.h: RunBody, ExecBody, ProbesBody; identity
//                    and the kind's facts set, no results), the environment, and the plan's
//                    identity for --shard (fleet::session_plan plus what of the kind changes a
//                    result). A kind without targets gives its own alternative and its rows.
//   run(cells)       runs the trials of the cells this process owns: per target, the configurations
//                    (indices into SessionOptions::configs). Unsharded, that is every cell.
//   analyse(cells, report)
//                    turns the trials into results: fills the targets of the report's body (the
//                    plan's, in plan order) whose cells ran here, or sets the body of a kind
//                    without targets (Invariance, SelfTest).
// Two optional parts: summarise(report), called on the final list of targets in every case, an
// empty shard included (the probe census's cross-tabulation), and shard_census(), what a shard
// keeps for merge beyond the results.
//
// What the skeleton does: calls plan(); hands the targets to SessionOptions::check_targets (the
// --baseline check, before any trial); cuts the plan into this shard's cells (audit/fleet/shard_run.h);
// in an empty shard (fewer cells than shards) skips run and analyse; otherwise calls them. Then the
// one report tail: drops the targets with no cell here, sets the tool version, the command, the
// tolerance and the --repeats auto rule, records the shard (with kept reference files), finalizes
// the verdicts and the exit code, and times the whole. The caller then hands the report to the
// finish (audit/skeleton/report_finish.h): the allowlist, the baseline, the changed ops, every
// format, the exit code, the same for every kind.
//
// How to add an audit kind (for example batch invariance, or `run --calls K` warm-up checks):
//   1. Give it an options struct deriving from SessionOptions (audit/trial/trials.h), plus
//      std::optional<fleet::ShardOptions> when it can be sharded.
//   2. Write a class deriving from AuditKind, holding the options, the scratch folder and what the
//      parts hand each other (the preflight's result, the trials' runs). Keep each part short: a
//      part that grows past a screen has a named step inside it.
//   3. Its entry point is one line: `Kind kind(options); return run_kind(kind, options, options.shard);`.
//   4. In cli/, one cmd_<name>.cpp parses the device (Device::parse, audit/common/device.h), fills
//      the options (fill_session, shard_option, load_judges) and ends with
//      finish_report(report, args.out, judges).
//   5. Its report is an alternative of report::Body (reports/model.h) of its own, with a row of
//      kKinds; the compiler then lists every consumer that must say what to do with it
//      (docs/ARCHITECTURE.md, "An audit kind"). Results go in each target's configs, one per
//      configuration that ran.
// A kind never sets tool_version, command, tolerance, shard or wall time, never calls finalize, and
// never writes a file: if a kind needs something the skeleton does not offer, change the skeleton
// rather than copy a driver.
#pragma once

#include "audit/fleet/shard_run.h"
#include "audit/trial/trials.h"
#include "reports/model.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ra {

// The cells this process runs.
struct Cells {
  std::vector<std::vector<size_t>> configs;  // per target of the plan: its configurations run here
  fleet::ShardPlan* shard = nullptr;         // the shard this process is (keep() its shared cells), or null
  bool empty() const;                        // no cell of any target
};

// What a kind's plan gives the skeleton.
struct AuditPlan {
  nlohmann::ordered_json environment;  // the preflight's fingerprint (null where analyse sets it)
  // The kind's body, with every target of the plan named and identified, no results; a kind without
  // targets gives its own (empty) alternative.
  report::Body body;
  // A kind without targets: the rows of its cells (invariance's size chunks), each as many cells as
  // configurations. A kind with targets has one row per target.
  size_t rows = 0;
  nlohmann::ordered_json identity;  // what names the plan for --shard (audit/fleet/shard.h)
  size_t row_count() const { return rows + report::common_targets(body).size(); }
};

class AuditKind {
 public:
  virtual ~AuditKind() = default;
  virtual AuditPlan plan() = 0;
  virtual void run(const Cells& cells) = 0;
  virtual void analyse(const Cells& cells, report::Report& report) = 0;
  virtual void summarise(report::Report& report) { (void)report; }
  virtual std::vector<report::CensusRecord> shard_census() { return {}; }
};

// Runs `kind` through the skeleton and returns the finished report (see above). `shard` is the
// --shard request (nullopt: every cell here).
report::Report run_kind(AuditKind& kind, const SessionOptions& session,
                        const std::optional<fleet::ShardOptions>& shard);

}  // namespace ra
