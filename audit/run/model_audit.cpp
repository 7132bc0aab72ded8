// SPDX-License-Identifier: Apache-2.0
// The parent never initialises CUDA (it does not even link LibTorch): it writes trial specs, starts
// children, reads their results, and asks the worker for statistics from the children's CPU dumps
// (audit/trial/worker_client.h). The preflight child checks the model, the inputs and the device once,
// and brings back the environment fingerprint.
#include "audit/run/model_audit.h"
#include "audit/run/warm_up.h"

#include "audit/skeleton/audit_kind.h"
#include "audit/skeleton/rounds.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/common/log.h"
#include "audit/common/paths.h"
#include "audit/common/progress.h"
#include "audit/common/stop.h"
#include "audit/common/zip_check.h"
#include "audit/knowledge/knowledge.h"
#include "audit/trace/fix_search.h"
#include "audit/trace/op_stream.h"
#include "audit/trace/trace_align.h"
#include "audit/trace/trace_io.h"
#include "audit/train/replay.h"
#include "audit/trial/analysis.h"
#include "audit/trial/runner.h"
#include "audit/trial/trials.h"
#include "audit/trial/worker_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <unistd.h>

namespace ra {
namespace {

TrialSpec base_spec(const RunOptions& o) {
  TrialSpec s;
  s.model = std::filesystem::absolute(o.model).string();
  s.input_file = o.input_file.empty() ? "" : std::filesystem::absolute(o.input_file).string();
  s.shapes = o.shapes;
  s.vocab = o.vocab;
  s.device = o.device;
  s.mode = o.mode;
  s.steps = o.steps;
  s.optimizer = o.optimizer;
  s.lr = o.lr;
  s.seed = o.seed;
  s.load_libraries = o.load_libraries;
  return s;
}

// The preflight: fingerprint, and one forward pass that turns every problem of the model, the
// inputs or the device into one clear error before any trial runs.
TrialResult preflight(const RunOptions& o, const ScratchDir& scratch) {
  TrialSpec spec = base_spec(o);
  spec.task = ChildTask::Preflight;
  spec.config = Config{"preflight", {}};
  // Named, never written: a target that cannot be traced says so here, before any trial.
  if (o.trace) spec.trace_path = scratch.path() + "/preflight.trace.jsonl";
  const PreparedChild p = prepare_child(scratch, "preflight", spec, o.timeout_s);
  const ChildOutcome outcome = run_children({p.job}, 1).front();
  const auto result = read_result(p.result_path);
  if (outcome.kind == ChildOutcome::Kind::TimedOut)
    throw InputError(fmt::format("the model did not load and run once within --timeout {:g} s", o.timeout_s));
  if (!result || outcome.kind != ChildOutcome::Kind::Exited || outcome.exit_code != 0) {
    check_worker_loaded(outcome);  // the worker itself could not start: not the model's fault
    TrialRun run;
    run.process = outcome;
    const std::string last = last_line(outcome.log_tail);
    // A crash signal here is the loader's or the model's own crash, never a verdict: say where to
    // look. Any other signal came from outside the process, which the trial's message says
    // (signal_text, audit/trial/analysis.h), rather than blame the file.
    const bool signaled = outcome.kind == ChildOutcome::Kind::Signaled;
    const std::string why = !signaled ? ""
                            : crash_signal(outcome.signal)
                                ? "; a damaged file, or a crash in LibTorch's loader or in the model's own code"
                                : "; not a fault of the file or the model";
    throw InputError(fmt::format("model '{}' could not be loaded and run once: {}{}{}", o.model,
                                 summarise_trial(run).message, last.empty() ? "" : " (" + last + ")", why));
  }
  if (result->status != report::TrialStatus::Ok) {
    if (result->error_kind == "usage") throw UsageError(result->message);
    throw InputError(result->message);
  }
  return *result;
}

// The spec of a trial of `config` named `name` in the scratch folder, with its trace file when
// `trace` (the replay's restart point is recorded whenever --replay is on).
TrialSpec trial_spec(const RunOptions& o, const ScratchDir& scratch, const Config& config, int repeat,
                     const std::string& name, bool trace) {
  TrialSpec spec = base_spec(o);
  spec.config = config;
  spec.repeat = repeat;
  if (o.replay) spec.state_step = o.steps / 2;
  if (trace) {
    spec.trace_path = scratch.path() + "/" + name + ".trace.jsonl";
    spec.trace_capacity = o.trace_capacity;
  }
  return spec;
}

// Runs the trials of each configuration, each in its own child, repeat-major (so that --jobs runs
// different configurations side by side), and returns each configuration's runs and trace files:
// `repeats` of each, or with --repeats auto (RunOptions::auto_repeats) rounds of them until each
// configuration is decided (the round-runner, audit/skeleton/rounds.h).
struct Batch {
  std::vector<std::vector<TrialRun>> runs;
  std::vector<std::vector<std::string>> traces;  // per configuration, per run ("" without trace)
  std::vector<std::string> stopped_by;           // per configuration, --repeats auto: what decided it
};

class BatchRunner {
 public:
  // With `placement`, configuration c's children run on GPU slot `slot` (when not -1) or on the
  // configuration's own slot, at most placement->per_slot children per GPU at a time.
  BatchRunner(const RunOptions& o, const ScratchDir& scratch, const std::vector<Config>& configs, std::string tag,
              bool trace, const DevicePlacement* placement, int slot)
      : o_(o),
        scratch_(scratch),
        configs_(configs),
        tag_(std::move(tag)),
        trace_(trace),
        placement_(placement),
        slot_(slot) {
    b_.runs.resize(configs.size());
    b_.traces.resize(configs.size());
    b_.stopped_by.resize(configs.size());
    finished_.resize(configs.size());
  }

