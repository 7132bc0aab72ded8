// SPDX-License-Identifier: Apache-2.0
#include "audit/exec/exec_session.h"

#include "audit/common/errors.h"
#include "audit/common/log.h"
#include "audit/common/paths.h"
#include "audit/common/stop.h"
#include "audit/exec/compile_switches.h"
#include "audit/exec/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include <unistd.h>

namespace ra::exec::detail {

namespace fs = std::filesystem;

Session::Session(const ExecOptions& o, const ScratchDir& scratch, const ArtifactRoots& roots, std::string executable)
    : o_(o), scratch_(scratch), roots_(roots), executable_(std::move(executable)) {
  hook_dir_ = share_dir() + "/exec";
  if (::access((hook_dir_ + "/sitecustomize.py").c_str(), R_OK) != 0)
    throw InputError(
        fmt::format("exec's start-up hook is missing: {}/sitecustomize.py (a damaged install)", hook_dir_));
}

std::map<std::string, std::optional<std::string>> Session::environment(const Config& config, const std::string& dir,
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
    if (s != nullptr && s->applied != Applied::Environment) requested[key] = value;  // the hook's to apply
  }
  env["REPRO_AUDIT_SWITCHES"] = requested.dump();
  for (auto& [var, value] : compile_environment(config, cache_folder(config, dir))) env[var] = value;
  // Under inductor.cache=cold|warm nothing of a run outlives it (issue 39): Inductor's precompiled
  // headers ($TMPDIR/torchinductor_$USER), an interrupted compiler's cc*.s files and Triton's home
  // (its dump and override folders) go into the run's own folder, which the audit removes.
  if (cache_mode(config) != CacheMode::Unset) {
    env["TMPDIR"] = dir + "/tmp";
    env["TRITON_HOME"] = dir + "/triton-home";
  }
  return env;
}

