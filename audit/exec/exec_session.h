// SPDX-License-Identifier: Apache-2.0
// exec's runs of the command and what they are compared by (audit/exec/exec_audit.h is the audit
// kind around them). The problem: a command's results are the files it writes and the lines it
// prints, not a model's tensors, yet its verdicts must be those of `run`.
//
// What is compared. After each run its artifacts (audit/exec/artifacts.h) are taken into the run's
// folder and digested by bytes, and the --metric values are read from its stdout
// (audit/exec/metrics.h): a run's results are one entry per artifact and per metric. Where an
// artifact's bytes differ between runs and it is a torch.save or safetensors file, the worker
// reads every version once and the artifact's entry is replaced by one entry per tensor or plain
// value ("ckpt.pt:model/fc.weight", "ckpt.pt:epoch"), so that the verdict, the divergence rates
// and the statistics are those of `run` (audit/trial/analysis.h), entry by entry, and two files
// whose bytes differ but whose contents do not are equal. A file that does not read as its kind is
// compared by bytes, with a note.
//
// The cost per run, besides the command: moving its artifacts (a rename on one filesystem),
// digesting their bytes once, reading its stdout, and the hook's work inside the program. The
// worker (LibTorch) starts only when artifacts differ.
#pragma once

#include "audit/common/files.h"
#include "audit/common/progress.h"
#include "audit/exec/artifacts.h"
#include "audit/exec/exec_audit.h"
#include "audit/exec/hook_report.h"
#include "audit/skeleton/rounds.h"
#include "audit/trial/analysis.h"
#include "audit/trial/config.h"
#include "audit/trial/runner.h"
#include "audit/trial/worker_client.h"
#include "reports/model.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ra::exec::detail {

// What a run left besides its process outcome: its folder, artifacts, metrics and hook reports.
struct RunRecord {
  std::string dir;
  std::vector<Taken> taken;
  std::map<std::string, std::vector<std::string>> metrics;
  std::map<std::string, std::vector<std::string>> metric_lines;  // the line of each value (MetricScan::lines)
  HookRun hook;
  std::map<std::string, std::optional<std::string>> env;  // what the command was given, beyond the parent's
  int trial = 0;                                          // its number: REPRO_AUDIT_TRIAL, {trial} in artifacts
  bool ok = false;
};

// The runs of one batch of configurations, by configuration then repeat.
struct Batch {
  std::vector<std::vector<TrialRun>> runs;
  std::vector<std::vector<RunRecord*>> records;
};

// The runs of one audit, each in its own folder below `scratch`, and what they left.
class Session {
 public:
  // InputError when the start-up hook (share/exec/sitecustomize.py) is missing.
  Session(const ExecOptions& o, const ScratchDir& scratch, const ArtifactRoots& roots, std::string executable);

  // The environment a run of `config` gets, beyond the parent's.
  std::map<std::string, std::optional<std::string>> environment(const Config& config, const std::string& dir,
                                                                int trial) const;
  // The Inductor cache folder of a run of `config` in `dir`: its own (cold), the configuration's
  // warm one, or "" (the user's).
  std::string cache_folder(const Config& config, const std::string& dir) const;
  // inductor.cache=warm: one folder per configuration, filled by one untimed run of the command
  // before its first audited or timed run (audit/exec/compile_switches.h).
  void warm_up(const std::vector<Config>& configs);
  // The child job of one run of `config` in `dir`, its folders made.
  ChildJob job(const Config& config, const std::string& dir, int trial) const;
  // After a run: takes its artifacts, reads its metrics and its hook's reports.
  void collect(RunRecord& r, const ChildOutcome& outcome);
  // Runs every configuration `repeats` times, or with --repeats auto in rounds until each is
  // decided (the round-runner, audit/skeleton/rounds.h; `stopped_by`, when given, gets what decided
  // each). Repeat-major, each run in its own folder. Runs are compared by their artifacts'
  // entries, not bytes, so each round's artifacts are read before deciding.
  Batch run(const std::vector<Config>& configs, int repeats, const std::string& tag,
            std::vector<std::string>* stopped_by = nullptr);
  // The child of repeat r of configuration c (`config`) in `b`, its record and folder made as it
  // starts; then, as it ends, what it left as that repeat's run.
  ChildJob start_run(Batch& b, const Config& config, size_t c, int r, const std::string& tag);
  void end_run(Batch& b, const Config& config, size_t c, int r, const ChildOutcome& outcome);
  // Replaces, in every completed run, the byte-level entry of each torch.save or safetensors
  // artifact whose bytes differ between runs by its entries, read once per distinct version.
  void break_down(const std::vector<Batch*>& batches);
  // Statistics between two runs (their folders) for entries of their results.
  report::DivergenceStats local_stats(const RunRecord& a, const RunRecord& b, const std::string& name) const;
  // The artifact `name` among a run's, nullptr for none.
  static const Taken* find_taken(const RunRecord& r, const std::string& name);
  // The artifact an entry belongs to ("ckpt.pt:model/w" -> "ckpt.pt"), "" for none.
  std::string artifact_of(const std::string& entry) const;
  // A DiffFn over run folders: metrics and byte-compared files here, entries of read files in one
  // worker (collect, then resolve, then answer, as BatchedDiff).
  DiffFn collect();
  // Computes what collect() was asked: here, or in one worker for entries of read files.
  void resolve();
  // A DiffFn that answers from what resolve() computed.
  DiffFn answer() const;
  // Forgets what collect() was asked, before another round of questions.
  void reset_stats();
  // Whether version `digest` of artifact `name` was read by its entries.
  bool was_read(const std::string& name, const std::string& digest) const;
  // The run whose folder is `dir`, nullptr for none.
  const RunRecord* record_at(const std::string& dir) const;
  // Analyses a batch: entries broken down, then every configuration.
  std::vector<report::ConfigResult> analyse(Batch& b, const std::vector<Config>& configs);
  // Timing for the fix search: `rounds` rounds, each one run of every configuration in turn.
  std::vector<std::vector<std::optional<double>>> time(const std::vector<Config>& configs, int rounds);
  // A match not taken: said once per name on stderr, kept for the report and for the errors that
  // say an --artifact matched nothing.
  void skip(int trial, const Skipped& k);
  const std::map<std::string, Skipped>& skipped() const { return skipped_; }
  // Why pattern `text` (or, for "", any) matched nothing, when a match was skipped: " (skipped: ...)".
  std::string skip_reason(const std::string& text) const;

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
  static std::string key(const std::string& a, const std::string& b, const std::string& n);

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
};

}  // namespace ra::exec::detail
