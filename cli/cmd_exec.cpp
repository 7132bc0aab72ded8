// SPDX-License-Identifier: Apache-2.0
// `repro-audit exec [options] -- COMMAND [ARGS...]`: audit any command by its artifacts and printed
// metrics (audit/exec/exec_audit.h).
#include "audit/common/errors.h"
#include "audit/exec/exec_audit.h"
#include "cli/command_table.h"
#include "cli/common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include <sys/stat.h>

namespace ra::cli {
namespace {

struct ExecArgs : AuditArgs {
  std::vector<std::string> command;
  std::vector<std::string> artifacts;
  std::vector<std::string> artifact_roots;
  std::vector<std::string> metrics;
  bool ranks_equal = false;
  bool no_fix_search = false;
  std::string fix_search = "auto";  // --fix-search: auto | always | off
  int timed_runs = 5;
};

bool same_folder(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// Each --artifact placed below the working directory or an --artifact-root (audit/exec/artifacts.h):
// a root and the working directory are matched as given and as their real paths.
void place_artifacts(exec::ExecOptions& o, const ExecArgs& a) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string cwd = fs::current_path(ec).lexically_normal().string();
  std::vector<std::string> cwd_aliases;
  if (const char* pwd = std::getenv("PWD"); pwd != nullptr && *pwd == '/' && same_folder(pwd, "."))
    cwd_aliases.emplace_back(pwd);
  std::vector<std::vector<std::string>> root_aliases;
  for (const auto& r : a.artifact_roots) {
    if (r.empty()) throw UsageError("--artifact-root needs a folder");
    const std::string given = (r[0] == '/' ? fs::path(r) : fs::path(cwd) / r).lexically_normal().string();
    o.artifact_roots.push_back(given);
    std::vector<std::string> aliases;
    if (const fs::path real = fs::canonical(given, ec); !ec) aliases.push_back(real.string());
    root_aliases.push_back(aliases);
  }
  for (const auto& p : a.artifacts) {
    exec::ArtifactPattern pattern = exec::parse_artifact_pattern(p);
    exec::place_artifact_pattern(pattern, cwd, o.artifact_roots, cwd_aliases, root_aliases);
    o.artifacts.push_back(std::move(pattern));
  }
}

int execute(const ExecArgs& a, const GlobalOptions& global) {
  // Without --, the command's own options would be read as exec's.
  if (!global.dashdash || !a.command.empty())
    throw UsageError("exec needs -- before the command: repro-audit exec [options] -- COMMAND [ARGS...]");
  if (global.after_dashdash.empty())
    throw UsageError("exec needs a command after --: repro-audit exec [options] -- COMMAND [ARGS...]");
  exec::ExecOptions o;
  o.argv = global.after_dashdash;
  place_artifacts(o, a);
  for (const auto& m : a.metrics) o.metrics.push_back(exec::parse_metric(m));
  o.ranks_equal = a.ranks_equal;
  if (a.ranks_equal && std::none_of(o.artifacts.begin(), o.artifacts.end(), [](const auto& p) { return p.rank; }))
    throw UsageError(
        "--ranks-equal compares each rank's artifacts: name them with {rank} in an --artifact (out/model-{rank}.pt)");
  o.fix_search = !a.no_fix_search && a.fix_search != "off";
  o.fix_search_always = a.fix_search == "always";
  o.timed_runs = a.timed_runs;
  o.device = Device::parse(a.device);
  fill_session(o, a, global, {"default"});
  if (o.jobs > 1)
    for (const auto& p : o.artifacts)
      if (!p.trial && !p.out)
        throw UsageError(
            fmt::format("--jobs {} runs the command side by side: --artifact '{}' needs {{trial}} in its path, or "
                        "{{out}}/ (the run's own $REPRO_AUDIT_OUT), so that runs do not overwrite each other",
                        o.jobs, p.text));
  o.shard = shard_option(a);
  const ReportJudges judges = load_judges(a, o);
  return finish_report(exec::run_exec(o), a.out, judges);
}

}  // namespace

Action attach_exec(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<ExecArgs>();
  // The command after -- is taken out of argv before parsing (GlobalOptions::after_dashdash); this
  // catches one given without --, to say so.
  sub.add_option("command", a->command, "COMMAND [ARGS...], after --");
  sub.add_option(
      "--artifact", a->artifacts,
      "a file the command writes, compared after every run (repeatable; glob wildcards; {out} = $REPRO_AUDIT_OUT, "
      "{trial} = the run's number, {rank} = a torchrun rank); without it, every file written into $REPRO_AUDIT_OUT. "
      "Taken only below the working directory, {out} or an --artifact-root; symlinks are compared, never followed");
  sub.add_option("--artifact-root", a->artifact_roots,
                 "also take --artifact files below this folder (absolute patterns, or ones with '..', that lead there; "
                 "repeatable). Artifacts are moved out of it after each run")
      ->type_name("DIR");
  sub.add_option(
      "--metric", a->metrics,
      "NAME=REGEX: a value printed on stdout, compared exactly per occurrence (the first capture group, else the "
      "match; repeatable)");
  sub.add_flag("--ranks-equal", a->ranks_equal,
               "also require each run's {rank} artifacts to be bitwise equal across ranks (data-parallel replicas)");
  sub.add_flag("--no-fix-search", a->no_fix_search,
               "do not search the switches that fix a diverged configuration (--fix-search off)");
  CLI::Option* fix_mode =
      sub.add_option(
             "--fix-search", a->fix_search,
             "search the switches that fix a diverged configuration: auto (unless a missing seeding line explains it, "
             "which is said first), always, or off")
          ->check(CLI::IsMember({"auto", "always", "off"}))
          ->capture_default_str();
  // At least 5, as in run: the fix search times in rounds (report::kTimingRounds), and the spread of
  // the per-round ratios is a 94% interval of the median cost only with 5 of them.
  CLI::Option* timed = sub.add_option("--timed-runs", a->timed_runs,
                                      "fix search: timed runs of the command per candidate, "
                                      "one per round (median)")
                           ->check(integer_in(report::kTimingRounds, 1000))
                           ->capture_default_str();
  add_audit_options(
      sub, *a,
      {"default", "seconds before a run of the command is killed (with its process tree) and recorded as timeout", ""});
  CLI::Option* seed = sub.get_option("--seed");
  return [a, &global, timed, seed, fix_mode] {
    if (a->no_fix_search && fix_mode->count() > 0) throw UsageError("give --fix-search or --no-fix-search, not both");
    if ((a->no_fix_search || a->fix_search == "off") && timed->count() > 0)
      throw UsageError("--timed-runs times the fix search, which --no-fix-search turns off");
    if (!a->libraries.empty())
      throw UsageError("--load-library applies to run and probes: exec runs your command as it is");
    if (seed->count() > 0)
      throw UsageError(
          "--seed applies to run and probes: exec runs your command as it is; seed inside your script (the "
          "report's seeding checklist says where it is missing)");
    return execute(*a, global);
  };
}

}  // namespace ra::cli
