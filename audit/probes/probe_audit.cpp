// SPDX-License-Identifier: Apache-2.0
// The probe suite, parent side. Each configuration x repeat is one fresh child that runs every
// selected probe in turn (worker/child/probe_child.cpp, in the worker): a process per probe would pay LibTorch's and
// CUDA's start-up cost (about half a second) a few hundred times. Crash isolation is kept at the
// probe level by the child's line log (audit/trial/probe_protocol.h): when a child dies, the probe that
// was running is charged with the crash or the timeout, and the probes after it run again in a
// new child, in rounds, until every probe has a result.
//
// The analysis is the one `run` uses (audit/trial/analysis.h), per probe: each probe becomes a target
// whose trials are its entries in the children's logs. On top of that come the census (one more
// child under det-warn collecting alerts) and the comparison with the knowledge base
// (audit/knowledge/probe_findings.h).
#include "audit/probes/probe_audit.h"

#include "audit/skeleton/audit_kind.h"
#include "audit/skeleton/rounds.h"

#include "audit/common/errors.h"
#include "audit/common/log.h"
#include "audit/common/paths.h"
#include "audit/common/progress.h"
#include "audit/digest/digest_kernel.h"
#include "audit/knowledge/probe_findings.h"
#include "audit/probes/batch_classes.h"
#include "audit/probes/probe_info.h"
#include "audit/trial/analysis.h"
#include "audit/trial/probe_protocol.h"
#include "audit/trial/trials.h"
#include "audit/trial/worker_client.h"

#include <fmt/format.h>

#include <fnmatch.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

namespace ra {
namespace {

// One child to run: a configuration (index into options.configs, or -1 for the census), a
// repeat, and the probes still to do.
struct ProbeChild {
  int config = 0;
  int repeat = 0;
  std::vector<std::string> probes;
  int attempt = 0;
  int group = 0;  // 0: the shared child; 1...: an isolated probe's own
};

// What one probe got in one configuration x repeat.
struct Slot {
  TrialRun run;
  bool filled = false;
};

class SuiteRunner {
 public:
  // `isolated`: probes that run in a child of their own (ProbeInfo::isolated).
  // `wanted(probe, config)`: the cells this process runs (all of them unless it is a shard); a
  // probe's census runs with its first configuration's cell.
  using Wanted = std::function<bool(size_t, size_t)>;
  // With `placement`, each configuration's children run on its GPU slot (the census on slot 0).
  SuiteRunner(const ProbeRunOptions& o, const ScratchDir& scratch, std::vector<std::string> names,
              std::set<std::string> isolated, Wanted wanted, const DevicePlacement* placement)
      : o_(o),
        scratch_(scratch),
        names_(std::move(names)),
        isolated_(std::move(isolated)),
        wanted_(std::move(wanted)),
        placement_(placement) {
    for (size_t i = 0; i < names_.size(); ++i) index_[names_[i]] = i;
    const int most = o.auto_repeats ? std::max(o.auto_repeats->min, o.auto_repeats->max) : o.repeats;
    slots_.assign(names_.size(),
                  std::vector<std::vector<Slot>>(o.configs.size(), std::vector<Slot>(static_cast<size_t>(most))));
    counts_.assign(names_.size(), std::vector<int>(o.configs.size(), 0));
    stopped_by_.assign(names_.size(), std::vector<std::string>(o.configs.size()));
    census_.assign(names_.size(), std::nullopt);
  }

