// SPDX-License-Identifier: Apache-2.0
#include "audit/exec/exec_audit.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/common/log.h"
#include "audit/common/paths.h"
#include "audit/common/progress.h"
#include "audit/common/stop.h"
#include "audit/exec/compile_switches.h"
#include "audit/exec/hook_report.h"
#include "audit/skeleton/audit_kind.h"
#include "audit/trace/fix_search.h"
#include "audit/trial/analysis.h"
#include "audit/trial/runner.h"
#include "audit/trial/worker.h"

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

// What a run left besides its process outcome: its folder, artifacts, metrics and hook reports.
struct RunRecord {
  std::string dir;
  std::vector<Taken> taken;
  std::map<std::string, std::vector<std::string>> metrics;
  HookRun hook;
  std::map<std::string, std::optional<std::string>> env;  // what the command was given, beyond the parent's
  bool ok = false;
};

// The runs of one batch of configurations, by configuration then repeat.
struct Batch {
  std::vector<std::vector<TrialRun>> runs;
  std::vector<std::vector<RunRecord*>> records;
};

class Session {
 public:
  Session(const ExecOptions& o, const ScratchDir& scratch, const ArtifactRoots& roots, std::string executable)
      : o_(o), scratch_(scratch), roots_(roots), executable_(std::move(executable)) {
    hook_dir_ = share_dir() + "/exec";
    if (::access((hook_dir_ + "/sitecustomize.py").c_str(), R_OK) != 0)
      throw InputError(
          fmt::format("exec's start-up hook is missing: {}/sitecustomize.py (a damaged install)", hook_dir_));
  }

  // The environment a run of `config` gets, beyond the parent's.
  std::map<std::string, std::optional<std::string>> environment(const Config& config, const std::string& dir,
                                                                int trial) const {
    auto env = config_environment(config);
    const char* pythonpath = std::getenv("PYTHONPATH");
    env["PYTHONPATH"] = hook_dir_ + (pythonpath && *pythonpath ? std::string(":") + pythonpath : "");
    env["REPRO_AUDIT_HOOK_DIR"] = dir + "/hook";
    env["REPRO_AUDIT_OUT"] = dir + "/out";
    env["REPRO_AUDIT_TRIAL"] = std::to_string(trial);
    nlohmann::json requested = nlohmann::json::object();
    for (const auto& [key, value] : config.values) {
      const SwitchInfo* s = find_switch(key);
      if (s != nullptr && (s->env_var.empty() || key == "threads")) requested[key] = value;
    }
    env["REPRO_AUDIT_SWITCHES"] = requested.dump();
    for (auto& [var, value] : compile_environment(config, cache_folder(config, dir))) env[var] = value;
    return env;
  }

  // The Inductor cache folder of a run of `config` in `dir`: its own (cold), the configuration's
  // warm one, or "" (the user's).
  std::string cache_folder(const Config& config, const std::string& dir) const {
    switch (cache_mode(config)) {
      case CacheMode::Cold:
        return dir + "/inductor-cache";
      case CacheMode::Warm: {
        const auto it = warm_.find(config.name);
        return it == warm_.end() ? "" : it->second;
      }
      case CacheMode::Unset:
        break;
    }
    return "";
  }

