// SPDX-License-Identifier: Apache-2.0
// Option checks shared by the subcommands.
#pragma once

#include "audit/baseline/allowlist.h"
#include "audit/baseline/baseline.h"
#include "audit/cmdline/shared_options.h"
#include "audit/fleet/shard_run.h"
#include "audit/skeleton/report_finish.h"
#include "audit/trial/trials.h"
#include "cli/command_table.h"
#include "reports/model.h"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ra::cli {

// Options and validators the worker registers too (audit/cmdline/shared_options.h).
using cmdline::add_allowlist_option;
using cmdline::add_tolerance_options;
using cmdline::check_writable_target;
using cmdline::integer_in;
using cmdline::kMaxTimeoutSeconds;
using cmdline::non_negative_real;
using cmdline::parse_rate;
using cmdline::positive_real;
using cmdline::rate_fraction;
using cmdline::seconds_up_to;
using cmdline::tolerance_option;
using cmdline::ToleranceArgs;

// The options `run` and `probes` share.
struct AuditArgs {
  std::string device = "cpu";
  std::string repeats = "3";               // a count, or "auto"
  std::optional<int> max_repeats;          // --max-repeats (with --repeats auto)
  std::optional<std::string> detect_rate;  // --detect-rate (with --repeats auto): "0.2" or "20%"
  std::vector<std::string> configs;
  ReportOutputs out;  // --report, --junit, --markdown, --html, --save-baseline, --json
  int jobs = 1;
  double timeout = 600;
  uint64_t seed = 0;
  std::vector<std::string> libraries;
  std::string allowlist;           // --allowlist FILE
  std::string baseline;            // --baseline FILE
  bool fail_on_explained = false;  // --fail-on-explained (with --baseline)
  ToleranceArgs tolerance;
  std::string shard;          // --shard K/N
  std::optional<int> shards;  // --shards N (a Kubernetes Indexed Job's completions)
  std::string devices;        // --devices cuda:0,cuda:2
};

struct AuditHelp {
  std::string default_configs;  // "default,threads-1 on CPU, default,det on CUDA"
  std::string timeout;          // what --timeout limits
  std::string library;          // what --load-library is for; "" for a command that runs no model
                                // (exec): --seed and --load-library are then hidden, and given, refused
};

// Registers --device, --repeats, --configs, --report, --junit, --markdown, --html, --json, --jobs, --timeout, --seed,
// --load-library, --allowlist, --baseline, --save-baseline, --atol, --rtol and --tolerant on `sub`, storing into `a`.
void add_audit_options(CLI::App& sub, AuditArgs& a, const AuditHelp& help);

// Fills the shared options from the arguments: repeats, configurations (`defaults` when --configs
// is not given), jobs, timeout, seed, libraries, argv and progress; checks --devices against the
// device (parsed by the caller with Device::parse, at the edge, into `o.device`) and the --report,
// --junit, --markdown, --html and --save-baseline folders. Throws UsageError.
void fill_session(SessionOptions& o, const AuditArgs& a, const GlobalOptions& global,
                  const std::vector<std::string>& defaults);

// The shard this process runs (--shard K/N, or the scheduler's variables: audit/fleet/shard.h),
// nullopt when the audit is not sharded. Throws UsageError for a bad or inconsistent request, and
// when there is no --report to write the shard's result to; touches Bazel's status file.
std::optional<fleet::ShardOptions> shard_option(const AuditArgs& a);

// A saved JSON report; InputError (one line) for a file that is unreadable, not JSON, or not a
// report this version reads.
report::Report read_report(const std::string& path);

// --allowlist, read before any work into `judges`: the list (none without the option) and today's
// date. Throws InputError for a bad file, UsageError for a bad REPRO_AUDIT_TODAY.
void load_allowlist_option(const std::string& path, ReportJudges& judges);
// Registers --fail-on-explained on `sub`, storing into `flag`.
void add_fail_on_explained_option(CLI::App& sub, bool& flag);

// What the output options say in --help beyond their defaults (each "" for none): what the JSON
// is ("B's JSON report with the comparison"; default "the JSON report"), what a JUnit test case is,
// and a note on Markdown and HTML.
struct OutputHelp {
  std::string what = "the JSON report";
  std::string junit = "";     // "one test case per check"
  std::string markdown = "";  // "e.g. $GITHUB_STEP_SUMMARY"
  std::string html = "";      // "opens from disk, fetches nothing"
};
// Registers the report files every command that writes a report offers, one place for all: --report,
// --junit, --markdown, --html and --json, storing into `out` (a new format adds its option here).
void add_output_options(CLI::App& sub, ReportOutputs& out, const OutputHelp& help = {});

// What judges an audit's report (audit/skeleton/report_finish.h), read and checked before any
// work: --allowlist, --fail-on-explained and --baseline (InputError for a file that is missing, not
// JSON, or not a baseline or report this version reads). With a baseline, the session's
// check_targets is set to check, after the preflight and before any trial, that the baseline was
// made from the same targets (audit/baseline/baseline.h).
ReportJudges load_judges(const AuditArgs& a, SessionOptions& session);

// --referee cpu|device|off on `sub`, storing into `mode` (run and invariance): where the float64
// referee runs (audit/trial/referee.h, audit/invariance/invariance_referee.h).
void add_referee_option(CLI::App& sub, std::string& mode);

// --baseline-tensors, on the commands whose kinds keep reference tensors (run, probes).
void add_baseline_tensors_option(CLI::App& sub, ReportOutputs& out);
// Checks --baseline-tensors (UsageError without --save-baseline) and gives the session a folder
// that keeps the reference tensors past the audit when they are saved or a baseline kept its own.
void keep_tensors_option(const ReportOutputs& out, const ReportJudges& judges, SessionOptions& session);

// Throws UsageError unless the folder of each output file asked for is writable
// (check_writable_target).
void check_outputs(const ReportOutputs& out);

}  // namespace ra::cli