  Batch run(int repeats) {
    SlotFn slot_of;
    if (placement_) slot_of = [this](size_t c) { return static_cast<int>(slot(c)); };
    b_.stopped_by = run_rounds(
        configs_.size(), repeats, o_.auto_repeats,
        TrialParts{.grow = [this](size_t c, int n) { grow(c, n); },
                   .make = [this](size_t c, int r) { return make(c, r); },
                   .collect = [this](size_t c, int r, const ChildOutcome& outcome) { collect(c, r, outcome); },
                   .runs = [this]() -> const std::vector<std::vector<TrialRun>>& { return b_.runs; },
                   .name = [this](size_t c) { return configs_[c].name; },
                   .parallel = o_.jobs,
                   .slot_of = slot_of,
                   .per_slot = placement_ ? placement_->per_slot : 1,
                   .progress = o_.progress});
    return std::move(b_);
  }

 private:
  // Configuration c is to hold n runs.
  void grow(size_t c, int n) {
    b_.runs[c].resize(static_cast<size_t>(n));
    b_.traces[c].resize(static_cast<size_t>(n));
    finished_[c].resize(static_cast<size_t>(n), 0);
  }

  // The child of repeat r of configuration c, made as it starts (a spec is written just before its
  // trial and removed after, so --repeats 1000000 holds no million specs in memory or on disk).
  ChildJob make(size_t c, int r) {
    const std::string name = fmt::format("{}c{}-r{}", tag_, c, r);
    TrialSpec spec = trial_spec(o_, scratch_, configs_[c], r, name, trace_);
    if (tag_.empty()) spec.calls = o_.calls;  // the audit's own trials, not a fix search's
    spec.reference_dump = o_.reference_dump;  // every trial measures itself against the referee
    std::vector<const TrialRun*> earlier;
    for (int k = 0; k < r; ++k)
      earlier.push_back(finished_[c][static_cast<size_t>(k)] ? &b_.runs[c][static_cast<size_t>(k)] : nullptr);
    if (auto digests = reference_digests(earlier); !digests.empty()) spec.dump_only_differing[""] = std::move(digests);
    b_.traces[c][static_cast<size_t>(r)] = spec.trace_path;
    check_stop();
    const std::string gpu = placement_ ? placement_->visible[slot(c)] : "";
    return started_.insert_or_assign({c, r}, prepare_child(scratch_, name, spec, o_.timeout_s, true, gpu))
        .first->second.job;
  }

