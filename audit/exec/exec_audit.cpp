// SPDX-License-Identifier: Apache-2.0
#include "audit/exec/exec_audit.h"
#include "audit/common/json_document.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/common/log.h"
#include "audit/common/paths.h"
#include "audit/exec/compile_switches.h"
#include "audit/exec/exec_session.h"
#include "audit/exec/hook_report.h"
#include "audit/skeleton/audit_kind.h"
#include "audit/trace/fix_search.h"
#include "audit/trial/analysis.h"
#include "audit/trial/runner.h"
#include "audit/trial/worker_client.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include <sys/stat.h>
#include <unistd.h>

namespace ra::exec {
namespace {

namespace fs = std::filesystem;

using detail::Batch;
using detail::RunRecord;
using detail::Session;

// One line for a command that failed in every run.
[[noreturn]] void fail_everywhere(const std::vector<std::vector<TrialRun>>& runs, double timeout_s) {
  const TrialRun* last = nullptr;
  bool all_timed_out = true;
  for (const auto& config : runs)
    for (const auto& r : config) {
      last = &r;
      if (r.process.kind != ChildOutcome::Kind::TimedOut) all_timed_out = false;
    }
  if (all_timed_out)
    throw Error(ExitCode::Incomplete,
                fmt::format("the command did not finish within --timeout {:g} s in any run", timeout_s));
  const ChildOutcome& p = last->process;
  if (p.disk_full) {  // $REPRO_AUDIT_OUT is in TMPDIR: a full disk there fails the command, not the command's own bug
    const std::string said = last_line(p.log_tail);
    throw InputError(fmt::format("no space left in TMPDIR: the command failed in every run{}",
                                 said.empty() ? "" : " (" + said + ")"));
  }
  const std::string how = p.kind == ChildOutcome::Kind::Signaled
                              ? (crash_signal(p.signal) ? "" : "was ") + signal_text(p.signal)
                          : p.kind == ChildOutcome::Kind::TimedOut    ? "timed out"
                          : p.kind == ChildOutcome::Kind::SpawnFailed ? "could not be started"
                                                                      : fmt::format("exited with code {}", p.exit_code);
  const std::string line = last_line(p.log_tail);
  throw InputError(fmt::format("the command failed in every run: it {}{}", how, line.empty() ? "" : " (" + line + ")"));
}

// Crashed runs of a command say so in its terms: it exited with a code, not "without a result".
void reword_failures(report::ConfigResult& c) {
  for (auto& t : c.trials)
    if (t.status == report::TrialStatus::Crashed && t.message.rfind("exited with code", 0) == 0)
      t.message = fmt::format("the command exited with code {}", t.exit_code);
  if (c.message.find("without a result") != std::string::npos) {
    for (const auto& t : c.trials)
      if (t.status == report::TrialStatus::Crashed) {
        c.message = fmt::format("repeat {}: {}", t.repeat, t.message);
        break;
      }
  }
}

// The identity of a command for baselines: its words, and the bytes of every argument that names a file.
std::string command_digest(const std::vector<std::string>& argv, const std::string& executable) {
  std::string identity;
  for (const auto& a : argv) {
    identity += a + '\n';
    struct stat st {};
    if (::stat(a.c_str(), &st) == 0 && S_ISREG(st.st_mode) && a != executable)
      identity += file_digest(a, "argument") + '\n';
  }
  const std::string path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                           fmt::format("/repro-audit-identity-{}", ::getpid());
  write_file_atomic(path, identity);
  const std::string d = file_digest(path, "identity");
  ::unlink(path.c_str());
  return d;
}

std::string joined(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    out += a.find_first_of(" \t'\"") == std::string::npos ? a : "'" + a + "'";
  }
  return out;
}

// --ranks-equal: within each completed run, every {rank} artifact equal to rank 0's.
// What differs between rank 0's copy of an artifact and another rank's whose bytes differ: the first
// entry that differs (a torch.save archive names its records after its file, so the entries are
// compared), "(its bytes)" for a file that is not a tensor file, or "" when every entry is equal.
std::string first_differing_entry(Session& s, const Taken& zero, const Taken& other) {
  if (sniff_kind(zero.path) == "bytes") return "(its bytes)";
  ArtifactRequest req;
  req.reads = {{zero.path, "rank0"}, {other.path, "rankN"}};
  const ArtifactAnswer a = s.read(req);
  if (a.reads[0].kind == "bytes" || a.reads[1].kind == "bytes") return "(its bytes)";
  std::map<std::string, std::string> first;
  for (const auto& e : a.reads[0].entries) first[e.name.substr(std::min<size_t>(e.name.size(), 6))] = e.digest;
  for (const auto& e : a.reads[1].entries) {
    const std::string leaf = e.name.substr(std::min<size_t>(e.name.size(), 6));
    const auto it = first.find(leaf);
    if (it == first.end() || it->second != e.digest) return leaf.empty() ? "(the file's one tensor)" : leaf;
  }
  return a.reads[0].entries.size() != a.reads[1].entries.size() ? "(an entry only rank 0 holds)" : "";
}

report::RanksEqual check_ranks(Session& s, const Batch& b, const std::vector<Config>& configs, const ExecOptions& o) {
  report::RanksEqual result;
  struct Pair {
    size_t c;
    int repeat;
    const Taken* zero;
    const Taken* other;
  };
  std::vector<Pair> pairs;
  for (size_t c = 0; c < configs.size(); ++c)
    for (size_t r = 0; r < b.records[c].size(); ++r) {
      const RunRecord* rec = b.records[c][r];
      if (rec == nullptr || !rec->ok) continue;
      for (const auto& p : o.artifacts) {
        if (!p.rank) continue;
        const Taken* zero = nullptr;
        for (const auto& t : rec->taken)
          if (t.pattern == p.text && t.rank == 0) zero = &t;
        if (zero == nullptr) continue;
        for (const auto& t : rec->taken)
          if (t.pattern == p.text && t.rank > 0) pairs.push_back({c, static_cast<int>(r), zero, &t});
      }
    }
  std::sort(pairs.begin(), pairs.end(), [](const Pair& x, const Pair& y) {
    return std::tie(x.c, x.repeat, x.other->rank) < std::tie(y.c, y.repeat, y.other->rank);
  });
  result.compared = static_cast<int>(pairs.size());
  for (const auto& p : pairs) {
    if (p.zero->digest == p.other->digest) continue;
    const std::string differing = first_differing_entry(s, *p.zero, *p.other);
    if (differing.empty()) continue;
    result.equal = false;
    result.config = configs[p.c].name;
    result.repeat = p.repeat;
    result.artifact = p.other->pattern;
    result.rank = p.other->rank;
    result.tensor = differing;
    break;
  }
  return result;
}

// Links each missing checklist line to the first artifact or metric that diverged. A checkpoint's
// line is a note about resuming from it, never linked: it does not explain this run's results.
void link_checklist(report::ExecFacts& facts, const report::Target& target,
                    const std::function<std::string(const std::string&)>& artifact_of) {
  std::set<std::string> diverged;
  std::string first;
  for (const auto& c : target.configs)
    for (const auto& f : c.diverged_tensors) {
      const std::string a = f.name.rfind(kMetricPrefix, 0) == 0 ? f.name : artifact_of(f.name);
      if (a.empty()) continue;
      if (first.empty()) first = a;
      diverged.insert(a);
    }
  for (auto& item : facts.checklist) item.artifact = item.status == "missing" ? first : "";
}

// The machine's fingerprint, from the worker's `env --json` (the tool's LibTorch: the command's own
// torch may be another build, which its hook report names).
nlohmann::ordered_json fingerprint(const ScratchDir& scratch, double timeout_s) {
  ChildJob job;
  job.argv = {worker_executable(), "env", "--json"};
  job.stdout_path = scratch.path() + "/environment.json";
  job.log_path = scratch.path() + "/environment.log";
  job.timeout = std::chrono::milliseconds(static_cast<long long>(std::min(timeout_s, 300.0) * 1000));
  const ChildOutcome out = run_children({job}, 1).front();
  try {
    if (out.kind == ChildOutcome::Kind::Exited && out.exit_code == 0)
      return parse_json_document<nlohmann::ordered_json>(read_file(job.stdout_path, "environment"), "environment");
  } catch (const std::exception&) {}
  throw Error(ExitCode::Incomplete,
              fmt::format("the worker could not read this machine's environment: {}", last_line(out.log_tail)));
}

// The fix search's costs leave out a cold cache's compile time (Session::time): said in its conclusion.
void cold_cache_note(report::FixSearch& f, const std::map<std::string, std::vector<double>>& compile_ms) {
  std::vector<std::string> parts;
  for (const auto& [name, ms] : compile_ms) {
    if (ms.empty() || name.rfind(f.from, 0) != 0) continue;
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    parts.push_back(fmt::format("{} {:.1f} s", name, sorted[sorted.size() / 2] / 1000));
    log::info("fix search: {} compiled for a median {:.1f} s per timed run (cold Inductor cache), left out of its cost",
              name, sorted[sorted.size() / 2] / 1000);
  }
  if (!parts.empty())
    f.conclusion +=
        "; costs leave out the cold Inductor cache's compile time of each run, which is the cache's, not the fix's";
}

nlohmann::ordered_json exec_plan(const ExecOptions& o, const std::string& identity) {
  nlohmann::ordered_json plan = fleet::session_plan(o, "exec");
  plan["identity"] = identity;
  std::vector<std::string> artifacts, metrics;
  for (const auto& a : o.artifacts) artifacts.push_back(a.text);
  for (const auto& m : o.metrics) metrics.push_back(m.name + "=" + m.regex);
  plan["artifacts"] = artifacts;
  plan["metrics"] = metrics;
  plan["ranks_equal"] = o.ranks_equal;
  plan["fix_search"] = o.fix_search ? nlohmann::ordered_json(o.timed_runs) : nlohmann::ordered_json(false);
  return plan;
}

// `exec` as an audit kind (audit/skeleton/audit_kind.h): one target, the command; a cell is a
// configuration with all its runs of the command.
class CommandAudit : public AuditKind {
 public:
  explicit CommandAudit(const ExecOptions& o) : o_(o) {}