  // The cells (a probe in a configuration) this process runs go through the round-runner
  // (audit/skeleton/rounds.h); a round's jobs become children, one per group, configuration and
  // repeat (round).
  void run() {
    if (names_.empty()) return;
    groups_.assign(1, {});
    group_of_.assign(names_.size(), 0);
    for (size_t i = 0; i < names_.size(); ++i) {
      if (isolated_.count(names_[i])) {
        group_of_[i] = static_cast<int>(groups_.size());
        groups_.push_back({names_[i]});
      } else {
        groups_.front().push_back(names_[i]);
      }
    }
    for (size_t i = 0; i < names_.size(); ++i)
      for (size_t c = 0; c < o_.configs.size(); ++c)
        if (wanted_(i, c)) cells_.emplace_back(i, c);
    const std::vector<std::string> decided = run_rounds(
        cells_.size(), o_.repeats, o_.auto_repeats,
        RoundParts{[this](const RoundJobs& jobs, const std::vector<int>& target, Progress& line) {
                     round(jobs, target, line);
                   },
                   [this]() -> const std::vector<std::vector<TrialRun>>& { return cell_runs(); }, o_.progress});
    for (size_t k = 0; k < cells_.size(); ++k) stopped_by_[cells_[k].first][cells_[k].second] = decided[k];
  }

  // The runs of a probe in a configuration: all its repeats, in order.
  std::vector<TrialRun> runs(size_t probe, size_t config) const {
    std::vector<TrialRun> out;
    for (int r = 0; r < counts_[probe][config]; ++r) out.push_back(slots_[probe][config][static_cast<size_t>(r)].run);
    return out;
  }
  const std::string& stopped_by(size_t probe, size_t config) const { return stopped_by_[probe][config]; }
  const std::optional<CensusRun>& census(size_t probe) const { return census_[probe]; }

 private:
  // One round: the probes of a group that share a configuration and a repeat share a child (the
  // undecided ones of a group have run the same repeats, so they stay together). The first repeats
  // (and, in the first round, the census) run first; the later ones then know each probe's
  // reference digests and dump only the tensors that differ from them (TrialSpec::dump_only_differing).
  // Every child of the round is counted on `line` before the first starts.
  void round(const RoundJobs& jobs, const std::vector<int>& target, Progress& line) {
    for (size_t k = 0; k < cells_.size(); ++k) counts_[cells_[k].first][cells_[k].second] = target[k];
    std::map<std::tuple<int, int, size_t>, std::vector<std::string>> children;  // (repeat, group, config) -> probes
    for (const auto& [k, r] : jobs) {
      const auto [i, c] = cells_[k];
      children[{r, group_of_[i], c}].push_back(names_[i]);
    }
    std::vector<ProbeChild> first, later;
    for (auto& [key, probes] : children) {
      const auto& [r, g, c] = key;
      (r == 0 ? first : later).push_back({static_cast<int>(c), r, std::move(probes), 0, g});
    }
    if (o_.census && !census_started_) {
      for (size_t g = 0; g < groups_.size(); ++g)
        if (auto probes = wanted_in(groups_[g], 0); !probes.empty())
          first.push_back({-1, 0, std::move(probes), 0, static_cast<int>(g)});
      census_started_ = true;
    }
    line.add(first.size() + later.size());
    while (!first.empty()) first = run_round(first, line);
    while (!later.empty()) later = run_round(later, line);
  }

  // Every cell's runs, in cells_ order (the round-runner's view).
  const std::vector<std::vector<TrialRun>>& cell_runs() {
    cell_runs_.clear();
    for (const auto& [i, c] : cells_) cell_runs_.push_back(runs(i, c));
    return cell_runs_;
  }

  // The probes of `group` whose cell in configuration c this process runs.
  std::vector<std::string> wanted_in(const std::vector<std::string>& group, size_t c) const {
    std::vector<std::string> out;
    for (const auto& name : group)
      if (wanted_(index_.at(name), c)) out.push_back(name);
    return out;
  }

  size_t slot(const ProbeChild& b) const {
    return b.config < 0 ? 0 : placement_->slot_of(static_cast<size_t>(b.config));
  }

  // What the progress line and the log call a child: its configuration, or the census.
  std::string what(const ProbeChild& b) const {
    return b.config < 0 ? std::string("census") : o_.configs[static_cast<size_t>(b.config)].name;
  }