  void collect(size_t c, int r, const ChildOutcome& outcome) {
    const PreparedChild& p = started_.at({c, r});
    TrialRun& run = b_.runs[c][static_cast<size_t>(r)];
    run.repeat = r;
    run.process = outcome;
    run.result = read_result(p.result_path);
    run.dump_path = p.dump_path;
    run.timeout_s = o_.timeout_s;
    if (placement_) run.device = placement_->names[slot(c)];
    ::unlink(p.result_path.c_str());  // read: the dump and the trace stay for the analysis
    finished_[c][static_cast<size_t>(r)] = 1;
    if (run.result && !run.result->dump_error.empty() && !warned_dump_) {
      log::warn("{} repeat {}: its tensors could not be dumped for divergence statistics ({}); is TMPDIR full?",
                configs_[c].name, r, run.result->dump_error);
      warned_dump_ = true;  // once: the others fail the same way
    }
    started_.erase({c, r});
  }

  size_t slot(size_t config) const { return slot_ >= 0 ? static_cast<size_t>(slot_) : placement_->slot_of(config); }

  const RunOptions& o_;
  const ScratchDir& scratch_;
  const std::vector<Config>& configs_;
  const std::string tag_;
  const bool trace_;
  const DevicePlacement* placement_;
  const int slot_;
  Batch b_;
  std::vector<std::vector<char>> finished_;                  // per configuration, per repeat
  std::map<std::pair<size_t, int>, PreparedChild> started_;  // the children running, by (configuration, repeat)
  bool warned_dump_ = false;
};

Batch run_batch(const RunOptions& o, const ScratchDir& scratch, const std::vector<Config>& configs, int repeats,
                const std::string& tag, bool trace, const DevicePlacement* placement = nullptr, int slot = -1) {
  return BatchRunner(o, scratch, configs, tag, trace, placement, slot).run(repeats);
}

// Reads the traces of a configuration's completed runs (the reference run first) and names the
// root causes; `stream` gets the reference run's op stream (for --save-baseline). A trace that
// cannot be read is left out, with a warning.
std::optional<report::TraceSummary> summarise_traces(const std::vector<TrialRun>& runs,
                                                     const std::vector<std::string>& paths,
                                                     std::optional<report::OpStream>& stream) {
  const int ref = reference_index(runs);
  if (ref < 0) return std::nullopt;
  std::vector<size_t> order = {static_cast<size_t>(ref)};
  for (size_t i = 0; i < runs.size(); ++i)
    if (static_cast<int>(i) != ref) order.push_back(i);
  std::vector<trace::Trace> traces;
  std::vector<int> repeats;
  for (size_t i : order) {
    const auto& run = runs[i];
    if (!run.result || run.result->status != report::TrialStatus::Ok || paths[i].empty()) continue;
    try {
      traces.push_back(trace::read_trace(paths[i]));
      repeats.push_back(run.repeat);
    } catch (const trace::TraceError& e) {
      log::warn("repeat {}: {}", run.repeat, e.what());
    }
  }
  if (traces.empty()) return std::nullopt;
  if (repeats.front() == runs[static_cast<size_t>(ref)].repeat) stream = trace::pack_op_stream(traces.front());
  return trace::analyse_traces(traces, repeats);
}

report::ConfigResult analyse_runs(const Config& config, const std::vector<TrialRun>& runs,
                                  const std::vector<std::string>& traces, bool trace, const DiffFn& diff) {
  report::ConfigResult result = analyse_config(config, runs, diff);
  if (trace) result.trace = summarise_traces(runs, traces, result.op_stream);
  return result;
}

// Medians of timed, uninstrumented runs of each configuration, one child after another so that
// they do not compete for the machine.
// Times configurations side by side, interleaved: kTimingRounds rounds, each one child per
// configuration in turn (A B C A B C ...), one at a time, each with a warm-up run and its share of
// --timed-runs (at least one). A slow spell on a busy machine then hits neighbouring children of
// every configuration alike, and the per-round ratios show how much the figures move.
std::vector<std::vector<std::optional<double>>> time_configs(const RunOptions& o, const ScratchDir& scratch,
                                                             const std::vector<Config>& configs,
                                                             const std::string& tag) {
  const int per_child = std::max(1, o.timed_runs / report::kTimingRounds);
  std::vector<PreparedChild> prepared;
  for (int round = 0; round < report::kTimingRounds; ++round)
    for (size_t c = 0; c < configs.size(); ++c) {
      TrialSpec spec = base_spec(o);
      spec.config = configs[c];
      spec.timed_runs = per_child;
      prepared.push_back(
          prepare_child(scratch, fmt::format("{}t{}r{}", tag, c, round), spec, o.timeout_s, /*dump=*/false));
    }
  std::vector<ChildJob> jobs;
  for (const auto& p : prepared) jobs.push_back(p.job);
  if (o.progress) std::fprintf(stderr, "timing %zu configurations, %d rounds\n", configs.size(), report::kTimingRounds);
  Progress timing(jobs.size(), o.progress);
  const auto name = [&](size_t i) { return fmt::format("timing {}", configs[i % configs.size()].name); };
  run_children(jobs, 1, ChildProgress{timing, name, [&](size_t i, const ChildOutcome& out) {
                                        return fmt::format("{}: {:.0f} ms", name(i), out.wall_ms);
                                      }});
  std::vector<std::vector<std::optional<double>>> rounds(configs.size());
  for (size_t i = 0; i < prepared.size(); ++i) {
    const auto result = read_result(prepared[i].result_path);
    const bool ok = result && result->status == report::TrialStatus::Ok;
    rounds[i % configs.size()].push_back(ok ? report::median(result->run_ms) : std::nullopt);
  }
  return rounds;
}

// Divergence statistics of a root cause's outputs. Traces keep digests, not values, so a few more
// traced runs of the configuration each keep a copy of the outputs of the op at the root cause's
// position (checked to be the same op); the first two copies that differ are compared.
void capture_root_cause_stats(const RunOptions& o, const ScratchDir& scratch, const Config& config,
                              report::RootCause& rc, const std::string& tag) {
  constexpr int kCaptureRuns = 3;
  std::vector<PreparedChild> prepared;
  std::vector<std::string> traces, captures;
  for (int r = 0; r < kCaptureRuns; ++r) {
    const std::string name = fmt::format("{}cap{}-{}", tag, rc.position, r);
    TrialSpec spec = trial_spec(o, scratch, config, r, name, /*trace=*/true);
    spec.capture_order = static_cast<int64_t>(rc.position);
    spec.capture_path = scratch.path() + "/" + name + ".capture.pt";
    traces.push_back(spec.trace_path);
    captures.push_back(spec.capture_path);
    prepared.push_back(prepare_child(scratch, name, spec, o.timeout_s, /*dump=*/false));
  }
  std::vector<ChildJob> jobs;
  for (const auto& p : prepared) jobs.push_back(p.job);
  run_children(jobs, o.jobs);
  std::vector<std::string> usable;
  for (size_t i = 0; i < prepared.size(); ++i) {
    try {
      const trace::Trace t = trace::read_trace(traces[i]);
      for (const auto& r : t.records)
        if (r.order == rc.position && r.op == rc.op) usable.push_back(captures[i]);
    } catch (const trace::TraceError& e) {
      log::debug("capture run {}: {}", i, e.what());
    }
  }
  const int output = rc.differing_outputs.empty() ? 0 : rc.differing_outputs.front();
  const std::string name = fmt::format("output/{}", output);
  for (size_t a = 0; a < usable.size(); ++a)
    for (size_t b = a + 1; b < usable.size(); ++b) {
      const auto stats = worker_diff(scratch, o.timeout_s, o.tolerance)(usable[a], usable[b], {name});
      const auto it = stats.find(name);
      if (it != stats.end() && it->second.note.empty() && it->second.differing > 0) {
        rc.stats = it->second;
        // The op's own class: its float64 rerun on the inputs the run kept, or a write race.
        if (o.referee != RefereeMode::Off)
          rc.referee = classify_root_cause(
              rc, worker_op_class(scratch, {usable[a] + ".call", usable[a], usable[b], output}, o.timeout_s));
        return;
      }
    }
  report::DivergenceStats none;
  none.note =
      fmt::format("output {} was bitwise identical in the {} runs repeated to capture it", output, usable.size());
  rc.stats = none;
}

// Knowledge-base advice for the ops that raised, and which candidates fix which root cause. Where no
// switch made it reproducible, the conclusion also gives the advice of each entry for a root cause's
// op that deterministic mode leaves nondeterministic (as documented, or as measured on a real card:
// adaptive_max_pool3d's backward on CUDA), which says what to do instead of a switch.
void annotate_fixes(report::ConfigResult& result, const Device& device) {
  auto& fs = *result.fix_search;
  std::optional<KnowledgeBase> kb;
  try {
    kb = load_knowledge(knowledge_path());
  } catch (const std::exception& e) {
    log::debug("no knowledge base for fix advice: {}", e.what());
  }
  if (kb)
    for (auto& n : fs.no_deterministic)
      for (const auto& e : kb->entries)
        if (!e.alert.empty() && e.alert == n.op) n.advice = e.advice;
  if (!result.trace) return;
  if (kb && fs.best.empty()) {
    std::set<std::string> advised;
    for (const auto& rc : result.trace->root_causes)
      for (const auto& e : kb->entries) {
        if (!KnowledgeBase::applies_to(e, device) || advised.count(e.id)) continue;
        if (std::find(e.ops.begin(), e.ops.end(), rc.op) == e.ops.end() &&
            std::find(e.ops.begin(), e.ops.end(), rc.forward_op) == e.ops.end())
          continue;
        const Measurement* m = e.measured_on(device);
        const Behaviour det =
            m != nullptr ? *measured_under_det(*m) : KnowledgeBase::behaviour_under(e, "deterministic");
        if (det != Behaviour::Unaffected || e.severity != "error") continue;
        advised.insert(e.id);
        fs.conclusion += fmt::format("; {} ({}): {}", rc.forward_op.empty() ? rc.op : rc.forward_op, e.id, e.advice);
      }
  }
  for (auto& rc : result.trace->root_causes)
    for (size_t i = 0; i < fs.candidates.size(); ++i) {
      const auto& f = fs.candidates[i].fixes;
      if (std::find(f.begin(), f.end(), rc.position) != f.end()) rc.fixed_by.push_back(i);
    }
}

// What names a model audit's plan (fleet/shard.h): the session's options, the model's identity
// and inputs, and what the trials do.
nlohmann::ordered_json run_plan(const RunOptions& o, const report::Target& target) {
  nlohmann::ordered_json plan = fleet::session_plan(o, "run");
  plan["model"] = target.model_digest;
  plan["input"] = target.input_digest;
  plan["inputs"] = target.inputs;
  plan["mode"] = o.mode;
  if (o.mode == "train") plan["train"] = {o.steps, o.optimizer, o.lr};
  if (o.calls > 1) plan["calls"] = o.calls;
  plan["referee"] = to_string(o.referee);
  plan["trace"] =
      o.trace ? nlohmann::ordered_json{o.trace_capacity, o.fix_search, o.timed_runs} : nlohmann::ordered_json(false);
  return plan;
}

// The model's target as the report names it, before any result, from the options and the preflight.
report::RunTarget model_target(const RunOptions& o, const TrialResult& pre, bool native) {
  report::RunTarget model;
  report::Target& target = model.common;
  target.name = std::filesystem::path(o.model).filename().string();
  target.path = o.model;
  target.model_digest = file_digest(o.model, "model");
  if (!o.input_file.empty()) target.input_digest = file_digest(o.input_file, "input file");
  target.device = o.device.to_string();
  target.mode = o.mode;
  target.seed = o.seed;
  target.inputs = pre.input_descriptions;
  target.weights_digest = pre.weights_digest;
  target.graph_digest = pre.graph_digest;
  target.notes = pre.warnings;
  if (native)
    target.notes.insert(
        target.notes.begin(),
        "this AOTInductor package's compiled library (.so) was loaded and ran as native code in the audit's "
        "worker processes, with your rights: auditing a package trusts it (run --no-native refuses packages)");
  report::RunFacts& facts = model.facts;
  facts.steps = o.mode == "train" ? o.steps : 0;
  facts.optimizer = o.mode == "train" ? o.optimizer : "";
  facts.lr = o.mode == "train" ? o.lr : 0;
  facts.input_names = pre.input_names;
  facts.package = pre.package;
  return model;
}

// `run` as an audit kind (audit/skeleton/audit_kind.h): one target, the model; a cell is a
// configuration with all its repeats.
class ModelAudit : public AuditKind {
 public:
  explicit ModelAudit(const RunOptions& o) : o_(o) {}  // a copy: --trace may be dropped after the preflight