  AuditPlan plan() override {
    if (o_.argv.empty()) throw UsageError("exec needs a command after --");
    executable_ = resolve_command(o_.argv[0]);
    log::debug("scratch folder {}", scratch_.path());
    // The folders artifacts are taken from, opened before the first run (audit/exec/artifacts.h).
    roots_.emplace(scratch_.path(), o_.artifact_roots);
    check_no_artifact_yet();
    cwd_before_ = stamp_tree(roots_->fd(0), *roots_);
    session_.emplace(o_, scratch_, *roots_, executable_);
    report::ExecTarget command{command_target(), {}};
    AuditPlan plan;
    plan.environment = fingerprint(scratch_, o_.timeout_s);
    plan.identity = exec_plan(o_, command.common.model_digest);
    plan.body = report::ExecBody{{std::move(command)}};
    facts_.command = o_.argv;
    facts_.executable = executable_;
    std::error_code ec;
    facts_.working_directory = fs::current_path(ec).string();
    for (const auto& m : o_.metrics) facts_.metrics.push_back({m.name, m.regex, 0});
    return plan;
  }

  void run(const Cells& cells) override {
    for (const size_t c : cells.configs[0]) configs_.push_back(o_.configs[c]);
    batch_ = session_->run(configs_, o_.repeats, "", &stopped_by_);
    check_runs();
  }