  Config census_config() const {
    Config c = parse_config("det-warn", logical_cpu_count());
    c.name = "census";
    return c;
  }

  // Runs `batches` side by side on `line`; returns the children that run the probes a crash left
  // undone, counted on `line`.
  std::vector<ProbeChild> run_round(const std::vector<ProbeChild>& batches, Progress& line) {
    std::vector<PreparedChild> prepared;
    std::vector<ChildJob> jobs;
    for (const auto& b : batches) {
      TrialSpec spec;
      spec.task = ChildTask::Probes;
      spec.device = o_.device;
      spec.seed = o_.seed;
      spec.load_libraries = o_.load_libraries;
      spec.config = b.config < 0 ? census_config() : o_.configs[static_cast<size_t>(b.config)];
      spec.repeat = b.repeat;
      spec.probes = b.probes;
      spec.time_probes = o_.time_probes && b.config >= 0;
      if (b.config >= 0)
        for (const auto& name : b.probes) {
          const auto& repeats = slots_[index_.at(name)][static_cast<size_t>(b.config)];
          std::vector<const TrialRun*> earlier;
          for (int k = 0; k < b.repeat; ++k)
            earlier.push_back(repeats[static_cast<size_t>(k)].filled ? &repeats[static_cast<size_t>(k)].run : nullptr);
          if (auto digests = reference_digests(earlier); !digests.empty())
            spec.dump_only_differing[name] = std::move(digests);
        }
      const std::string tag = b.config < 0 ? fmt::format("census-g{}-a{}", b.group, b.attempt)
                                           : fmt::format("g{}-c{}-r{}-a{}", b.group, b.config, b.repeat, b.attempt);
      const std::string gpu = placement_ ? placement_->visible[slot(b)] : "";
      prepared.push_back(prepare_child(scratch_, tag, spec, o_.timeout_s, b.config >= 0, gpu));
      jobs.push_back(prepared.back().job);
    }
    const ChildProgress progress{
        line, [&](size_t i) { return fmt::format("{}, {} probes", what(batches[i]), batches[i].probes.size()); },
        [&](size_t i, const ChildOutcome& outcome) {
          const ProbeChild& b = batches[i];
          return fmt::format("{} repeat {}: {} probes, {:.1f} s", what(b), b.repeat, b.probes.size(),
                             outcome.wall_ms / 1000);
        }};
    SlotFn slot_of;
    if (placement_) slot_of = [&](size_t i) { return static_cast<int>(slot(batches[i])); };
    const std::vector<ChildOutcome> outcomes =
        run_children(jobs, o_.jobs, progress, {}, slot_of, placement_ ? placement_->per_slot : 1);
    std::vector<ProbeChild> again;
    for (size_t i = 0; i < batches.size(); ++i)
      if (auto rest = collect(batches[i], prepared[i], outcomes[i]); !rest.probes.empty())
        again.push_back(std::move(rest));
    line.add(again.size());
    return again;
  }