  AuditPlan plan() override {
    native_ = check_model();
    log::debug("scratch folder {}", scratch_.path());
    const TrialResult pre = preflight(o_, scratch_);
    // A note on what --trace cannot see is the report's (target.notes, printed with the summary):
    // said once there, not again on stderr.
    for (const auto& w : pre.warnings)
      if (w.rfind("--trace: ", 0) == 0)
        log::debug("{}", w);
      else
        log::warn("{}", w);
    if (!pre.untraceable.empty()) {
      log::warn("--trace: {}", pre.untraceable);
      o_.trace = false;
    }
    report::RunTarget model = model_target(o_, pre, native_);
    AuditPlan plan;
    plan.environment = pre.environment;
    plan.identity = run_plan(o_, model.common);
    plan.body = report::RunBody{{std::move(model)}};
    environment_ = pre.environment;
    return plan;
  }

  void run(const Cells& cells) override {
    for (const size_t c : cells.configs[0]) configs_.push_back(o_.configs[c]);
    placement_ = session_placement(o_, environment_);
    if (o_.referee != RefereeMode::Off && !configs_.empty()) run_referee();
    batch_ = run_batch(o_, scratch_, configs_, o_.repeats, "", o_.trace, place());
  }

  void analyse(const Cells& cells, report::Report& rep) override {
    if (placement_) rep.contention = contention_note(*placement_, o_.jobs);
    report::RunTarget& model = std::get<report::RunBody>(rep.body).targets.front();
    report::Target& target = model.common;
    if (referee_) target.referee = *referee_;
    analyse_configs(cells, target);
    if (o_.calls > 1)
      for (size_t c = 0; c < configs_.size(); ++c)
        target.configs[c].warm_up = compare_calls(batch_.runs[c], batch_.traces[c], o_.calls);
    if (o_.trace) capture_stats(target);
    if (o_.trace && o_.fix_search) fix_search(target);
    if (o_.replay)
      model.facts.replay = run_replay({base_spec(o_), o_.replay_omit, &scratch_, o_.timeout_s,
                                       worker_diff(scratch_, o_.timeout_s, o_.tolerance), o_.progress},
                                      configs_, target.configs, batch_.runs);
  }

