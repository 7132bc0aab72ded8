// SPDX-License-Identifier: Apache-2.0
#include "audit/train/replay.h"

#include "audit/common/log.h"
#include "audit/trial/runner.h"
#include "audit/trial/trials.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace ra {
namespace {

using report::ReplayVerdict;

std::string describe_component(const std::string& component) {
  if (component == "parameters") return "the model parameters";
  if (component == "buffers") return "the model buffers";
  if (component == "optimizer") return "the optimizer state";
  if (component == "generator/cpu") return "the CPU generator state";
  if (component.rfind("generator/", 0) == 0) return fmt::format("the {} generator state", component.substr(10));
  return component;
}

bool plural(const std::string& component) { return component == "parameters" || component == "buffers"; }
const char* differs(const std::string& component) { return plural(component) ? "differ" : "differs"; }
const char* it(const std::string& component) { return plural(component) ? "them" : "it"; }

// The --replay-omit value that leaves `component` out of the checkpoint, "" when none does.
std::string omitted_by(const std::string& component, const std::vector<std::string>& omit) {
  const auto has = [&](const char* o) { return std::find(omit.begin(), omit.end(), o) != omit.end(); };
  if (component == "optimizer" && has("optimizer")) return "optimizer";
  if (component.rfind("generator/", 0) == 0 && has("rng")) return "rng";
  return "";
}

std::vector<report::TensorDigest> of_component(const std::vector<report::TensorDigest>& state,
                                               const std::string& component) {
  std::vector<report::TensorDigest> out;
  for (const auto& t : state)
    if (state_component(t.name) == component) out.push_back(t);
  return out;
}

std::vector<std::string> differing_names(const std::vector<report::TensorDigest>& ref,
                                         const std::vector<report::TensorDigest>& other) {
  std::vector<std::string> names;
  for (const auto& f : differing_tensors(ref, other)) names.push_back(f.name);
  return names;
}

std::vector<report::TensorDigest> after_step(const std::vector<report::TensorDigest>& tensors, int step) {
  std::vector<report::TensorDigest> out;
  for (const auto& t : tensors)
    if (step_of(t.name) > step) out.push_back(t);
  return out;
}

// The components in report order: parameters, buffers, optimizer (always), then each generator
// in the order it first appears.
std::vector<std::string> component_order(const ReplayEvidence& e) {
  std::vector<std::string> order = {"parameters", "buffers", "optimizer"};
  for (const auto* state : {&e.reference_state, &e.saved_state, &e.restored_state})
    for (const auto& t : *state) {
      const std::string c = state_component(t.name);
      if (std::find(order.begin(), order.end(), c) == order.end()) order.push_back(c);
    }
  return order;
}

std::string divergence_reason(const report::Replay& r, const ReplayEvidence& e) {
  const int k = e.steps_before;
  for (const auto& c : r.components) {
    if (c.restored_match) continue;
    if (!c.saved_match)
      return fmt::format(
          "{} saved by the checkpoint already {} from the uninterrupted run's at step {}: the first {} "
          "steps did not reproduce in the checkpointing process",
          c.description, differs(c.name), k, k);
    if (!c.in_checkpoint)
      return fmt::format(
          "{} after restore {} from the uninterrupted run's at step {}: the checkpoint did not restore "
          "{} (--replay-omit {})",
          c.description, differs(c.name), k, it(c.name), omitted_by(c.name, e.omit));
    return fmt::format(
        "{} after restore {} from the uninterrupted run's at step {}, although the checkpoint saved "
        "{} intact: the restore did not bring {} back",
        c.description, differs(c.name), k, it(c.name), it(c.name));
  }
  const int first = r.differing.empty() ? k + 1 : step_of(r.differing.front().name);
  return fmt::format(
      "every component of the state matched the uninterrupted run's at step {} after restore, but the "
      "resumed run diverged at step {}: nondeterminism, or state outside the checkpoint",
      k, first);
}

// "the checkpointing child (steps 1-2) crashed: killed by SIGSEGV (last stderr line)".
std::string child_failure(const std::string& which, const TrialRun& run) {
  const report::Trial t = summarise_trial(run);
  const std::string last = last_line(t.stderr_tail);
  return fmt::format("the {} {}: {}{}", which, report::to_string(t.status), t.message,
                     last.empty() ? "" : " (" + last + ")");
}

// Runs one replay child and returns how it went.
TrialRun run_one(const ReplayContext& ctx, const std::string& tag, const TrialSpec& spec, bool dump) {
  const PreparedChild p = prepare_child(*ctx.scratch, tag, spec, ctx.timeout_s, dump);
  TrialRun run;
  run.process = run_children({p.job}, 1).front();
  run.result = read_result(p.result_path);
  run.dump_path = p.dump_path;
  run.timeout_s = ctx.timeout_s;
  const std::string line = fmt::format("restart-replay, {}: {:.0f} ms", tag, run.process.wall_ms);
  if (ctx.progress)
    std::fprintf(stderr, "%s\n", line.c_str());
  else
    log::debug("{}", line);
  return run;
}

bool completed(const TrialRun& run) { return summarise_trial(run).status == report::TrialStatus::Ok; }

}  // namespace