  // Files the batch's results; returns the probes left to run after a crash.
  ProbeChild collect(const ProbeChild& b, const PreparedChild& p, const ChildOutcome& outcome) {
    const ProbeLog log = read_probe_log(p.result_path);
    ProbeChild rest{b.config, b.repeat, {}, b.attempt + 1, b.group};
    // Where a child's time goes (-v): its start-up up to the device being ready, then its probes.
    log::debug("child {} repeat {} ({} probes): {:.0f} ms, of which start-up {:.0f} ms", what(b), b.repeat,
               b.probes.size(), outcome.wall_ms, log.begin ? log.begin->startup_ms : 0.0);
    // A child that stopped on purpose after a sticky device error (log.restart) did not die in a
    // probe: the probes it did not reach simply run in a fresh process.
    const bool died =
        !(outcome.kind == ChildOutcome::Kind::Exited && outcome.exit_code == 0 && (log.ended || !log.restart.empty()));
    // A child that died before its first probe, or that could not apply the configuration: every
    // probe gets that outcome (running them again would end the same way).
    if (!log.begin || log.begin->status != report::TrialStatus::Ok) {
      for (const auto& name : b.probes) {
        TrialRun run;
        run.process = outcome;
        if (log.begin) {
          run.process = ChildOutcome{};
          run.result = *log.begin;
        }
        file(b, name, std::move(run), p);
      }
      return rest;
    }
    bool after_crash = false;
    for (const auto& name : b.probes) {
      TrialRun run;
      if (const auto it = log.done.find(name); it != log.done.end()) {
        run.process.wall_ms = it->second.wall_ms;
        run.result = it->second;
        run.result->switches = log.begin->switches;
        file(b, name, std::move(run), p);
      } else if (died && !after_crash && (log.running == name || log.running.empty())) {
        run.process = outcome;  // this probe was running when the child died
        if (run.process.kind == ChildOutcome::Kind::Exited && run.process.exit_code == 0) run.process.exit_code = -1;
        file(b, name, std::move(run), p);
        after_crash = true;
      } else {
        rest.probes.push_back(name);
      }
    }
    return rest;
  }

  void file(const ProbeChild& b, const std::string& name, TrialRun run, const PreparedChild& p) {
    const size_t i = index_.at(name);
    if (b.config < 0) {
      CensusRun census;
      census.completed = run.result && (run.result->status == report::TrialStatus::Ok ||
                                        run.result->status == report::TrialStatus::Raised);
      if (run.result) census.alerts = run.result->alerts;
      census_[i] = census;
      return;
    }
    run.repeat = b.repeat;
    run.timeout_s = o_.timeout_s;
    if (placement_) run.device = placement_->names[slot(b)];
    if (run.result && !run.result->dump_error.empty() && !warned_dump_)
      log::warn("{}: tensors could not be dumped for divergence statistics ({}); is TMPDIR full?", name,
                run.result->dump_error);
    warned_dump_ = warned_dump_ || (run.result && !run.result->dump_error.empty());
    run.dump_path = p.dump_path.empty() ? "" : fmt::format("{}.{}.pt", p.dump_path, name);
    slots_[i][static_cast<size_t>(b.config)][static_cast<size_t>(b.repeat)] = {std::move(run), true};
  }