 private:
  // The model's checks before any worker opens it; true for native code (an AOTInductor package).
  bool check_model() const {
    check_readable(o_.model, "model");
    if (!o_.input_file.empty()) check_readable(o_.input_file, "input file");
    for (const auto& lib : o_.load_libraries) check_readable(lib, "library");
    // An archive is checked here, before any worker opens it (entry names, sizes, the budget:
    // audit/common/zip_check.h). An AOTInductor package's compiled library is native code that the
    // worker loads and runs: the report says so, and --no-native refuses it before it is unpacked.
    const bool native =
        looks_like_zip(o_.model) && is_aoti_package(checked_zip_entries(o_.model, fmt::format("model '{}'", o_.model)));
    if (native && o_.no_native)
      throw InputError(
          fmt::format("model '{}' is an AOTInductor package, whose compiled library is native code that would run "
                      "in the audit's processes, and --no-native refuses native code",
                      o_.model));
    return native;
  }

  const DevicePlacement* place() const { return placement_ ? &*placement_ : nullptr; }

  // The reference run's trace of configuration c ("" without one).
  std::string reference_trace(size_t c) const {
    const int ref = reference_index(batch_.runs[c]);
    return ref >= 0 && o_.trace ? batch_.traces[c][static_cast<size_t>(ref)] : "";
  }