  // inductor.cache=warm: one folder per configuration, filled by one untimed run of the command
  // before its first audited or timed run (audit/exec/compile_switches.h).
  void warm_up(const std::vector<Config>& configs) {
    for (const auto& config : configs) {
      if (cache_mode(config) != CacheMode::Warm || warm_.count(config.name)) continue;
      const std::string folder = fmt::format("{}/inductor-warm{}", scratch_.path(), warm_.size() + 1);
      make_cache_folder(folder);
      warm_[config.name] = folder;
      const int trial = next_trial_++;
      const std::string dir = fmt::format("{}/warmup{}", scratch_.path(), trial);
      log::info("{}: a warm-up run fills its Inductor cache (untimed, not compared)", config.name);
      const ChildOutcome outcome = run_children({job(config, dir, trial)}, 1).front();
      take_artifacts(o_.artifacts, trial, roots_, fmt::format("warmup{}", trial));  // clears the way for the next run
      if (outcome.kind != ChildOutcome::Kind::Exited || outcome.exit_code != 0)
        log::warn("{}: the warm-up run failed ({}): its cache may be partly filled", config.name,
                  last_line(outcome.log_tail));
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  }

  ChildJob job(const Config& config, const std::string& dir, int trial) const {
    std::error_code ec;
    fs::create_directories(dir + "/hook", ec);
    fs::create_directories(dir + "/out", ec);
    if (cache_mode(config) == CacheMode::Cold) make_cache_folder(cache_folder(config, dir));
    ChildJob j;
    j.argv = o_.argv;
    j.argv[0] = executable_;
    j.env = environment(config, dir, trial);
    j.log_path = dir + "/stderr";
    j.stdout_path = dir + "/stdout";
    j.timeout = std::chrono::milliseconds(static_cast<long long>(o_.timeout_s * 1000));
    return j;
  }

  // After a run: takes its artifacts, reads its metrics and its hook's reports.
  void collect(RunRecord& r, int trial, const ChildOutcome& outcome) {
    TakeResult got = take_artifacts(o_.artifacts, trial, roots_, r.dir.substr(scratch_.path().size() + 1));
    r.taken = std::move(got.taken);
    const std::vector<bool>& matched = got.matched;
    for (const auto& k : got.skipped) skip(trial, k);
    // One copy per version: a file equal to one kept already is dropped at once, so a reproducible
    // 100 MB checkpoint costs one copy on disk (and no write-back) however many runs there are.
    for (auto& t : r.taken) {
      const auto [it, fresh] = kept_.emplace(t.name + '\n' + t.digest, t.path);
      if (fresh) continue;
      ::unlink(t.path.c_str());
      t.path = it->second;
    }
    r.ok = outcome.kind == ChildOutcome::Kind::Exited && outcome.exit_code == 0;
    if (!r.ok) return;
    for (size_t i = 0; i < matched.size(); ++i)
      if (matched[i]) matched_.insert(i);
    if (!o_.metrics.empty()) {
      MetricScan scan = extract_metrics_file(o_.metrics, r.dir + "/stdout");  // streamed, in bounded chunks
      if (!scan.unread.empty()) log::warn("run {}: {}", trial, scan.unread);
      if (scan.lines_cut > 0) log::warn("run {}: {}", trial, cut_lines_note(scan));
      r.metrics = std::move(scan.values);
      for (const auto& [name, values] : r.metrics)
        if (!values.empty()) metrics_seen_.insert(name);
    }
    r.hook = read_hook_run(r.dir + "/hook");
    for (const auto& n : r.hook.notes) log::warn("run {}: hook report skipped: {}", trial, n);
  }

  // Runs every configuration `repeats` times, or with --repeats auto in rounds until each is
  // decided (audit/trial/analysis.h, decide_repeats; `stopped_by`, when given, gets what decided
  // each). Repeat-major, each run in its own folder. Runs are compared by their artifacts'
  // entries, not bytes, so each round's artifacts are read before deciding.
  Batch run(const std::vector<Config>& configs, int repeats, const std::string& tag,
            std::vector<std::string>* stopped_by = nullptr) {
    Batch b;
    b.runs.resize(configs.size());
    b.records.resize(configs.size());
    warm_up(configs);
    std::vector<int> target(configs.size(), o_.auto_repeats ? o_.auto_repeats->min : repeats);
    std::vector<std::string> decided(configs.size());
    for (bool more = true; more;) {
      extend(b, configs, target, tag);
      if (!o_.auto_repeats) break;
      break_down({&b});
      more = plan_next_round(b.runs, *o_.auto_repeats, target, decided);
    }
    if (stopped_by) *stopped_by = std::move(decided);
    return b;
  }

  // Runs configuration c's repeats from those `b` has up to target[c].
  void extend(Batch& b, const std::vector<Config>& configs, const std::vector<int>& target, const std::string& tag) {
    std::vector<size_t> have;
    for (const auto& runs : b.runs) have.push_back(runs.size());
    const std::vector<std::pair<size_t, int>> jobs = round_jobs(have, target);
    for (size_t c = 0; c < configs.size(); ++c) {
      const auto n = static_cast<size_t>(std::max(target[c], static_cast<int>(b.runs[c].size())));
      b.runs[c].resize(n);
      b.records[c].resize(n, nullptr);
    }
    if (jobs.empty()) return;
    std::map<size_t, int> trial_of;
    const auto make = [&](size_t i) {
      check_stop();
      const auto [c, r] = jobs[i];
      const int trial = next_trial_++;
      trial_of[i] = trial;
      records_.push_back(std::make_unique<RunRecord>());
      RunRecord& rec = *records_.back();
      rec.dir = fmt::format("{}/{}t{}", scratch_.path(), tag, trial);
      b.records[c][static_cast<size_t>(r)] = &rec;
      ChildJob j = job(configs[c], rec.dir, trial);
      rec.env = j.env;
      return j;
    };
    progress_.add(jobs.size());
    const auto on_done = [&](size_t i, const ChildOutcome& outcome) {
      const auto [c, r] = jobs[i];
      RunRecord& rec = *b.records[c][static_cast<size_t>(r)];
      collect(rec, trial_of.at(i), outcome);
      TrialRun& run = b.runs[c][static_cast<size_t>(r)];
      run.repeat = r;
      run.process = outcome;
      run.timeout_s = o_.timeout_s;
      run.dump_path = rec.dir;
      if (rec.ok) {
        TrialResult result;
        for (const auto& t : rec.taken) result.tensors.push_back({t.name, "bytes", {t.bytes}, t.digest});
        for (const auto& [name, values] : rec.metrics) result.tensors.push_back(metric_entry(name, values));
        result.switches = run_switches(rec.hook, configs[c], rec.env);
        result.wall_ms = outcome.wall_ms;
        run.result = std::move(result);
      }
      progress_.done(fmt::format("{} repeat {}: {:.0f} ms", configs[c].name, r, outcome.wall_ms));
    };
    run_children(jobs.size(), make, o_.jobs, on_done);
  }

  // Replaces, in every completed run, the byte-level entry of each torch.save or safetensors
  // artifact whose bytes differ between runs by its entries, read once per distinct version.
  void break_down(const std::vector<Batch*>& batches) {
    std::map<std::string, std::map<std::string, std::string>> versions;  // name -> digest -> a path holding it
    std::map<std::string, std::string> kinds;
    for (const Batch* b : batches)
      for (const auto& config : b->records)
        for (const RunRecord* rec : config)
          if (rec != nullptr && rec->ok)
            for (const auto& t : rec->taken) {
              versions[t.name].emplace(t.digest, t.path);
              if (!kinds.count(t.name)) kinds[t.name] = t.symlink ? "symlink" : sniff_kind(t.path);
            }
    ArtifactRequest request;
    std::vector<std::pair<std::string, std::string>> asked;  // (name, digest) per read
    for (const auto& [name, by_digest] : versions) {
      if (artifacts_.count(name) == 0) artifacts_[name] = {name, "", kinds[name], "", 0};
      if (by_digest.size() < 2 || kinds[name] == "bytes" || kinds[name] == "symlink") continue;
      for (const auto& [digest, path] : by_digest) {
        if (contents_.count(name + '\n' + digest)) continue;
        request.reads.push_back({path, name});
        asked.emplace_back(name, digest);
      }
    }
    if (!request.reads.empty()) {
      const ArtifactAnswer answer = worker_artifacts(scratch_, request, o_.timeout_s);
      for (size_t i = 0; i < asked.size(); ++i) contents_[asked[i].first + '\n' + asked[i].second] = answer.reads[i];
    }
    for (Batch* b : batches)
      for (size_t c = 0; c < b->runs.size(); ++c)
        for (size_t r = 0; r < b->runs[c].size(); ++r) {
          TrialRun& run = b->runs[c][r];
          const RunRecord* rec = b->records[c][r];
          if (!run.result || rec == nullptr) continue;
          std::vector<report::TensorDigest> tensors;
          for (const auto& t : run.result->tensors) {
            const auto it = contents_.find(t.name + '\n' + t.digest);
            if (it == contents_.end() || it->second.kind == "bytes") {
              if (it != contents_.end()) {
                artifacts_[t.name].note = it->second.note;
                artifacts_[t.name].kind = "bytes";
              }
              tensors.push_back(t);
              continue;
            }
            artifacts_[t.name].kind = it->second.kind;
            tensors.insert(tensors.end(), it->second.entries.begin(), it->second.entries.end());
          }
          run.result->tensors = std::move(tensors);
        }
  }

  // Statistics between two runs (their folders) for entries of their results.
  report::DivergenceStats local_stats(const RunRecord& a, const RunRecord& b, const std::string& name) const {
    if (name.rfind(kMetricPrefix, 0) == 0) {
      const std::string metric = name.substr(std::string(kMetricPrefix).size());
      const auto va = a.metrics.find(metric), vb = b.metrics.find(metric);
      return metric_difference(va == a.metrics.end() ? std::vector<std::string>{} : va->second,
                               vb == b.metrics.end() ? std::vector<std::string>{} : vb->second);
    }
    const Taken* ta = find_taken(a, name);
    const Taken* tb = find_taken(b, name);
    report::DivergenceStats s;
    if (ta == nullptr || tb == nullptr) {
      s.note = ta == nullptr ? "the reference run did not write it" : "this run did not write it";
      return s;
    }
    return byte_difference(ta->path, tb->path);
  }

  static const Taken* find_taken(const RunRecord& r, const std::string& name) {
    for (const auto& t : r.taken)
      if (t.name == name) return &t;
    return nullptr;
  }

  // The artifact an entry belongs to ("ckpt.pt:model/w" -> "ckpt.pt"), "" for none.
  std::string artifact_of(const std::string& entry) const {
    std::string best;
    for (const auto& [name, a] : artifacts_)
      if ((entry == name ||
           (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 && entry[name.size()] == ':')) &&
          name.size() > best.size())
        best = name;
    return best;
  }

  // A DiffFn over run folders: metrics and byte-compared files here, entries of read files in one
  // worker (collect, then resolve, then answer, as BatchedDiff).
  DiffFn collect() {
    return [this](const std::string& a, const std::string& b, const std::vector<std::string>& names) {
      for (const auto& n : names) wanted_.push_back({a, b, n});
      return StatsAnswer{};
    };
  }

  void resolve() {
    ArtifactRequest request;
    request.tolerance = o_.tolerance;
    std::map<std::string, size_t> index;
    for (const auto& w : wanted_) {
      const RunRecord* ra = record_at(w.a);
      const RunRecord* rb = record_at(w.b);
      if (ra == nullptr || rb == nullptr) continue;
      const std::string file = artifact_of(w.name);
      const Taken* ta = file.empty() ? nullptr : find_taken(*ra, file);
      const Taken* tb = file.empty() ? nullptr : find_taken(*rb, file);
      // An entry of a file the worker read (a bare tensor's entry has the file's own name).
      const bool read = ta != nullptr && tb != nullptr && ta->digest != tb->digest && was_read(file, ta->digest) &&
                        was_read(file, tb->digest);
      if (!read) {
        answers_[key(w.a, w.b, w.name)] = local_stats(*ra, *rb, w.name);
        continue;
      }
      const std::string k = ta->path + '\n' + tb->path;
      auto [it, fresh] = index.emplace(k, request.compares.size());
      if (fresh) request.compares.push_back({ta->path, tb->path, file, {}});
      request.compares[it->second].entries.push_back(w.name);
      pending_.push_back({w.a, w.b, w.name, it->second});
    }
    if (request.compares.empty()) return;
    ArtifactAnswer answer;
    try {
      answer = worker_artifacts(scratch_, request, o_.timeout_s);
    } catch (const Interrupted&) {
      throw;
    } catch (const std::exception& e) {
      for (const auto& p : pending_)
        answers_[key(p.a, p.b, p.name)].note = std::string("statistics unavailable: ") + e.what();
      return;
    }
    for (const auto& p : pending_) {
      const auto& m = answer.compares[p.compare];
      const auto it = m.find(p.name);
      if (it != m.end()) answers_[key(p.a, p.b, p.name)] = it->second;
    }
  }

  DiffFn answer() const {
    return [this](const std::string& a, const std::string& b, const std::vector<std::string>& names) {
      StatsAnswer out;
      for (const auto& n : names)
        if (const auto it = answers_.find(key(a, b, n)); it != answers_.end()) out[n] = it->second;
      return out;
    };
  }

  void reset_stats() {
    wanted_.clear();
    pending_.clear();
  }

  bool was_read(const std::string& name, const std::string& digest) const {
    const auto it = contents_.find(name + '\n' + digest);
    return it != contents_.end() && it->second.kind != "bytes";
  }

  const RunRecord* record_at(const std::string& dir) const {
    for (const auto& r : records_)
      if (r->dir == dir) return r.get();
    return nullptr;
  }

  // Analyses a batch: entries broken down, then every configuration.
  std::vector<report::ConfigResult> analyse(Batch& b, const std::vector<Config>& configs) {
    break_down({&b});
    reset_stats();
    for (size_t c = 0; c < configs.size(); ++c) analyse_config(configs[c], b.runs[c], collect());
    resolve();
    std::vector<report::ConfigResult> out;
    for (size_t c = 0; c < configs.size(); ++c) out.push_back(analyse_config(configs[c], b.runs[c], answer()));
    return out;
  }

  // Timing for the fix search: `rounds` rounds, each one run of every configuration in turn.
  std::vector<std::vector<std::optional<double>>> time(const std::vector<Config>& configs, int rounds) {
    std::vector<std::vector<std::optional<double>>> out(configs.size());
    warm_up(configs);
    if (o_.progress) std::fprintf(stderr, "timing %zu configurations, %d rounds\n", configs.size(), rounds);
    for (int round = 0; round < rounds; ++round)
      for (size_t c = 0; c < configs.size(); ++c) {
        const int trial = next_trial_++;
        const std::string dir = fmt::format("{}/time{}", scratch_.path(), trial);
        const ChildOutcome outcome = run_children({job(configs[c], dir, trial)}, 1).front();
        take_artifacts(o_.artifacts, trial, roots_, fmt::format("time{}", trial));  // clears the way for the next run
        // A cold cache compiles in every run: that time is the cache's, not the fix's, so it is
        // left out of the cost and said on its own (cold_compile_ms).
        double compile_ms = 0;
        if (cache_mode(configs[c]) == CacheMode::Cold)
          if (const auto s = compile_seconds(read_hook_run(dir + "/hook"))) compile_ms = *s * 1000;
        if (compile_ms > 0) cold_compile_ms_[configs[c].name].push_back(compile_ms);
        std::error_code ec;
        fs::remove_all(dir, ec);
        const bool ok = outcome.kind == ChildOutcome::Kind::Exited && outcome.exit_code == 0;
        out[c].push_back(ok ? std::optional<double>(std::max(outcome.wall_ms - compile_ms, 1.0)) : std::nullopt);
      }
    return out;
  }

  // A match not taken: said once per name on stderr, kept for the report and for the errors that
  // say an --artifact matched nothing.
  void skip(int trial, const Skipped& k) {
    if (skipped_.emplace(k.name, k).second) log::warn("run {}: artifact '{}' not taken: {}", trial, k.name, k.reason);
  }
  const std::map<std::string, Skipped>& skipped() const { return skipped_; }
  // Why pattern `text` (or, for "", any) matched nothing, when a match was skipped: " (skipped: ...)".
  std::string skip_reason(const std::string& text) const {
    for (const auto& [name, k] : skipped_)
      if (text.empty() || k.pattern == text || k.pattern.empty()) return fmt::format(" ('{}': {})", name, k.reason);
    return "";
  }

  std::map<std::string, report::ExecArtifact>& artifacts() { return artifacts_; }
  // Timed runs of cold-cache configurations: the compile time left out of each, by configuration.
  const std::map<std::string, std::vector<double>>& cold_compile_ms() const { return cold_compile_ms_; }
  const std::set<size_t>& matched() const { return matched_; }
  const std::set<std::string>& metrics_seen() const { return metrics_seen_; }
  const ArtifactContents* contents(const std::string& name, const std::string& digest) const {
    const auto it = contents_.find(name + '\n' + digest);
    return it == contents_.end() ? nullptr : &it->second;
  }
  ArtifactAnswer read(const ArtifactRequest& r) { return worker_artifacts(scratch_, r, o_.timeout_s); }

 private:
  struct Wanted {
    std::string a, b, name;
  };
  struct Pending {
    std::string a, b, name;
    size_t compare;
  };
  static std::string key(const std::string& a, const std::string& b, const std::string& n) {
    return a + '\n' + b + '\n' + n;
  }

  const ExecOptions& o_;
  const ScratchDir& scratch_;
  const ArtifactRoots& roots_;
  std::string executable_;
  std::string hook_dir_;
  int next_trial_ = 1;
  std::vector<std::unique_ptr<RunRecord>> records_;
  std::set<size_t> matched_;
  std::set<std::string> metrics_seen_;
  std::map<std::string, report::ExecArtifact> artifacts_;
  std::map<std::string, ArtifactContents> contents_;  // "name\ndigest" -> what the worker read
  std::map<std::string, std::string> kept_;           // "name\ndigest" -> the one copy of that version
  std::map<std::string, Skipped> skipped_;            // by name, the first reason
  std::map<std::string, std::string> warm_;           // configuration -> its warm Inductor cache folder
  std::map<std::string, std::vector<double>> cold_compile_ms_;
  std::vector<Wanted> wanted_;
  std::vector<Pending> pending_;
  std::map<std::string, report::DivergenceStats> answers_;
  Progress progress_{0, o_.progress};
};

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
    // Bytes differ (a torch.save archive names its records after its file): compare the entries.
    std::string differing = "(its bytes)";
    if (sniff_kind(p.zero->path) != "bytes") {
      ArtifactRequest req;
      req.reads = {{p.zero->path, "rank0"}, {p.other->path, "rankN"}};
      const ArtifactAnswer a = s.read(req);
      if (a.reads[0].kind != "bytes" && a.reads[1].kind != "bytes") {
        differing.clear();
        std::map<std::string, std::string> zero;
        for (const auto& e : a.reads[0].entries) zero[e.name.substr(std::min<size_t>(e.name.size(), 6))] = e.digest;
        for (const auto& e : a.reads[1].entries) {
          const std::string leaf = e.name.substr(std::min<size_t>(e.name.size(), 6));
          const auto it = zero.find(leaf);
          if (it == zero.end() || it->second != e.digest) {
            differing = leaf.empty() ? "(the file's one tensor)" : leaf;
            break;
          }
        }
        if (differing.empty() && a.reads[0].entries.size() != a.reads[1].entries.size())
          differing = "(an entry only rank 0 holds)";
      }
    }
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
      return nlohmann::ordered_json::parse(read_file(job.stdout_path, "environment"));
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
    AuditPlan plan{fingerprint(scratch_, o_.timeout_s), {command_target()}, {}};
    plan.identity = exec_plan(o_, plan.targets.front().model_digest);
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
    report::Target& target = rep.targets.front();
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
    artifact_facts();
    compile_facts(target);
    link_checklist(facts_, target, [&](const std::string& n) { return session_->artifact_of(n); });
    if (o_.ranks_equal) facts_.ranks_equal = check_ranks(*session_, batch_, configs_, o_);
    if (o_.fix_search) fix_search(target);
    target.exec = std::move(facts_);
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
    target.kind = "command";
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
      const std::string device = o_.device.type();
      failing.fix_search = search_fixes(failing, configs_[c], device, evaluate, time);
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
