// SPDX-License-Identifier: Apache-2.0
#include "cli/common.h"

#include "audit/trial/config.h"
#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "reports/baseline.h"
#include "reports/render.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include <unistd.h>

namespace ra::cli {

std::string device_type(const std::string& device) {
  if (device == "cpu") return "cpu";
  if (device == "cuda") return "cuda";
  if (device.rfind("cuda:", 0) == 0) {
    const std::string index = device.substr(5);
    if (!index.empty() && index.size() <= 4 && index.find_first_not_of("0123456789") == std::string::npos) return "cuda";
  }
  throw UsageError(fmt::format("unknown device '{}' (use cpu, cuda or cuda:N)", device));
}

void check_writable_target(const std::string& path) {
  const auto dir = std::filesystem::absolute(path).parent_path();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw UsageError(fmt::format("cannot write report '{}': folder '{}' does not exist", path, dir.string()));
  if (::access(dir.c_str(), W_OK) != 0)
    throw UsageError(fmt::format("cannot write report '{}': folder '{}' is not writable", path, dir.string()));
}

void add_audit_options(CLI::App& sub, AuditArgs& a, const AuditHelp& help) {
  sub.add_option("--device", a.device, "cpu, cuda or cuda:N")->capture_default_str();
  sub.add_option("--repeats", a.repeats, "fresh-process runs per configuration")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub.add_option("--configs", a.configs,
                 "configurations: presets (default, benchmark, cudnn-det, det-warn, det, strict, threads-1, threads-N, "
                 "mkl-cbwr) or key=value lists joined by '+' (e.g. det+threads=1); default: " + help.default_configs)
      ->delimiter(',');
  sub.add_option("--report", a.report, "write the JSON report here (atomically)");
  sub.add_option("--junit", a.junit, "write a JUnit XML report here (atomically; one test case per target x configuration)");
  sub.add_option("--markdown", a.markdown, "write a Markdown summary here (atomically; e.g. $GITHUB_STEP_SUMMARY)");
  sub.add_option("--html", a.html, "write a self-contained HTML report here (atomically; opens from disk, fetches nothing)");
  sub.add_flag("--json", a.json, "print the JSON report on stdout instead of the summary");
  sub.add_option("--jobs,-j", a.jobs, "child processes run at once")->check(CLI::PositiveNumber)->capture_default_str();
  sub.add_option("--timeout", a.timeout, help.timeout)->check(CLI::PositiveNumber)->capture_default_str();
  sub.add_option("--seed", a.seed, "seed of every generator and of synthetic inputs")->capture_default_str();
  sub.add_option("--load-library", a.libraries, help.library);
  add_allowlist_option(sub, a.allowlist);
  sub.add_option("--baseline", a.baseline,
                 "compare with a baseline (--save-baseline) or a JSON report of the same target: new bits in an "
                 "unchanged environment are a regression (exit 1); environment changes (torch, CUDA, cuDNN, cuBLAS, "
                 "driver, GPU, CPU, flags) are listed and explain a difference only on devices they can affect");
  sub.add_option("--save-baseline", a.save_baseline,
                 "write a baseline here (atomically): every configuration's digests with the environment fingerprint, "
                 "for a later --baseline or compare");
}

void add_allowlist_option(CLI::App& sub, std::string& path) {
  sub.add_option("--allowlist", path,
                 "JSON file of accepted nondeterminism (op or target, reason, optional expiry and config); allowed "
                 "findings do not fail the exit code, expired entries that match do");
}

AllowlistOption load_allowlist_option(const std::string& path) {
  AllowlistOption o;
  if (path.empty()) return o;
  o.list = load_allowlist(path);
  o.today = today_date();
  return o;
}

void fill_session(SessionOptions& o, const AuditArgs& a, const GlobalOptions& global,
                  const std::vector<std::string>& defaults) {
  o.device = a.device;
  o.repeats = a.repeats;
  o.configs = parse_configs(a.configs.empty() ? defaults : a.configs, logical_cpu_count());
  o.jobs = a.jobs;
  o.timeout_s = a.timeout;
  o.seed = a.seed;
  o.load_libraries = a.libraries;
  o.command = global.argv;
  o.progress = !global.quiet && isatty(STDERR_FILENO);
  for (const std::string* path : {&a.report, &a.junit, &a.markdown, &a.html, &a.save_baseline})
    if (!path->empty()) check_writable_target(*path);
}

std::optional<Baseline> load_baseline_option(const std::string& path, SessionOptions& session) {
  if (path.empty()) return std::nullopt;
  auto base = std::make_shared<const Baseline>(load_baseline(path));
  session.check_targets = [base](const std::vector<report::Target>& targets, const std::vector<std::string>& configs) {
    check_baseline_targets(*base, targets, configs);
  };
  return *base;
}

int emit_report(report::Report rep, const AuditArgs& a, const AllowlistOption& allow,
                const std::optional<Baseline>& baseline) {
  if (allow.list) apply_allowlist(rep, *allow.list, allow.today);
  if (baseline) apply_baseline(rep, *baseline);
  if (!a.report.empty()) write_file_atomic(a.report, report::render_json(rep));
  if (!a.junit.empty()) write_file_atomic(a.junit, report::render_junit(rep));
  if (!a.markdown.empty()) write_file_atomic(a.markdown, report::render_markdown(rep));
  if (!a.html.empty()) write_file_atomic(a.html, report::render_html(rep));
  if (!a.save_baseline.empty()) write_file_atomic(a.save_baseline, report::render_baseline(rep));
  const std::string out = a.json ? report::render_json(rep) : report::render_text(rep);
  std::fputs(out.c_str(), stdout);
  return rep.exit_code;
}

}  // namespace ra::cli
