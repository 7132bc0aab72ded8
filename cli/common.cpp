// SPDX-License-Identifier: Apache-2.0
#include "cli/common.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/common/json_document.h"
#include "audit/common/log.h"
#include "audit/common/owned_folder.h"
#include "audit/common/stop.h"
#include "audit/trial/config.h"
#include "reports/baseline_file.h"
#include "reports/json_read.h"
#include "reports/render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include <sys/stat.h>
#include <unistd.h>

namespace ra::cli {

void add_audit_options(CLI::App& sub, AuditArgs& a, const AuditHelp& help) {
  sub.add_option("--device", a.device, "cpu, cuda or cuda:N")->capture_default_str();
  sub.add_option("--repeats", a.repeats,
                 "fresh-process runs per configuration, or 'auto': 3, then more in rounds until each configuration "
                 "is decided (a divergence, a failure, or a divergence rate bounded below --detect-rate)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            if (text == "auto" || integer_in(1, 1000000)(text).empty()) return "";
            return fmt::format("expected a count from 1 to 1000000 or 'auto', got '{}'", text);
          },
          "INT|auto"))
      ->capture_default_str();
  sub.add_option("--max-repeats", a.max_repeats, "with --repeats auto: the most runs per configuration (default 20)")
      ->check(integer_in(3, 1000000));
  sub.add_option("--detect-rate", a.detect_rate,
                 "with --repeats auto: a configuration without divergence is decided once a divergence rate above this "
                 "would have shown with 95% confidence (a fraction or a percentage; default 20%)")
      ->check(rate_fraction());
  sub.add_option(
         "--configs", a.configs,
         "configurations: presets (default, benchmark, cudnn-det, det-warn, det, strict, threads-1, threads-N, "
         "mkl-cbwr; exec also eager, compiled-det) or key=value lists joined by '+' (e.g. det+threads=1); default: " +
             help.default_configs)
      ->delimiter(',');
  add_output_options(sub, a.out,
                     {.junit = "one test case per target x configuration",
                      .markdown = "e.g. $GITHUB_STEP_SUMMARY",
                      .html = "opens from disk, fetches nothing"});
  sub.add_option("--jobs,-j", a.jobs, "child processes run at once (at most the number of CPUs)")
      ->check(integer_in(1, 4096))
      ->capture_default_str();
  sub.add_option("--timeout", a.timeout, help.timeout)->check(seconds_up_to(kMaxTimeoutSeconds))->capture_default_str();
  // Options that would do nothing are not offered: exec runs the user's command as it is, so
  // it has no generator to seed and no process to load a library into. They stay registered,
  // hidden (no --help line, no completion), so that a user who gives one is told why.
  CLI::Option* seed = sub.add_option("--seed", a.seed, "seed of every generator and of synthetic inputs (0 to 2^64-1)")
                          ->check(integer_in(0, UINT64_MAX))
                          ->capture_default_str();
  CLI::Option* library = sub.add_option("--load-library", a.libraries, help.library);
  if (help.library.empty()) {
    seed->group("");
    library->group("");
  }
  add_allowlist_option(sub, a.allowlist);
  add_tolerance_options(sub, a.tolerance);
  sub.add_option("--baseline", a.baseline,
                 "compare with a baseline (--save-baseline) or a JSON report of the same target: new bits in an "
                 "unchanged environment are a regression (exit 1); environment changes (torch, CUDA, cuDNN, cuBLAS, "
                 "driver, GPU, CPU, flags) are listed and explain a difference only on devices they can affect");
  add_fail_on_explained_option(sub, a.fail_on_explained);
  sub.add_option("--devices", a.devices,
                 "spread the children over these GPUs (cuda:0,cuda:2), one child per GPU at a time (--jobs J above "
                 "their number: up to J/G each), each cell's repeats on one GPU (--device cuda with --jobs J uses the "
                 "first J GPUs, and one GPU takes all J)");
  sub.add_option("--shard", a.shard,
                 "run only shard K of N of the plan (K from 1), for `repro-audit merge`; without it, Slurm array, "
                 "Kubernetes Indexed Job, Bazel, GitLab and Buildkite variables name the shard. Needs --report");
  sub.add_option("--shards", a.shards,
                 "the number of shards of a Kubernetes Indexed Job (its completions), which "
                 "gives only JOB_COMPLETION_INDEX")
      ->check(integer_in(1, fleet::kMaxShards));
  sub.add_option("--save-baseline", a.out.save_baseline,
                 "write a baseline here (atomically): every configuration's digests with the environment fingerprint, "
                 "for a later --baseline or compare");
}