  // Each configuration's verdict and statistics, from one worker (a first pass collects the
  // requests), and the dependence between configurations, explained op by op when traced.
  void analyse_configs(const Cells& cells, report::Target& target) {
    std::vector<std::string> reference_dumps;
    for (size_t c = 0; c < configs_.size(); ++c) {
      const int ref = reference_index(batch_.runs[c]);
      reference_dumps.push_back(ref >= 0 ? batch_.runs[c][static_cast<size_t>(ref)].dump_path : "");
      if (cells.shard && cells.shard->shared(0))
        cells.shard->keep(0, cells.configs[0][c], reference_dumps.back(), reference_trace(c));
    }
    BatchedDiff stats(scratch_, o_.timeout_s, o_.tolerance);
    {
      std::vector<report::ConfigResult> first;
      for (size_t c = 0; c < configs_.size(); ++c)
        first.push_back(analyse_config(configs_[c], batch_.runs[c], stats.collect()));
      configuration_dependence(first, reference_dumps, stats.collect());
    }
    stats.resolve();
    for (size_t c = 0; c < configs_.size(); ++c) {
      target.configs.push_back(analyse_runs(configs_[c], batch_.runs[c], batch_.traces[c], o_.trace, stats.answer()));
      target.configs.back().stopped_by = batch_.stopped_by[c];
      if (referee_) attach_referee(target.configs.back(), batch_.runs[c], *referee_);
    }
    if (referee_ && referee_->ran) decide_uninitialized(target);
    target.dependence = configuration_dependence(target.configs, reference_dumps, stats.answer());
    if (referee_ && target.dependence) classify_dependence(*target.dependence, target.configs, *referee_);
    if (referee_ && referee_->ran && any_beyond_reordering(target.configs, target.dependence))
      weigh_conditioning(target.configs, target.dependence, conditioning_errors());
    keep_tensors(reference_dumps, target);
    if (!o_.trace || !target.dependence) return;
    std::vector<std::string> traces;
    std::vector<int> repeats;
    for (size_t c = 0; c < configs_.size(); ++c) {
      const int ref = reference_index(batch_.runs[c]);
      traces.push_back(ref >= 0 ? batch_.traces[c][static_cast<size_t>(ref)] : "");
      repeats.push_back(ref >= 0 ? batch_.runs[c][static_cast<size_t>(ref)].repeat : 0);
    }
    trace::explain_dependence(*target.dependence, target.configs, traces, repeats);
  }