  void analyse(const Cells&, report::Report& rep) override {
    report::ExecTarget& command = std::get<report::ExecBody>(rep.body).targets.front();
    report::Target& target = command.common;
    target.configs = session_->analyse(batch_, configs_);
    for (size_t c = 0; c < configs_.size(); ++c) {
      reword_failures(target.configs[c]);
      target.configs[c].stopped_by = stopped_by_[c];
    }
    std::vector<std::string> reference_dirs;
    for (size_t c = 0; c < configs_.size(); ++c) {
      const int ref = reference_index(batch_.runs[c]);
      reference_dirs.push_back(ref >= 0 ? batch_.runs[c][static_cast<size_t>(ref)].dump_path : "");
      // What a run is compared by, the same whether its runs agree or not (reports/exec_model.h);
      // nothing when no run completed.
      const RunRecord* rec = ref >= 0 ? batch_.records[c][static_cast<size_t>(ref)] : nullptr;
      target.configs[c].compared = report::ExecCompared{rec ? static_cast<int>(rec->taken.size()) : 0,
                                                        rec ? static_cast<int>(rec->metrics.size()) : 0};
    }
    session_->reset_stats();
    configuration_dependence(target.configs, reference_dirs, session_->collect());
    session_->resolve();
    target.dependence = configuration_dependence(target.configs, reference_dirs, session_->answer());
    if (target.dependence)  // what --metric names first, as in each configuration (exec_session.cpp)
      std::stable_partition(target.dependence->differing.begin(), target.dependence->differing.end(),
                            [](const report::TensorFinding& f) { return f.name.rfind(kMetricPrefix, 0) == 0; });
    artifact_facts();
    compile_facts(target);
    link_checklist(facts_, target, [&](const std::string& n) { return session_->artifact_of(n); });
    if (o_.ranks_equal) facts_.ranks_equal = check_ranks(*session_, batch_, configs_, o_);
    if (o_.fix_search) fix_search(target);
    // Places in the program as reports show them (audit/common/paths.h): its files relative to
    // the working directory, an installed package's to site-packages.
    const std::string cwd = working_directory();
    for (auto& item : facts_.checklist) item.where = shown_source(item.where, cwd);
    for (auto& c : target.configs)
      for (auto& sw : c.switches) sw.set_at = shown_source(sw.set_at, cwd);
    command.facts = std::move(facts_);
  }