  const ProbeRunOptions& o_;
  const ScratchDir& scratch_;
  std::vector<std::string> names_;
  std::set<std::string> isolated_;
  Wanted wanted_;
  const DevicePlacement* placement_;
  std::map<std::string, size_t> index_;
  std::vector<std::vector<std::vector<Slot>>> slots_;  // probe x config x repeat
  std::vector<std::vector<int>> counts_;               // probe x config: the repeats it runs
  std::vector<std::vector<std::string>> stopped_by_;   // probe x config: --repeats auto, what decided it
  std::vector<std::optional<CensusRun>> census_;
  std::vector<std::vector<std::string>> groups_;  // the shared child's probes, then each isolated probe alone
  std::vector<int> group_of_;                     // probe -> its group
  std::vector<std::pair<size_t, size_t>> cells_;  // (probe, config): the cells this process runs
  std::vector<std::vector<TrialRun>> cell_runs_;  // per cell, for the round-runner
  bool census_started_ = false;
  bool warned_dump_ = false;  // one warning for dumps that could not be written, not one per probe
};

// The preflight: the device exists, the plugins load, and the environment fingerprint.
TrialResult preflight(const ProbeRunOptions& o, const ScratchDir& scratch) {
  TrialSpec spec;
  spec.task = ChildTask::Preflight;
  spec.device = o.device;
  spec.load_libraries = o.load_libraries;
  spec.config = Config{"preflight", {}};
  const PreparedChild p = prepare_child(scratch, "preflight", spec, o.timeout_s);
  const ChildOutcome outcome = run_children({p.job}, 1).front();
  const ProbeLog log = read_probe_log(p.result_path);
  if (!log.begin) {
    const std::string last = last_line(outcome.log_tail);
    throw InputError(fmt::format("the probe child could not start{}", last.empty() ? "" : ": " + last));
  }
  if (log.begin->status != report::TrialStatus::Ok) {
    if (log.begin->error_kind == "usage") throw UsageError(log.begin->message);
    throw InputError(log.begin->message);
  }
  return *log.begin;
}

std::string documented_status(const probes::ProbeInfo& info, const KnowledgeBase& kb) {
  const KnowledgeEntry* e = info.kb.empty() ? nullptr : kb.find(info.kb);
  return e ? to_string(e->documented) : "not-listed";
}

// A probe's target as the report names it, before any result: name, identity, device, mode, seed.
report::Target probe_target(const probes::ProbeInfo& info, const ProbeRunOptions& o) {
  report::Target t;
  t.name = info.name;
  const std::string identity = info.name + "\n" + info.form;
  t.model_digest = digest_kernel::bytes_digest(identity.data(), identity.size());
  t.device = o.device.to_string();
  t.mode = info.direction == probes::Direction::Backward ? "train" : "infer";
  t.seed = o.seed;
  return t;
}

report::Target skipped_target(report::Target t, const ProbeRunOptions& o, const std::vector<size_t>& configs,
                              const std::string& reason) {
  for (const size_t c : configs) {
    report::ConfigResult r;
    r.name = o.configs[c].name;
    r.verdict = report::Verdict::Skipped;
    r.message = reason;
    r.repeats = o.repeats;
    t.configs.push_back(std::move(r));
  }
  return t;
}

// What names the probe suite's plan (fleet/shard.h): every option that changes a result, the
// knowledge base the findings are judged against, and each probe's identity.
nlohmann::ordered_json probe_plan(const ProbeRunOptions& o, const std::vector<report::ProbeTarget>& targets) {
  nlohmann::ordered_json plan = fleet::session_plan(o, "probes");
  plan["census"] = o.census;
  plan["knowledge"] = o.knowledge_digest;
  for (const auto& t : targets) plan["targets"].push_back({t.common.name, t.common.model_digest});
  return plan;
}

// The facts of a probe that the report shows beside its results, from its description and its
// knowledge-base entry (or none).
report::ProbeFacts probe_facts(const probes::ProbeInfo& info, const KnowledgeBase& kb) {
  const KnowledgeEntry* entry = info.kb.empty() ? nullptr : kb.find(info.kb);
  report::ProbeFacts facts;
  facts.family = info.family;
  facts.op = info.op;
  facts.direction = probes::to_string(info.direction);
  facts.role = probes::to_string(info.role);
  facts.form = info.form;
  facts.knowledge_id = info.kb;
  facts.documented = documented_status(info, kb);
  if (entry) {
    facts.documented_device = entry->device;
    facts.doc_row = entry->doc_row;
    facts.advice = entry->advice;
  }
  return facts;
}

// `probes` as an audit kind (audit/skeleton/audit_kind.h): one target per selected probe; the
// children of a configuration x repeat run every probe of this process's cells (SuiteRunner).
class ProbeSuite : public AuditKind {
 public:
  ProbeSuite(const ProbeRunOptions& o, const KnowledgeBase& kb) : o_(o), kb_(kb) {}

  AuditPlan plan() override {
    selected_ = select_probes(probe_catalogue(o_.load_libraries), o_.only);
    log::debug("scratch folder {}", scratch_.path());
    const TrialResult pre = preflight(o_, scratch_);
    environment_ = pre.environment;
    report::ProbesBody probes;
    for (const auto& info : selected_) probes.targets.push_back({probe_target(info, o_), probe_facts(info, kb_)});
    AuditPlan plan;
    plan.environment = pre.environment;
    plan.identity = probe_plan(o_, probes.targets);
    plan.body = std::move(probes);
    return plan;
  }