void add_fail_on_explained_option(CLI::App& sub, bool& flag) {
  sub.add_flag("--fail-on-explained", flag,
               "with a baseline: a result explained by an environment change fails too (exit 1), for release gates "
               "that must not change bits even with a new torch, CUDA or driver");
}

void add_output_options(CLI::App& sub, ReportOutputs& out, const OutputHelp& help) {
  const auto detail = [](const std::string& note) { return note.empty() ? "" : "; " + note; };
  sub.add_option("--report", out.report, fmt::format("write {} here (atomically)", help.what));
  sub.add_option("--junit", out.junit, fmt::format("write a JUnit XML report here (atomically{})", detail(help.junit)));
  sub.add_option("--markdown", out.markdown,
                 fmt::format("write a Markdown summary here (atomically{})", detail(help.markdown)));
  sub.add_option("--html", out.html,
                 fmt::format("write a self-contained HTML report here (atomically{})", detail(help.html)));
  sub.add_flag("--json", out.json, fmt::format("print {} on stdout instead of the summary", help.what));
}

std::optional<fleet::ShardOptions> shard_option(const AuditArgs& a) {
  std::optional<fleet::ShardRequest> request;
  if (!a.shard.empty()) {
    if (a.shards) throw UsageError("--shards N goes with a Kubernetes Indexed Job; with --shard K/N it is not needed");
    request = fleet::parse_shard(a.shard);
  } else {
    request = fleet::shard_from_environment([](const char* name) { return std::getenv(name); }, a.shards);
  }
  if (!request) return std::nullopt;
  // One shard of one is the whole plan: it needs no merge, so no --report either (and --shard 1/1
  // runs every cell inside a scheduler's array whose tasks run different audits).
  if (a.out.report.empty() && request->count == 1) return std::nullopt;
  if (a.out.report.empty()) {
    std::string read;
    for (const auto& [k, v] : request->variables) read += fmt::format("{}{}={}", read.empty() ? "" : " ", k, v);
    throw UsageError(
        request->source == "--shard"
            ? fmt::format("--shard {}/{} needs --report FILE: merge joins the shards' reports", request->index,
                          request->count)
            : fmt::format("{} ({}) makes this shard {}/{}, which needs --report FILE for merge; to run every "
                          "cell here instead, pass --shard 1/1",
                          request->source, read, request->index, request->count));
  }
  fleet::acknowledge(*request);
  // Where the shard keeps its tensors: checked before any work (audit/common/owned_folder.h).
  check_owned_folder(fleet::tensors_folder(a.out.report), "the shard's reference tensors");
  return fleet::ShardOptions{*request, a.out.report};
}

report::Report read_report(const std::string& path) {
  const std::string text = read_file(path, "report");
  nlohmann::ordered_json j;
  try {
    j = parse_json_document<nlohmann::ordered_json>(text, path);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number too large
    std::string what = e.what();                  // "[json.exception.parse_error.101] parse error at line 1, ..."
    if (const auto end = what.find("] "); what.rfind("[json.exception", 0) == 0 && end != std::string::npos)
      what = what.substr(end + 2);
    throw InputError(fmt::format("{} is not valid JSON: {}", path, what));
  }
  try {
    return report::report_from_json(j);
  } catch (const report::ReportError& e) {
    throw InputError(fmt::format("{}: {}", path, e.what()));
  }
}

void load_allowlist_option(const std::string& path, ReportJudges& judges) {
  if (path.empty()) return;
  judges.allowlist = load_allowlist(path);
  judges.today = today_date();
}

void check_outputs(const ReportOutputs& out) {
  for (const std::string* path : {&out.report, &out.junit, &out.markdown, &out.html, &out.save_baseline})
    if (!path->empty()) check_writable_target(*path);
}