  // Copies each configuration's reference dump out of the scratch folder, for the finish
  // (SessionOptions::keep_tensors): --baseline-tensors saves them, a baseline's are measured against them.
  void keep_tensors(const std::vector<std::string>& reference_dumps, report::Target& target) const {
    for (size_t c = 0; c < reference_dumps.size() && c < target.configs.size(); ++c)
      target.configs[c].reference_tensors =
          keep_reference_tensors(o_, reference_dumps[c], fmt::format("c{}.pt", c), configs_[c].name);
  }

  // The float64 referee (audit/trial/referee.h): one child, after the preflight and before the trials,
  // on the CPU (or the audited device with --referee device). An AOTInductor package cannot run in
  // float64: one line, without a child.
  void run_referee() {
    const Device where = o_.referee == RefereeMode::Device ? o_.device : Device::cpu();
    if (native_) {
      referee_ = referee_refused(o_.referee, where, "an AOTInductor package: its kernels are compiled for one dtype");
    } else {
      log::debug("float64 referee: one run of the model in float64 on {}", where.to_string());
      std::string dump;
      const TrialRun run = run_float64(where, false, dump);
      const report::Trial summary = summarise_trial(run);
      referee_ = referee_outcome(o_.referee, where, summary, run.result);
      if (referee_->ran) o_.reference_dump = dump;
      // A worker the loader cannot start fails every trial too, whose one line says why: no second one.
      if (summary.message.starts_with("could not start")) return;
    }
    if (!referee_->ran) log::warn("{}", report::referee_note_line(*referee_));
  }

  // Differences the referee did not call reordering, in a configuration that leaves memory nobody
  // wrote as it finds it: two reruns with that memory filled decide whether they came from it
  // (audit/trial/referee.h, classify_uninitialized).
  void decide_uninitialized(report::Target& target) {
    RunOptions twice = o_;
    twice.auto_repeats.reset();
    for (size_t c = 0; c < configs_.size() && c < target.configs.size(); ++c) {
      report::ConfigResult& r = target.configs[c];
      const std::optional<Config> rerun = fill_rerun_config(configs_[c]);
      if (!rerun || !worth_fill_rerun(r)) continue;
      log::info("float64 referee: rerunning {} with uninitialized memory filled", r.name);
      const Batch b = run_batch(twice, scratch_, {*rerun}, 2, fmt::format("fill{}-", c), false, place(),
                                place() ? static_cast<int>(place()->slot_of(c)) : -1);
      const std::string op = r.trace && !r.trace->root_causes.empty() ? r.trace->root_causes.front().op : "";
      classify_uninitialized(r, b.runs[0], rerun->name, op);
    }
  }

  // One float64 child on `where`: the referee (its dump's path in `dump`), or the conditioning run (its
  // inputs moved by one rounding, measured against the referee's dump, no dump of its own).
  TrialRun run_float64(const Device& where, bool conditioning, std::string& dump) {
    TrialSpec spec = base_spec(o_);
    spec.task = ChildTask::Referee;
    spec.device = where;
    spec.config = referee_config(where);
    spec.precision = "float64";
    if (conditioning) {
      spec.perturb_inputs = true;
      spec.reference_dump = o_.reference_dump;
    }
    const std::string gpu = where.is_cuda() && placement_ ? placement_->visible.front() : "";
    const PreparedChild p =
        prepare_child(scratch_, conditioning ? "conditioning" : "referee", spec, o_.timeout_s, !conditioning, gpu);
    dump = p.dump_path;
    TrialRun run;
    run.process = run_children({p.job}, 1).front();
    run.result = read_result(p.result_path);
    run.timeout_s = o_.timeout_s;
    return run;
  }