  // The probes that run on this device and have a cell here, in one SuiteRunner.
  void run(const Cells& cells) override {
    std::set<std::string> isolated;
    for (size_t t = 0; t < selected_.size(); ++t) {
      const auto& info = selected_[t];
      if (!runs_here(info) || cells.configs[t].empty()) continue;
      runnable_.push_back(info.name);
      target_of_.push_back(t);
      if (info.isolated) isolated.insert(info.name);
    }
    fleet::ShardPlan* shard = cells.shard;
    const auto wanted = [this, shard](size_t i, size_t c) { return !shard || shard->runs(target_of_[i], c); };
    placement_ = session_placement(o_, environment_);
    runner_.emplace(o_, scratch_, runnable_, std::move(isolated), wanted, placement_ ? &*placement_ : nullptr);
    runner_->run();
  }

  void analyse(const Cells& cells, report::Report& rep) override {
    if (placement_) rep.contention = contention_note(*placement_, o_.jobs);
    collect_runs(cells);
    BatchedDiff stats(scratch_, o_.timeout_s, o_.tolerance);
    for (size_t i = 0; i < runnable_.size(); ++i) analyse_probe(i, cells, stats.collect());
    stats.resolve();
    size_t index = 0;
    for (size_t n = 0; n < selected_.size(); ++n) {
      const std::vector<size_t>& mine = cells.configs[n];
      if (mine.empty()) continue;
      const auto& info = selected_[n];
      const KnowledgeEntry* entry = info.kb.empty() ? nullptr : kb_.find(info.kb);
      report::ProbeTarget& probe = std::get<report::ProbesBody>(rep.body).targets[n];
      report::Target& t = probe.common;
      if (!runs_here(info)) {
        t = skipped_target(std::move(t), o_, mine, probe_off_device_message(o_.device));
        continue;
      }
      const size_t i = index++;
      std::tie(t.configs, t.dependence) = analyse_probe(i, cells, stats.answer());
      for (size_t k = 0; k < mine.size(); ++k) {
        t.configs[k].stopped_by = runner_->stopped_by(i, mine[k]);
        t.configs[k].reference_tensors =
            keep_reference_tensors(o_, reference_dumps_[i][mine[k]], fmt::format("p{}-c{}.pt", i, mine[k]),
                                   t.name + " / " + t.configs[k].name);
      }
      // The batch-invariance probes' classes, from each configuration's reference repeat.
      if (info.family == "batch-invariance")
        for (const auto& c : t.configs)
          if (auto classes = batch_classes(c.reference); !classes.empty())
            probe.facts.batch_classes.push_back({c.name, std::move(classes)});
      judge_probe(probe, entry, o_.device, runner_->census(i));
      if (const auto& c = runner_->census(i); c) census_.push_back({t.name, c->completed, c->alerts});
    }
  }

  // The census of a probes report, an empty shard's too (its census joins the merge).
  void summarise(report::Report& rep) override {
    auto& probes = std::get<report::ProbesBody>(rep.body);
    if (o_.census) probes.census = cross_tabulate(probes.targets, "det-warn");
  }

  std::vector<report::CensusRecord> shard_census() override { return std::move(census_); }

 private:
  bool runs_here(const probes::ProbeInfo& info) const { return o_.device.is_cuda() ? info.cuda : info.cpu; }

  // The runnable probes' runs per configuration, and the reference dumps a shard keeps for merge.
  void collect_runs(const Cells& cells) {
    runs_.assign(runnable_.size(), std::vector<std::vector<TrialRun>>(o_.configs.size()));
    reference_dumps_.assign(runnable_.size(), std::vector<std::string>(o_.configs.size()));
    for (size_t i = 0; i < runnable_.size(); ++i)
      for (const size_t c : cells.configs[target_of_[i]]) {
        runs_[i][c] = runner_->runs(i, c);
        const int ref = reference_index(runs_[i][c]);
        reference_dumps_[i][c] = ref >= 0 ? runs_[i][c][static_cast<size_t>(ref)].dump_path : "";
        if (cells.shard && cells.shard->shared(target_of_[i]))
          cells.shard->keep(target_of_[i], c, reference_dumps_[i][c], "");
      }
  }

