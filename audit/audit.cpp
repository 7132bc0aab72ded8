// SPDX-License-Identifier: Apache-2.0
// The parent never initialises CUDA: it writes trial specs, starts children, reads their results,
// and computes statistics from CPU dumps. The preflight child checks the model, the inputs and the
// device once, and brings back the environment fingerprint.
#include "audit/audit.h"

#include "audit/analysis.h"
#include "audit/errors.h"
#include "audit/files.h"
#include "audit/log.h"
#include "audit/paths.h"
#include "audit/replay.h"
#include "audit/runner.h"
#include "audit/tensor_stats.h"
#include "audit/trials.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace ra {
namespace {

TrialSpec base_spec(const RunOptions& o) {
  TrialSpec s;
  s.model = std::filesystem::absolute(o.model).string();
  s.input_file = o.input_file.empty() ? "" : std::filesystem::absolute(o.input_file).string();
  s.shapes = o.shapes;
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
  const PreparedChild p = prepare_child(scratch, "preflight", spec, o.timeout_s);
  const ChildOutcome outcome = run_children({p.job}, 1).front();
  const auto result = read_result(p.result_path);
  if (outcome.kind == ChildOutcome::Kind::TimedOut)
    throw InputError(fmt::format("the model did not load and run once within --timeout {:g} s", o.timeout_s));
  if (!result || outcome.kind != ChildOutcome::Kind::Exited || outcome.exit_code != 0) {
    TrialRun run;
    run.process = outcome;
    const std::string last = last_line(outcome.log_tail);
    throw InputError(fmt::format("the model could not be loaded and run once: {}{}", summarise_trial(run).message,
                                 last.empty() ? "" : " (" + last + ")"));
  }
  if (result->status != report::TrialStatus::Ok) {
    if (result->error_kind == "usage") throw UsageError(result->message);
    throw InputError(result->message);
  }
  return *result;
}

}  // namespace

report::Report run_audit(const RunOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  check_readable(o.model, "model");
  if (!o.input_file.empty()) check_readable(o.input_file, "input file");
  for (const auto& lib : o.load_libraries) check_readable(lib, "library");

  ScratchDir scratch;
  log::debug("scratch folder {}", scratch.path());
  const TrialResult pre = preflight(o, scratch);

  report::Report rep;
  rep.tool_version = tool_version();
  rep.command = o.command;
  rep.environment = pre.environment;
  report::Target target;
  target.name = std::filesystem::path(o.model).filename().string();
  target.kind = "model";
  target.path = o.model;
  target.device = o.device;
  target.mode = o.mode;
  target.steps = o.mode == "train" ? o.steps : 0;
  target.optimizer = o.mode == "train" ? o.optimizer : "";
  target.lr = o.mode == "train" ? o.lr : 0;
  target.seed = o.seed;
  target.inputs = pre.input_descriptions;

  // Repeat-major order, so that --jobs runs different configurations side by side.
  std::vector<PreparedChild> prepared;
  std::vector<std::pair<size_t, int>> where;  // job -> (config, repeat)
  for (int r = 0; r < o.repeats; ++r)
    for (size_t c = 0; c < o.configs.size(); ++c) {
      TrialSpec spec = base_spec(o);
      spec.config = o.configs[c];
      spec.repeat = r;
      if (o.replay) spec.state_step = o.steps / 2;  // the replay's restart point
      prepared.push_back(prepare_child(scratch, fmt::format("c{}-r{}", c, r), spec, o.timeout_s));
      where.emplace_back(c, r);
    }
  std::vector<ChildJob> jobs;
  for (const auto& p : prepared) jobs.push_back(p.job);
  size_t done = 0;
  const auto on_done = [&](size_t i, const ChildOutcome& outcome) {
    ++done;
    const auto& [c, r] = where[i];
    const std::string line = fmt::format("[{}/{}] {} repeat {}: {:.0f} ms", done, jobs.size(), o.configs[c].name, r, outcome.wall_ms);
    if (o.progress)
      std::fprintf(stderr, "\r%s\033[K%s", line.c_str(), done == jobs.size() ? "\n" : "");
    else
      log::debug("{}", line);
  };
  const std::vector<ChildOutcome> outcomes = run_children(jobs, o.jobs, on_done);

  std::vector<std::vector<TrialRun>> runs(o.configs.size());
  for (size_t i = 0; i < prepared.size(); ++i) {
    TrialRun run;
    run.repeat = where[i].second;
    run.process = outcomes[i];
    run.result = read_result(prepared[i].result_path);
    run.dump_path = prepared[i].dump_path;
    run.timeout_s = o.timeout_s;
    runs[where[i].first].push_back(std::move(run));
  }
  std::vector<std::string> reference_dumps;
  for (size_t c = 0; c < o.configs.size(); ++c) {
    target.configs.push_back(analyse_config(o.configs[c], runs[c], dump_differences));
    const int ref = reference_index(runs[c]);
    reference_dumps.push_back(ref >= 0 ? runs[c][static_cast<size_t>(ref)].dump_path : "");
  }
  target.dependence = configuration_dependence(target.configs, reference_dumps, dump_differences);
  if (o.replay)
    target.replay = run_replay({base_spec(o), o.replay_omit, &scratch, o.timeout_s, dump_differences, o.progress},
                               o.configs, target.configs, runs);
  rep.targets.push_back(std::move(target));
  report::finalize(rep);
  rep.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return rep;
}

}  // namespace ra