 private:
  // A file a pattern matches before the first run would be taken as the first run's (and moved
  // away from the user); a symlinked folder the pattern names is never followed.
  void check_no_artifact_yet() const {
    for (const auto& p : o_.artifacts) {
      std::vector<Skipped> skipped;
      if (const auto found = existing_matches(p, *roots_, &skipped); !found.empty())
        throw InputError(
            fmt::format("--artifact '{}' already matches '{}' before the first run: move it away (exec takes the "
                        "files the command writes, and would take this one as the first run's)",
                        p.text, found.front()));
      for (const auto& k : skipped)
        throw InputError(
            fmt::format("--artifact '{}': '{}' is {}; name the folder it points to with --artifact-root DIR", p.text,
                        k.name, k.reason));
    }
  }

  report::Target command_target() const {
    report::Target target;
    target.name = joined(o_.argv);
    target.path = executable_;
    target.model_digest = command_digest(o_.argv, executable_);
    target.device = o_.device.to_string();
    target.seed = o_.seed;
    return target;
  }

  // InputError for a command that failed in every run, an --artifact or --metric that matched
  // nothing in any run, or no artifact at all.
  void check_runs() const {
    bool any_ok = false;
    for (const auto& config : batch_.runs)
      for (const auto& r : config) any_ok = any_ok || r.result.has_value();
    if (!any_ok) fail_everywhere(batch_.runs, o_.timeout_s);
    for (size_t i = 0; i < o_.artifacts.size(); ++i)
      if (!session_->matched().count(i))
        throw InputError(fmt::format("--artifact '{}' matched no file in any run{}{}", o_.artifacts[i].text,
                                     o_.artifacts[i].bare ? " (looked for in the working directory and in {out})" : "",
                                     session_->skip_reason(o_.artifacts[i].text) + what_was_written(true)));
    for (const auto& m : o_.metrics)
      if (!session_->metrics_seen().count(m.name))
        throw InputError(fmt::format("--metric {} matched no line of the command's stdout in any run", m.name));
    bool any_artifact = false;
    for (const auto& config : batch_.records)
      for (const RunRecord* rec : config) any_artifact = any_artifact || (rec && rec->ok && !rec->taken.empty());
    if (!any_artifact && o_.metrics.empty())
      throw InputError(
          fmt::format("the command wrote no artifact in any run{}: name its files with --artifact, write them "
                      "into $REPRO_AUDIT_OUT, or compare printed values with --metric{}",
                      session_->skip_reason(""), what_was_written(false)));
  }