  // The conditioning run (audit/trial/referee.h): the referee once more, its floating inputs moved by
  // one rounding of their dtype, measured against the referee's dump. Its errors by tensor; none,
  // with a warning, when it fails (the classes then stand as the ULP figures give them).
  std::vector<report::ReferenceError> conditioning_errors() {
    log::debug("float64 referee: one more run, its inputs moved by one rounding, for the conditioning");
    std::string unused;
    const TrialRun run =
        run_float64(o_.referee == RefereeMode::Device ? o_.device : Device::cpu(), /*conditioning=*/true, unused);
    const report::Trial summary = summarise_trial(run);
    if (summary.status != report::TrialStatus::Ok || !run.result) {
      log::warn("float64 referee: the conditioning run failed ({}); differences beyond reordering stay so classed",
                excerpt(summary.message, 200));
      return {};
    }
    return run.result->errors;
  }

  // Divergence statistics of the first few root causes of each diverged configuration.
  void capture_stats(report::Target& target) {
    for (size_t c = 0; c < configs_.size(); ++c)
      if (target.configs[c].trace && target.configs[c].verdict == report::Verdict::Diverged) {
        auto& causes = target.configs[c].trace->root_causes;
        constexpr size_t kCapturedCauses = 3;  // statistics for the first few; the rest keep digests only
        for (size_t i = 0; i < causes.size() && i < kCapturedCauses; ++i)
          capture_root_cause_stats(o_, scratch_, configs_[c], causes[i], fmt::format("c{}-", c));
        inherit_write_race(target.configs[c]);
      }
  }

  // The fix search of each diverged configuration: candidates run on the failing configuration's GPU.
  void fix_search(report::Target& target) {
    int searches = 0;
    for (size_t c = 0; c < configs_.size(); ++c) {
      report::ConfigResult& failing = target.configs[c];
      if (failing.verdict != report::Verdict::Diverged) continue;
      const std::string tag = fmt::format("fix{}-", searches++);
      int candidates = 0, most_runs = 0;
      const EvaluateFn evaluate = [&](const Config& config) {
        log::info("fix search for {}: trying {}", failing.name, config.name);
        const Batch b = run_batch(o_, scratch_, {config}, o_.repeats, fmt::format("{}{}", tag, candidates++), true,
                                  place(), place() ? static_cast<int>(place()->slot_of(c)) : -1);
        most_runs = std::max(most_runs, static_cast<int>(b.runs[0].size()));
        const report::ConfigResult r =
            analyse_runs(config, b.runs[0], b.traces[0], true, worker_diff(scratch_, o_.timeout_s, o_.tolerance));
        CandidateOutcome out{r.verdict, r.message, {}, furthest_errors(b.runs[0])};
        if (r.trace) out.root_causes = r.trace->root_causes;
        return out;
      };
      const TimeFn time = [&](const std::vector<Config>& configs) { return time_configs(o_, scratch_, configs, tag); };
      failing.fix_search = search_fixes(failing, configs_[c], o_.device, evaluate, time);
      failing.fix_search->repeats = o_.auto_repeats ? most_runs : o_.repeats;
      failing.fix_search->repeats_auto = o_.auto_repeats.has_value();
      failing.fix_search->timed_runs = o_.timed_runs;
      annotate_fixes(failing, o_.device);
    }
  }

  RunOptions o_;
  ScratchDir scratch_;
  bool native_ = false;                     // the model is an AOTInductor package
  std::optional<report::Referee> referee_;  // --referee cpu|device: where it ran, or why not
  nlohmann::ordered_json environment_;
  std::vector<Config> configs_;  // this process's configurations
  std::optional<DevicePlacement> placement_;
  Batch batch_;
};

}  // namespace

report::Report run_audit(const RunOptions& options) {
  ModelAudit kind(options);
  return run_kind(kind, options, options.shard);
}

}  // namespace ra