std::string Session::cache_folder(const Config& config, const std::string& dir) const {
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

void Session::warm_up(const std::vector<Config>& configs) {
  for (const auto& config : configs) {
    if (cache_mode(config) != CacheMode::Warm || warm_.count(config.name)) continue;
    const std::string folder = fmt::format("{}/inductor-warm{}", scratch_.path(), warm_.size() + 1);
    make_cache_folder(folder);
    warm_[config.name] = folder;
    const int trial = next_trial_++;
    const std::string dir = fmt::format("{}/warmup{}", scratch_.path(), trial);
    log::info("{}: a warm-up run fills its Inductor cache (untimed, not compared)", config.name);
    Progress warming(1, o_.progress);
    const std::string what = fmt::format("{} warm-up", config.name);
    const ChildProgress progress{
        warming, [&](size_t) { return what; },
        [&](size_t, const ChildOutcome& outcome) { return fmt::format("{}: {:.0f} ms", what, outcome.wall_ms); }};
    const ChildOutcome outcome = run_children({job(config, dir, trial)}, 1, progress).front();
    take_artifacts(o_.artifacts, trial, roots_, fmt::format("warmup{}", trial));  // clears the way for the next run
    if (outcome.kind != ChildOutcome::Kind::Exited || outcome.exit_code != 0)
      log::warn("{}: the warm-up run failed ({}): its cache may be partly filled", config.name,
                last_line(outcome.log_tail));
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
}

ChildJob Session::job(const Config& config, const std::string& dir, int trial) const {
  std::error_code ec;
  fs::create_directories(dir + "/hook", ec);
  fs::create_directories(dir + "/out", ec);
  if (cache_mode(config) == CacheMode::Cold) make_cache_folder(cache_folder(config, dir));
  if (cache_mode(config) != CacheMode::Unset) {
    fs::create_directories(dir + "/tmp", ec);
    fs::create_directories(dir + "/triton-home", ec);
  }
  ChildJob j;
  j.argv = o_.argv;
  j.argv[0] = executable_;
  j.env = environment(config, dir, trial);
  j.log_path = dir + "/stderr";
  j.stdout_path = dir + "/stdout";
  j.timeout = std::chrono::milliseconds(static_cast<long long>(o_.timeout_s * 1000));
  return j;
}

void Session::collect(RunRecord& r, const ChildOutcome& outcome) {
  const int trial = r.trial;
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
    r.metric_lines = std::move(scan.lines);
    for (const auto& [name, values] : r.metrics)
      if (!values.empty()) metrics_seen_.insert(name);
  }
  r.hook = read_hook_run(r.dir + "/hook");
  for (const auto& n : r.hook.notes) log::warn("run {}: hook report skipped: {}", trial, n);
}

Batch Session::run(const std::vector<Config>& configs, int repeats, const std::string& tag,
                   std::vector<std::string>* stopped_by) {
  Batch b;
  b.runs.resize(configs.size());
  b.records.resize(configs.size());
  warm_up(configs);
  std::vector<std::string> decided = run_rounds(
      configs.size(), repeats, o_.auto_repeats,
      TrialParts{
          .grow =
              [&](size_t c, int n) {
                b.runs[c].resize(static_cast<size_t>(n));
                b.records[c].resize(static_cast<size_t>(n), nullptr);
              },
          .make = [&](size_t c, int r) { return start_run(b, configs[c], c, r, tag); },
          .collect = [&](size_t c, int r, const ChildOutcome& outcome) { end_run(b, configs[c], c, r, outcome); },
          // Runs are compared by their artifacts' entries, so with --repeats auto each round's
          // artifacts are read (break_down) before the round-runner decides.
          .runs = [&]() -> const std::vector<std::vector<TrialRun>>& {
            break_down({&b});
            return b.runs;
          },
          .name = [&](size_t c) { return configs[c].name; },
          .parallel = o_.jobs,
          .progress = o_.progress});
  if (stopped_by) *stopped_by = std::move(decided);
  return b;
}

ChildJob Session::start_run(Batch& b, const Config& config, size_t c, int r, const std::string& tag) {
  check_stop();
  records_.push_back(std::make_unique<RunRecord>());
  RunRecord& rec = *records_.back();
  rec.trial = next_trial_++;
  rec.dir = fmt::format("{}/{}t{}", scratch_.path(), tag, rec.trial);
  b.records[c][static_cast<size_t>(r)] = &rec;
  ChildJob j = job(config, rec.dir, rec.trial);
  rec.env = j.env;
  return j;
}

void Session::end_run(Batch& b, const Config& config, size_t c, int r, const ChildOutcome& outcome) {
  RunRecord& rec = *b.records[c][static_cast<size_t>(r)];
  collect(rec, outcome);
  TrialRun& run = b.runs[c][static_cast<size_t>(r)];
  run.repeat = r;
  run.process = outcome;
  run.timeout_s = o_.timeout_s;
  run.dump_path = rec.dir;
  if (!rec.ok) return;
  TrialResult result;
  for (const auto& t : rec.taken) result.tensors.push_back({t.name, "bytes", {t.bytes}, t.digest});
  for (const auto& [name, values] : rec.metrics) result.tensors.push_back(metric_entry(name, values));
  result.switches = run_switches(rec.hook, config, rec.env);
  result.wall_ms = outcome.wall_ms;
  run.result = std::move(result);
}

void Session::break_down(const std::vector<Batch*>& batches) {
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

report::DivergenceStats Session::local_stats(const RunRecord& a, const RunRecord& b, const std::string& name) const {
  if (name.rfind(kMetricPrefix, 0) == 0) {
    const std::string metric = name.substr(std::string(kMetricPrefix).size());
    const auto of = [&metric](const std::map<std::string, std::vector<std::string>>& m) {
      const auto it = m.find(metric);
      return it == m.end() ? std::vector<std::string>{} : it->second;
    };
    return metric_difference(of(a.metrics), of(b.metrics), of(a.metric_lines), of(b.metric_lines));
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

const Taken* Session::find_taken(const RunRecord& r, const std::string& name) {
  for (const auto& t : r.taken)
    if (t.name == name) return &t;
  return nullptr;
}

std::string Session::artifact_of(const std::string& entry) const {
  std::string best;
  for (const auto& [name, a] : artifacts_)
    if ((entry == name ||
         (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 && entry[name.size()] == ':')) &&
        name.size() > best.size())
      best = name;
  return best;
}

DiffFn Session::collect() {
  return [this](const std::string& a, const std::string& b, const std::vector<std::string>& names) {
    for (const auto& n : names) wanted_.push_back({a, b, n});
    return StatsAnswer{};
  };
}

void Session::resolve() {
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

DiffFn Session::answer() const {
  return [this](const std::string& a, const std::string& b, const std::vector<std::string>& names) {
    StatsAnswer out;
    for (const auto& n : names)
      if (const auto it = answers_.find(key(a, b, n)); it != answers_.end()) out[n] = it->second;
    return out;
  };
}

void Session::reset_stats() {
  wanted_.clear();
  pending_.clear();
}

bool Session::was_read(const std::string& name, const std::string& digest) const {
  const auto it = contents_.find(name + '\n' + digest);
  return it != contents_.end() && it->second.kind != "bytes";
}

const RunRecord* Session::record_at(const std::string& dir) const {
  for (const auto& r : records_)
    if (r->dir == dir) return r.get();
  return nullptr;
}

std::vector<report::ConfigResult> Session::analyse(Batch& b, const std::vector<Config>& configs) {
  break_down({&b});
  reset_stats();
  for (size_t c = 0; c < configs.size(); ++c) analyse_config(configs[c], b.runs[c], collect());
  resolve();
  std::vector<report::ConfigResult> out;
  for (size_t c = 0; c < configs.size(); ++c) out.push_back(analyse_config(configs[c], b.runs[c], answer()));
  // What the user named with --metric comes first, then the files (issue 43: the loss was listed
  // under "... and 2 more tensors", after the weights).
  for (auto& r : out)
    std::stable_partition(r.diverged_tensors.begin(), r.diverged_tensors.end(),
                          [](const report::TensorFinding& f) { return f.name.rfind(kMetricPrefix, 0) == 0; });
  return out;
}

std::vector<std::vector<std::optional<double>>> Session::time(const std::vector<Config>& configs, int rounds) {
  std::vector<std::vector<std::optional<double>>> out(configs.size());
  warm_up(configs);
  if (o_.progress) std::fprintf(stderr, "timing %zu configurations, %d rounds\n", configs.size(), rounds);
  Progress timing(configs.size() * static_cast<size_t>(rounds), o_.progress);
  for (int round = 0; round < rounds; ++round)
    for (size_t c = 0; c < configs.size(); ++c) {
      const int trial = next_trial_++;
      const std::string dir = fmt::format("{}/time{}", scratch_.path(), trial);
      const std::string what = fmt::format("timing {}", configs[c].name);
      const ChildProgress progress{timing, [&](size_t) { return what; },
                                   [&](size_t, const ChildOutcome& outcome) {
                                     return fmt::format("{} round {}: {:.0f} ms", what, round + 1, outcome.wall_ms);
                                   }};
      const ChildOutcome outcome = run_children({job(configs[c], dir, trial)}, 1, progress).front();
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

void Session::skip(int trial, const Skipped& k) {
  if (skipped_.emplace(k.name, k).second) log::warn("run {}: artifact '{}' not taken: {}", trial, k.name, k.reason);
}

std::string Session::skip_reason(const std::string& text) const {
  for (const auto& [name, k] : skipped_)
    if (text.empty() || k.pattern == text || k.pattern.empty()) return fmt::format(" ('{}': {})", name, k.reason);
  return "";
}

std::string Session::key(const std::string& a, const std::string& b, const std::string& n) {
  return a + '\n' + b + '\n' + n;
}

}  // namespace ra::exec::detail