  // A runnable probe's results per configuration and their dependence, analysed twice: once to
  // collect what statistics are needed, then with the answers of one worker (audit/trial/worker_client.h).
  std::pair<std::vector<report::ConfigResult>, std::optional<report::ConfigDependence>> analyse_probe(
      size_t i, const Cells& cells, const DiffFn& diff) {
    std::vector<report::ConfigResult> configs;
    std::vector<std::string> dumps;
    for (const size_t c : cells.configs[target_of_[i]]) {
      configs.push_back(analyse_config(o_.configs[c], runs_[i][c], diff));
      dumps.push_back(reference_dumps_[i][c]);
    }
    auto dependence = configuration_dependence(configs, dumps, diff);
    return std::make_pair(std::move(configs), std::move(dependence));
  }

  const ProbeRunOptions& o_;
  const KnowledgeBase& kb_;
  ScratchDir scratch_;
  std::vector<probes::ProbeInfo> selected_;
  nlohmann::ordered_json environment_;  // the preflight's, which the placement reads
  std::vector<std::string> runnable_;
  std::vector<size_t> target_of_;  // runnable probe -> its index in `selected_`
  std::optional<DevicePlacement> placement_;
  std::optional<SuiteRunner> runner_;
  std::vector<std::vector<std::vector<TrialRun>>> runs_;   // per runnable probe, per configuration
  std::vector<std::vector<std::string>> reference_dumps_;  // per runnable probe, per configuration
  std::vector<report::CensusRecord> census_;
};

}  // namespace

std::vector<std::string> default_probe_config_names(const Device& device) {
  if (device.is_cuda()) return {"default", "det", "benchmark", "cudnn-det"};
  return {"default", "det", "threads-1", "mkl-cbwr"};
}

std::vector<probes::ProbeInfo> probe_catalogue(const std::vector<std::string>& libraries) {
  for (const auto& lib : libraries) check_readable(lib, "library");
  ScratchDir scratch;
  const std::string path = scratch.path() + "/catalogue.json";
  std::vector<std::string> args = {"__catalogue", path};
  args.insert(args.end(), libraries.begin(), libraries.end());
  run_worker_service(scratch, "catalogue", args, 600);
  std::vector<probes::ProbeInfo> out;
  try {
    for (const auto& j : nlohmann::json::parse(read_file(path, "probe catalogue")))
      out.push_back(probes::probe_info_from_json(j));
  } catch (const std::exception& e) {
    throw Error(ExitCode::Incomplete, fmt::format("the worker's probe catalogue is unreadable: {}", e.what()));
  }
  return out;
}

std::vector<probes::ProbeInfo> select_probes(const std::vector<probes::ProbeInfo>& all,
                                             const std::vector<std::string>& only) {
  std::vector<probes::ProbeInfo> out;
  std::vector<bool> used(only.size(), false);
  for (const auto& p : all) {
    bool take = only.empty();
    for (size_t g = 0; g < only.size(); ++g)
      if (fnmatch(only[g].c_str(), p.name.c_str(), 0) == 0 || fnmatch(only[g].c_str(), p.family.c_str(), 0) == 0) {
        take = true;
        used[g] = true;
      }
    if (take) out.push_back(p);
  }
  for (size_t g = 0; g < only.size(); ++g)
    if (!used[g])
      throw UsageError(fmt::format("--only '{}' matches no probe or family (see repro-audit probes --list)", only[g]));
  return out;
}

report::Report run_probe_suite(const ProbeRunOptions& o, const KnowledgeBase& kb) {
  ProbeSuite kind(o, kb);
  return run_kind(kind, o, o.shard);
}

}  // namespace ra