  // What the runs wrote, for an error that says a pattern matched nothing (issue 33): the files
  // left in the first completed run's {out} and those new or changed in the working directory,
  // a few of each, and a pattern that would take them. "" when `patterns` is false and nothing
  // was written in the working directory (the caller's words say the rest).
  std::string what_was_written(bool patterns) const {
    std::string out_dir;
    for (const auto& config : batch_.records)
      for (const RunRecord* rec : config)
        if (out_dir.empty() && rec != nullptr && rec->ok) out_dir = rec->dir + "/out";
    std::vector<std::string> in_out;
    for (const auto& [name, stamp] : stamp_tree(out_dir, *roots_)) in_out.push_back(name);
    const std::vector<std::string> in_cwd = changed_files(cwd_before_, stamp_tree(roots_->fd(0), *roots_));
    const auto few = [](const std::vector<std::string>& names) {
      constexpr size_t kShown = 5;
      std::vector<std::string> shown(names.begin(), names.begin() + static_cast<long>(std::min(names.size(), kShown)));
      return fmt::format("{}{}", fmt::join(shown, ", "),
                         names.size() > kShown ? fmt::format(" and {} more", names.size() - kShown) : "");
    };
    const auto it = [](const std::vector<std::string>& names) { return names.size() == 1 ? "it" : "the first"; };
    if (!patterns)
      return in_cwd.empty() ? ""
                            : fmt::format("; it wrote into the working directory: {} (--artifact '{}' takes {})",
                                          few(in_cwd), in_cwd.front(), it(in_cwd));
    if (in_out.empty() && in_cwd.empty())
      return "; the command wrote no file into $REPRO_AUDIT_OUT, and none new into the working directory";
    std::string line =
        fmt::format("; the command wrote into $REPRO_AUDIT_OUT: {}; into the working directory: {}",
                    in_out.empty() ? "nothing" : few(in_out), in_cwd.empty() ? "nothing new" : few(in_cwd));
    if (!in_out.empty())
      return line + fmt::format(
                        ": --artifact '{{out}}/{}' takes {}, or omit --artifact to compare every file in "
                        "$REPRO_AUDIT_OUT",
                        in_out.front(), it(in_out));
    return line + fmt::format(": --artifact '{}' takes {}", in_cwd.front(), it(in_cwd));
  }

  // What the hook saw, from the first configuration's reference run (any completed run else), and
  // the artifacts: those taken, and those matched but not taken, with the reason.
  void artifact_facts() {
    const RunRecord* seen = nullptr;
    for (size_t c = 0; c < configs_.size() && seen == nullptr; ++c) {
      const int ref = reference_index(batch_.runs[c]);
      if (ref >= 0) seen = batch_.records[c][static_cast<size_t>(ref)];
    }
    if (seen != nullptr) {
      hook_facts(facts_, seen->hook, seen->env, seen->dir, seen->metrics);
      for (const auto& t : seen->taken) {
        auto& a = session_->artifacts()[t.name];
        a.name = t.name;
        a.pattern = t.pattern;
        a.bytes = t.bytes;
        if (t.symlink) {
          a.kind = "symlink";
          a.note = fmt::format("a symlink to '{}': its link text is compared, its target never opened", t.link);
        }
      }
    }
    for (const auto& [name, k] : session_->skipped()) {
      auto& a = session_->artifacts()[name];
      if (a.name.empty()) {
        a = {name, k.pattern, "skipped", "", 0};
        a.note = "not taken: " + k.reason;
      } else {
        a.note += (a.note.empty() ? "" : "; ") + fmt::format("not taken in some runs: {}", k.reason);
      }
    }
    for (auto& [name, a] : session_->artifacts()) {
      if (a.name.empty()) a.name = name;
      facts_.artifacts.push_back(a);
    }
  }

  // The fix search of each diverged configuration, timed by the command's wall time.
  // Compiled code and collectives, from every configuration's reference run (audit/exec/compile_switches.h).
  void compile_facts(const report::Target& target) {
    std::vector<ConfigRun> config_runs;
    for (size_t c = 0; c < configs_.size(); ++c) {
      const int ref = reference_index(batch_.runs[c]);
      if (ref < 0) continue;
      config_runs.push_back(
          {&configs_[c], &batch_.records[c][static_cast<size_t>(ref)]->hook, target.configs[c].switches});
    }
    for (size_t c = 0; c < configs_.size(); ++c) {
      std::vector<const HookRun*> hooks;
      for (const RunRecord* rec : batch_.records[c])
        if (rec != nullptr && rec->ok) hooks.push_back(&rec->hook);
      if (const std::string line = compile_time_line(configs_[c], hooks); !line.empty()) log::info("{}", line);
    }
    for (auto& item : compile_checklist(config_runs, o_.jobs)) {
      if (item.text.find("never called torch.compile") != std::string::npos) log::warn("{}", item.text);
      facts_.checklist.push_back(std::move(item));
    }
  }