std::string state_component(const std::string& name) {
  if (name.rfind("param/", 0) == 0) return "parameters";
  if (name.rfind("buffer/", 0) == 0) return "buffers";
  if (name.rfind("optimizer/", 0) == 0) return "optimizer";
  return name;  // generator/cpu, generator/cuda:N
}

int step_of(const std::string& name) {
  if (name.rfind("step", 0) != 0) return 0;
  const size_t slash = name.find('/');
  const std::string digits = name.substr(4, slash == std::string::npos ? std::string::npos : slash - 4);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::atoi(digits.c_str());
}

report::Replay inconclusive_replay(int steps_total, const std::vector<std::string>& omit, const std::string& reason) {
  report::Replay r;
  r.steps_before = steps_total / 2;
  r.steps_after = steps_total - steps_total / 2;
  r.omit = omit;
  r.verdict = ReplayVerdict::Inconclusive;
  r.reason = reason;
  return r;
}

report::Replay compare_replay(const std::string& config, const ReplayEvidence& e) {
  if (e.reference_state.empty())
    return inconclusive_replay(
        e.steps_total, e.omit,
        fmt::format("the uninterrupted run recorded no training state at step {}", e.steps_before));
  report::Replay r = inconclusive_replay(e.steps_total, e.omit, "");
  r.config = config;
  for (const auto& name : component_order(e)) {
    report::ReplayComponent c;
    c.name = name;
    c.description = describe_component(name);
    const auto ref = of_component(e.reference_state, name);
    c.tensors = ref.size();
    c.in_checkpoint = omitted_by(name, e.omit).empty();
    c.saved_match = differing_tensors(ref, of_component(e.saved_state, name)).empty();
    c.differing = differing_names(ref, of_component(e.restored_state, name));
    c.restored_match = c.differing.empty();
    r.components.push_back(std::move(c));
  }
  const auto reference_after = after_step(e.reference_tensors, e.steps_before);
  r.tensors_compared = reference_after.size();
  r.differing = differing_tensors(reference_after, after_step(e.resumed_tensors, e.steps_before));
  if (r.differing.empty()) {
    r.verdict = ReplayVerdict::Reproducible;
    for (const auto& c : r.components)
      if (!c.restored_match) {
        r.reason = fmt::format(
            "{} after restore {} from the uninterrupted run's at step {}, but the remaining steps "
            "do not depend on {}",
            c.description, differs(c.name), e.steps_before, it(c.name));
        break;
      }
  } else {
    r.verdict = ReplayVerdict::Diverged;
    r.reason = divergence_reason(r, e);
  }
  return r;
}

report::Replay run_replay(const ReplayContext& ctx, const std::vector<Config>& configs,
                          const std::vector<report::ConfigResult>& results,
                          const std::vector<std::vector<TrialRun>>& runs) {
  const int total = ctx.base.steps, before = total / 2;
  size_t c = 0;
  while (c < results.size() && results[c].verdict != report::Verdict::Reproducible) ++c;
  const int ref = c < results.size() ? reference_index(runs[c]) : -1;
  if (ref < 0)
    return inconclusive_replay(total, ctx.omit,
                               "no configuration is reproducible, so a resumed run could not be told apart from "
                               "nondeterminism");
  const TrialRun& reference = runs[c][static_cast<size_t>(ref)];
  log::debug("restart-replay under {}: {} steps, checkpoint, {} more", configs[c].name, before, total - before);

  TrialSpec save = ctx.base;
  save.config = configs[c];
  save.steps = before;
  save.state_step = 0;
  save.checkpoint = CheckpointTask{ctx.scratch->path() + "/replay.checkpoint.pt", "", 0, ctx.omit};
  const TrialRun saved = run_one(ctx, "replay-save", save, false);
  report::Replay failed = inconclusive_replay(total, ctx.omit, "");
  failed.config = configs[c].name;
  failed.verdict = ReplayVerdict::Crashed;
  if (!completed(saved)) {
    failed.reason = child_failure(fmt::format("checkpointing child (steps 1-{})", before), saved);
    return failed;
  }

  TrialSpec resume = ctx.base;
  resume.config = configs[c];
  resume.state_step = 0;
  resume.checkpoint = CheckpointTask{"", save.checkpoint.save_path, before, ctx.omit};
  const TrialRun resumed = run_one(ctx, "replay-resume", resume, true);
  if (!completed(resumed)) {
    failed.reason = child_failure(fmt::format("resumed child (steps {}-{})", before + 1, total), resumed);
    return failed;
  }

  ReplayEvidence e;
  e.steps_before = before;
  e.steps_total = total;
  e.omit = ctx.omit;
  e.reference_state = reference.result->state;
  e.reference_tensors = reference.result->tensors;
  e.saved_state = saved.result->state;
  e.restored_state = resumed.result->state;
  e.resumed_tensors = resumed.result->tensors;
  report::Replay r = compare_replay(configs[c].name, e);
  attach_stats(r.differing, reference, resumed, ctx.diff);
  return r;
}

}  // namespace ra