void fill_session(SessionOptions& o, const AuditArgs& a, const GlobalOptions& global,
                  const std::vector<std::string>& defaults) {
  if (a.repeats == "auto") {
    report::AutoRepeats rule;
    if (a.max_repeats) rule.max = *a.max_repeats;
    if (a.detect_rate) rule.rate = parse_rate(*a.detect_rate);
    o.auto_repeats = rule;
    o.repeats = rule.min;
  } else if (a.max_repeats || a.detect_rate) {
    throw UsageError(fmt::format("{} applies to --repeats auto", a.max_repeats ? "--max-repeats" : "--detect-rate"));
  } else {
    o.repeats = std::stoi(a.repeats);  // checked by the option's validator
  }
  o.configs = parse_configs(a.configs.empty() ? defaults : a.configs, logical_cpu_count());
  // More children than CPUs only make each one slower and its timings noisier.
  const int cpus = static_cast<int>(std::max(1u, logical_cpu_count()));
  o.jobs = std::min(a.jobs, cpus);
  if (a.jobs > cpus) log::warn("--jobs {} is more than this machine's {} CPUs: running {} at once", a.jobs, cpus, cpus);
  o.timeout_s = a.timeout;
  o.seed = a.seed;
  if (!a.devices.empty()) {
    o.devices = parse_devices(a.devices);
    if (o.device != Device{Device::Kind::Cuda, -1})
      throw UsageError(
          fmt::format("--devices places trials on GPUs: it goes with --device cuda, not --device {}", a.device));
  }
  o.load_libraries = a.libraries;
  if (a.fail_on_explained && a.baseline.empty())
    throw UsageError("--fail-on-explained applies to a comparison: add --baseline FILE");
  o.tolerance = tolerance_option(a.tolerance);
  o.tolerant = a.tolerance.tolerant;
  // The date override is checked whenever it is set, not only when an allowlist reads it.
  if (const char* today = std::getenv("REPRO_AUDIT_TODAY"); today != nullptr && *today != '\0') (void)today_date();
  o.command = global.argv;
  // The progress line rewrites itself with '\r' and ESC[K: only where both streams are a terminal
  // (stdout piped into a file or a CI log would interleave with it), and never with --quiet.
  o.progress = !global.quiet && isatty(STDOUT_FILENO) && isatty(STDERR_FILENO);
  check_outputs(a.out);
}

void add_referee_option(CLI::App& sub, std::string& mode) {
  sub.add_option("--referee", mode,
                 "where the float64 referee runs: the model once more in float64, against which every result's "
                 "error is measured and every difference classed (reordering, uninitialized, beyond-reordering); "
                 "cpu (deterministic, one thread), device (the audited device), or off")
      ->check(CLI::IsMember({"cpu", "device", "off"}))
      ->capture_default_str();
}

void add_baseline_tensors_option(CLI::App& sub, ReportOutputs& out) {
  sub.add_flag("--baseline-tensors", out.baseline_tensors,
               "with --save-baseline FILE: keep each configuration's reference tensors in FILE.tensors/ too, so that "
               "a later --baseline or compare says how far each changed tensor moved (max abs, ULP)");
}

void keep_tensors_option(const ReportOutputs& out, const ReportJudges& judges, SessionOptions& session) {
  if (out.baseline_tensors && out.save_baseline.empty())
    throw UsageError("--baseline-tensors keeps tensors beside a baseline: add --save-baseline FILE");
  if (out.baseline_tensors) check_owned_folder(out.save_baseline + ".tensors", "the baseline's reference tensors");
  // The reference tensors outlive the audit (and this folder the report's finish) when a baseline
  // is saved with them, or when the baseline compared with kept its own.
  if (out.baseline_tensors || (judges.baseline && has_kept_tensors(judges.baseline->results)))
    session.keep_tensors = std::make_shared<const ScratchDir>();
}

ReportJudges load_judges(const AuditArgs& a, SessionOptions& session) {
  ReportJudges judges;
  load_allowlist_option(a.allowlist, judges);
  judges.fail_on_explained = a.fail_on_explained;
  judges.timeout_s = a.timeout;
  if (a.baseline.empty()) return judges;
  auto base = std::make_shared<const Baseline>(load_baseline(a.baseline));
  session.check_targets = [base](const report::Body& body, const std::vector<std::string>& configs) {
    check_baseline_targets(*base, body, configs);
  };
  judges.baseline = *base;
  return judges;
}

}  // namespace ra::cli