  // A seeding line that is missing and tied to what diverged is the answer: no switch seeds an RNG,
  // so the search is skipped (unless --fix-search always) and the line is said first.
  const report::ChecklistItem* seeding_answer() const {
    const report::ChecklistItem* seeding = nullptr;
    for (const auto& item : facts_.checklist)
      if (seeding == nullptr && is_seeding_item(item) && item.status == "missing" && !item.artifact.empty())
        seeding = &item;
    if (seeding != nullptr)
      log::warn("diverged: {}: the seeding checklist says why: {}{}", seeding->artifact, seeding->text,
                seeding->where.empty() ? "" : " (" + seeding->where + ")");
    return seeding;
  }

  void fix_search(report::Target& target) {
    const report::ChecklistItem* seeding = seeding_answer();
    for (size_t c = 0; c < configs_.size(); ++c) {
      report::ConfigResult& failing = target.configs[c];
      if (failing.verdict != report::Verdict::Diverged) continue;
      if (seeding != nullptr && !o_.fix_search_always) {
        report::FixSearch skipped;
        skipped.from = failing.name;
        skipped.conclusion = fmt::format(
            "not searched: the seeding checklist's missing line explains {} ({}), and no switch "
            "seeds an RNG; seed it, or give --fix-search always to search anyway",
            seeding->artifact, seeding->id);
        failing.fix_search = std::move(skipped);
        continue;
      }
      int most_runs = 0;
      const EvaluateFn evaluate = [&](const Config& config) {
        log::info("fix search for {}: trying {}", failing.name, config.name);
        Batch b = session_->run({config}, o_.repeats, "fix");
        most_runs = std::max(most_runs, static_cast<int>(b.runs[0].size()));
        report::ConfigResult r = session_->analyse(b, {config}).front();
        reword_failures(r);  // a crashed candidate says how, in the command's terms
        return CandidateOutcome{r.verdict, r.message, {}};
      };
      const TimeFn time = [&](const std::vector<Config>& timed) {
        return session_->time(timed, std::max(o_.timed_runs, 1));
      };
      failing.fix_search = search_fixes(failing, configs_[c], o_.device, evaluate, time);
      failing.fix_search->repeats = o_.auto_repeats ? most_runs : o_.repeats;
      failing.fix_search->repeats_auto = o_.auto_repeats.has_value();
      failing.fix_search->timed_runs = o_.timed_runs;
      cold_cache_note(*failing.fix_search, session_->cold_compile_ms());
    }
  }

  const ExecOptions& o_;
  ScratchDir scratch_;
  std::string executable_;
  std::optional<ArtifactRoots> roots_;
  TreeStamps cwd_before_;  // the working directory before the first run
  std::optional<Session> session_;
  report::ExecFacts facts_;
  std::vector<Config> configs_;  // this process's configurations
  Batch batch_;
  std::vector<std::string> stopped_by_;
};

}  // namespace

std::string resolve_command(const std::string& argv0) {
  const auto usable = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (argv0.empty()) throw UsageError("exec needs a command after --");
  if (argv0.find('/') != std::string::npos) {
    struct stat st {};
    if (::stat(argv0.c_str(), &st) != 0) throw InputError(fmt::format("command '{}' does not exist", argv0));
    if (S_ISDIR(st.st_mode)) throw InputError(fmt::format("command '{}' is a folder", argv0));
    if (!usable(argv0)) throw InputError(fmt::format("command '{}' is not executable", argv0));
    return argv0;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = dirs.find(':', start);
    std::string dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + argv0;
    if (usable(candidate)) return candidate;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  throw InputError(fmt::format("command '{}' not found on PATH", argv0));
}

report::Report run_exec(const ExecOptions& options) {
  CommandAudit kind(options);
  return run_kind(kind, options, options.shard);
}

}  // namespace ra::exec
