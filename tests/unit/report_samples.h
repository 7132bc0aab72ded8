// SPDX-License-Identifier: Apache-2.0
// Report-model samples the renderer tests share.
#pragma once

#include "reports/model.h"

#include <utility>
#include <vector>

namespace ra::test {

// A body of one kind holding `targets` with empty facts: the tests' shorthand for a run, exec or
// probes report's targets.
template <class Body>
Body body_of(std::vector<ra::report::Target> targets) {
  Body body;
  for (auto& t : targets) body.targets.push_back({std::move(t), {}});
  return body;
}

// The facts of a report's target of each kind (the tests' shorthand; std::bad_variant_access for a
// report of another kind).
inline ra::report::RunFacts& run_facts(ra::report::Report& r, size_t i = 0) {
  return std::get<ra::report::RunBody>(r.body).targets.at(i).facts;
}
inline ra::report::ExecFacts& exec_facts(ra::report::Report& r, size_t i = 0) {
  return std::get<ra::report::ExecBody>(r.body).targets.at(i).facts;
}
inline ra::report::ProbeFacts& probe_facts(ra::report::Report& r, size_t i = 0) {
  return std::get<ra::report::ProbesBody>(r.body).targets.at(i).facts;
}

// A trace summary with one backward root cause (aten::index_add in IndexAddBackward0 at
// model.py:5, 2/2 runs, 14 ops propagated) and one structural split at #90.
inline ra::report::TraceSummary sample_trace() {
  ra::report::TraceSummary t;
  t.records = 120;
  t.capacity = 1 << 20;
  t.memory_bytes = 4096;
  t.runs_compared = 2;
  ra::report::RootCause rc;
  rc.op = "aten::index_add";
  rc.direction = "backward";
  rc.node = "IndexAddBackward0";
  rc.forward_op = "aten::index_add";
  rc.module = "enc";
  rc.source = "model.py:5";
  rc.phase = "backward";
  rc.step = 1;
  rc.position = 77;
  rc.inputs = {"float32[8x64]"};
  rc.outputs = {"float32[8x64]"};
  rc.differing_outputs = {0};
  rc.runs_diverged = 2;
  rc.runs_compared = 2;
  rc.repeats = {1, 2};
  rc.propagated = 14;
  t.root_causes = {rc};
  ra::report::StructuralSplit s;
  s.reference_position = 90;
  s.other_position = 91;
  s.other_op = "aten::contiguous";
  s.unmatched_other = 1;
  s.runs = 1;
  s.repeats = {2};
  t.splits = {s};
  return t;
}

// One model target (named with XML markup characters) with a configuration of every verdict: det
// reproducible; default diverged, traced (sample_trace), with a fix search whose minimal fix is
// default+deterministic=on at a measured cost of 1 + wall_ms/40; strict raised; threads-1 crashed
// (stderr with a control character and a byte that is not UTF-8); threads-N timeout; cudnn-det
// skipped; plus a configuration dependence and a diverged restart-replay. `wall_ms` changes only
// timing figures.
inline ra::report::Report every_verdict_report(double wall_ms) {
  using ra::report::Verdict;
  ra::report::Report r;
  r.tool_version = "0.1.0";
  ra::report::Target t;
  t.name = "m<1>&\"'.pt";
  t.model_digest = "0123456789abcdef0123456789abcdef";
  t.device = "cpu";
  t.mode = "train";
  ra::report::RunFacts facts;
  facts.steps = 4;
  ra::report::TensorFinding output;
  output.name = "output";
  output.dtype = "float32";
  output.shape = {8};
  output.diverging_trials = 1;
  ra::report::DivergenceStats stats;
  stats.numel = 8;
  stats.differing = 3;
  stats.first_index = 2;
  stats.first_index_nd = {2};
  stats.max_abs_diff = 1e-6;
  stats.max_rel_diff = 3e-7;
  stats.max_ulp = 2;
  stats.tolerance = {1e-5, 1.3e-6};
  stats.beyond_tolerance = 1;
  output.stats = stats;
  const auto config = [&](const char* name, Verdict v, const std::string& message) {
    ra::report::ConfigResult c;
    c.name = name;
    c.verdict = v;
    c.message = message;
    c.repeats = 3;
    c.completed = v == Verdict::Reproducible || v == Verdict::Diverged ? 3 : 0;
    ra::report::Trial trial;
    trial.wall_ms = wall_ms;
    c.trials = {trial};
    return c;
  };
  auto diverged = config("default", Verdict::Diverged, "");
  diverged.diverging_repeats = 1;
  diverged.divergence_rate = 0.5;
  diverged.rate_ci_low = 0.09;
  diverged.rate_ci_high = 0.91;
  diverged.distinct_outcomes = 2;
  diverged.diverged_tensors = {output};
  diverged.trace = sample_trace();
  ra::report::FixSearch fix;
  fix.from = "default";
  fix.repeats = 3;
  fix.timed_runs = 3;
  ra::report::FixCandidate det;
  det.toggles = {{"deterministic", "on"}};
  det.config = "default+deterministic=on";
  det.stage = "single";
  det.fixes = {77};
  det.fixes_all = det.minimal = true;
  det.cpp = "torch::globalContext().setDeterministicAlgorithms(true, false);";
  det.python = "torch.use_deterministic_algorithms(True)";
  det.median_ms = wall_ms * 1.25;
  det.cost_ratio = 1 + wall_ms / 40;  // with its rounds' spread, 0.1 either side
  det.cost_low = *det.cost_ratio - 0.1, det.cost_high = *det.cost_ratio + 0.1;
  ra::report::FixCandidate threads = det;
  threads.toggles = {{"threads", "1"}};
  threads.config = "default+threads=1";
  threads.verdict = Verdict::Diverged;
  threads.fixes = {};
  threads.fixes_all = threads.minimal = false;
  fix.candidates = {det, threads};
  fix.best = {0};
  fix.conclusion = "Deterministic algorithms fix it.";
  fix.baseline_median_ms = wall_ms;
  diverged.fix_search = fix;
  auto crashed = config("threads-1", Verdict::Crashed, "signal 11");
  crashed.trials[0].status = ra::report::TrialStatus::Crashed;
  crashed.trials[0].repeat = 1;
  crashed.trials[0].stderr_tail =
      "bell\x01"
      "bad\xFF"
      "byte\nsegfault\tin child\n";
  t.configs = {
      config("det", Verdict::Reproducible, ""),
      diverged,
      config("strict", Verdict::Raised, "index_add_cpu_ does not have a deterministic implementation\nat model.py:5"),
      crashed,
      config("threads-N", Verdict::Timeout, "timed out after 8 s"),
      config("cudnn-det", Verdict::Skipped, "needs CUDA\nbut none found")};
  ra::report::ConfigDependence dep;
  dep.groups = {{"det"}, {"strict"}};
  dep.differing = {output};
  ra::report::ConfigCause cause;
  cause.reference_config = "det";
  cause.config = "strict";
  cause.switches = {{"deterministic", "off", "on"}};
  ra::report::TraceSummary cause_trace;
  cause_trace.records = 12;
  cause_trace.runs_compared = 1;
  ra::report::RootCause sum;
  sum.op = "aten::sum";
  sum.direction = "forward";
  sum.source = "model.py:4";
  sum.position = 3;
  sum.outputs = {"float32[]"};
  sum.differing_outputs = {0};
  sum.runs_diverged = sum.runs_compared = 1;
  sum.propagated = 2;
  cause_trace.root_causes = {sum};
  cause.trace = cause_trace;
  dep.causes = {cause};
  ra::report::ConfigCause unnamed;
  unnamed.reference_config = "det";
  unnamed.config = "other";
  unnamed.note = "no op can be named: other has no traced repeat";
  dep.causes.push_back(unnamed);
  t.dependence = dep;
  ra::report::Replay replay;
  replay.config = "default";
  replay.steps_before = replay.steps_after = 2;
  replay.verdict = ra::report::ReplayVerdict::Diverged;
  ra::report::ReplayComponent params;
  params.name = "parameters";
  params.tensors = 1;
  replay.components = {params};
  replay.differing = {output};
  facts.replay = replay;
  r.body = ra::report::RunBody{{{t, facts}}};
  r.wall_ms = wall_ms;
  ra::report::finalize(r);
  return r;
}

// A comparison with a baseline, one result of every status, for every_verdict_report's target:
// torch.version changed (any device), cuda.cudnn changed (cuda), torch.library_dir ignored; det
// matches, default is nondeterministic, threads-1 explained (by torch.version and its threads
// switch), strict a regression with an output of another shape and one only in the baseline,
// cudnn-det incomparable, mkl-cbwr missing, threads-N added. Attach it and call finalize.
inline ra::report::BaselineComparison sample_baseline() {
  using ra::report::BaselineStatus;
  using ra::report::Verdict;
  ra::report::BaselineComparison b;
  b.source = "golden <1>.json";
  b.schema = "repro-audit/baseline";
  b.tool_version = "0.1.0";
  b.changes = {{"torch.version", "2.11.0", "2.12.0", "any"}, {"cuda.cudnn", "9.19.0", "9.20.0", "cuda"}};
  b.ignored = {{"torch.library_dir", "/a", "/b", ""}};
  const std::string target = "m<1>&\"'.pt";
  const auto result = [&](const char* config, BaselineStatus s, const std::string& reason) {
    ra::report::BaselineResult r;
    r.target = target;
    r.config = config;
    r.status = s;
    r.baseline_verdict = s == BaselineStatus::Added ? std::nullopt : std::optional<Verdict>(Verdict::Reproducible);
    r.current_verdict = s == BaselineStatus::Missing ? std::nullopt : std::optional<Verdict>(Verdict::Reproducible);
    r.reason = reason;
    r.tensors = 3;
    return r;
  };
  const ra::report::TensorDigest before{"output", "float32", {8}, std::string(32, 'a')};
  ra::report::TensorDigest after = before;
  after.digest = std::string(32, 'b');
  auto nondet = result("default", BaselineStatus::Nondeterministic,
                       "1 of 3 tensors differ, but the configuration diverged within the current results, so the "
                       "difference cannot be attributed");
  nondet.current_verdict = Verdict::Diverged;
  nondet.differing = 1;
  nondet.differing_tensors = {{"output", before, after}};
  auto explained = result("threads-1", BaselineStatus::Explained,
                          "1 of 3 tensors differ; explained by changes that can affect cpu: torch.version 2.11.0 -> "
                          "2.12.0, config.threads 2 -> 1");
  explained.switch_changes = {{"config.threads", "2", "1", "cpu"}};
  explained.explained_by = {"torch.version", "config.threads"};
  explained.differing = 1;
  explained.differing_tensors = {{"output", before, after}};
  auto regression = result("strict", BaselineStatus::Regression,
                           "2 of 3 tensors differ and nothing that can affect cpu changed (changed, but cannot affect "
                           "cpu: cuda.cudnn 9.19.0 -> 9.20.0)");
  ra::report::TensorDigest reshaped = before;
  reshaped.shape = {2, 4};
  regression.differing = 2;
  regression.differing_tensors = {{"output", before, reshaped}, {"loss", before, std::nullopt}};
  auto match = result("det", BaselineStatus::Match, "all 3 tensors match");
  b.results = {match,
               nondet,
               regression,
               explained,
               result("cudnn-det", BaselineStatus::Incomparable,
                      "nothing to compare: no repeat completed in the current results (skipped)"),
               result("threads-N", BaselineStatus::Added, "not in the baseline"),
               result("mkl-cbwr", BaselineStatus::Missing, "in the baseline only")};
  b.results[4].tensors = b.results[5].tensors = b.results[6].tensors = 0;
  b.results[4].current_verdict = Verdict::Skipped;
  return b;
}

}  // namespace ra::test
