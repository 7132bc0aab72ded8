// SPDX-License-Identifier: Apache-2.0
// One trial, in its own process. The order of steps is the point of the file:
//   1. apply the configuration's in-process switches (the environment ones were set before exec)
//      and read back what is in effect: nothing about CUDA or the model has been touched yet;
//   2. turn the TorchScript profiling executor and fusers off (they change results between the
//      first and later calls of a method);
//   3. load custom-op libraries, seed every generator (CPU and each CUDA device), load the target
//      and build its inputs (worker/targets/target.h: whatever its kind);
//   4. run it once, recording its tensors' digests, under the tracer with --trace; then, for the
//      fix search's costs, run it again unrecorded as often as the spec asks;
//   4b. with `calls` > 1 (`run --calls K`), call it K-1 more times, each recorded apart (run_later_calls);
//   5. optionally write every digested tensor to a dump file, so that the parent can compute
//      divergence statistics for the tensors whose digests differ; with the float64 referee's dump
//      (TrialSpec::reference_dump, read before the run), each floating tensor is measured against the
//      referee's as it is recorded (TrialResult::errors).
// The referee itself (ChildTask::Referee, reports/referee_model.h) is a trial of its own kind: the
// target loads in float64 (TrialSpec::precision), runs once under the precision guard
// (worker/trace/precision_guard.h) with float64 as the default dtype, and dumps every tensor.
#include "worker/child/trial_child.h"

#include "audit/common/errors.h"
#include "audit/trace/trace_io.h"
#include "worker/runtime/child_support.h"
#include "worker/runtime/fingerprint.h"
#include "worker/runtime/switches.h"
#include "worker/targets/call_state.h"
#include "worker/targets/target.h"
#include "worker/tensor_io/kept_read.h"
#include "worker/trace/op_referee.h"
#include "worker/trace/precision_guard.h"
#include "worker/trace/tracer.h"

#include <c10/core/DefaultDtype.h>

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace ra {

using report::TrialStatus;

namespace {

// `run --calls K`. The problem: a model whose results depend on what already ran in its process
// (cuDNN benchmark's first pick, a lazily built cache) is reproducible from process to process, since
// every trial's call 1 starts cold, yet its later calls differ from its first. The approach: after the
// recorded call 1, calls 2..K run with recorders that keep digests only, which go back in the result
// for the parent to compare with call 1 (audit/run/warm_up.h); under --trace, later calls are traced
// until one differs from call 1, and that one's trace is written beside call 1's. A forward that
// changes what the next call computes from (its inputs in place, a parameter, a buffer, a plain
// attribute such as a call counter) makes later calls differ for that reason, not warm-up: the state
// (targets/call_state.h) is digested before call 1 and after every call, and when a call changed it,
// what changed is named and no later call runs. Call 1 alone may set plain attributes (a lazily
// built cache), which is warm-up; any change of an input, parameter or buffer, and any change of an
// attribute from call 2 on, is a mutation. The cost: K-1 more calls, the state digested K+1 times.
void run_later_calls(const TrialSpec& spec, targets::Target& target, const c10::Device& device,
                     const std::vector<report::TensorDigest>& state_before,
                     const std::vector<report::TensorDigest>& first, TrialResult& result) {
  std::vector<report::TensorDigest> state = target.state_digests();
  result.mutated = targets::changed_state(state_before, state, /*caches_allowed=*/true);
  for (int k = 2; k <= spec.calls && result.mutated.empty(); ++k) {
    Recorder rec(false);
    std::vector<report::TensorDigest> unused_state;
    std::optional<trace::Tracer> tracer;
    if (!spec.trace_path.empty() && result.traced_call == 0) tracer.emplace(device, spec.trace_capacity);
    target.run(rec, unused_state);
    if (tracer) {
      trace::Trace t = tracer->finish();
      if (rec.tensors() != first) {
        (void)target.annotate(t);
        trace::write_trace(call_trace_path(spec.trace_path), t);
        result.traced_call = k;
      }
    }
    result.later_calls.push_back(std::move(rec.tensors()));
    std::vector<report::TensorDigest> after = target.state_digests();
    result.mutated = targets::changed_state(state, after, /*caches_allowed=*/false);
    state = std::move(after);
  }
}

// With the referee's dump (TrialSpec::reference_dump), `rec` measures each floating tensor it records
// against it; an unreadable dump gives every tensor a note instead of figures.
void compare_with_referee(const TrialSpec& spec, Recorder& rec) {
  if (spec.reference_dump.empty()) return;
  std::string problem;
  auto referee = read_own_dump(spec.reference_dump, problem);
  rec.compare_with(referee ? std::move(*referee) : std::map<std::string, at::Tensor>{},
                   referee ? "the referee has no tensor of this name"
                           : fmt::format("the referee's dump could not be read{}",
                                         problem.empty() ? "" : fmt::format(" ({})", problem)));
}

// The float64 referee's run: once, recording and dumping every tensor, with float64 the default dtype
// of factory functions (torch.zeros(3) in the model's code) and the precision guard watching every op.
// A run that raises, or that computes anything below float64, writes no dump: its message says why.
// The conditioning run (TrialSpec::perturb_inputs) dumps nothing and measures itself against the
// referee's dump instead.
void run_referee(const TrialSpec& spec, targets::Target& target, TrialResult& result) {
  c10::set_default_dtype(caffe2::TypeMeta::Make<double>());
  Recorder rec(!spec.dump_path.empty());
  rec.dump_results_only();
  compare_with_referee(spec, rec);
  std::string below;
  try {
    trace::PrecisionGuard guard;
    target.run(rec, result.state);
    below = guard.first_below();
  } catch (const TrialInputError&) {
    throw;
  } catch (const std::exception& e) {
    result.status = TrialStatus::Error;
    result.message = error_text(e);
    return;
  }
  if (!below.empty()) {
    result.status = TrialStatus::Error;
    result.error_kind = "precision";
    result.message = below;
    return;
  }
  if (!spec.dump_path.empty()) result.dump_error = rec.write_dump(spec.dump_path);
  result.tensors = std::move(rec.tensors());
  result.errors = std::move(rec.errors());
}

// A trial's recorder: dumping as the spec asks, and with the referee's dump, measuring each floating
// tensor against it (compare_with_referee).
Recorder trial_recorder(const TrialSpec& spec) {
  const auto reference = spec.dump_only_differing.find("");
  Recorder rec(!spec.dump_path.empty(),
               reference == spec.dump_only_differing.end() ? std::map<std::string, std::string>{} : reference->second);
  compare_with_referee(spec, rec);
  return rec;
}

}  // namespace

TrialResult run_child(const TrialSpec& spec) {
  TrialResult result;
  const double start = now_ms();
  // 1. switches, before anything touches CUDA or the model.
  try {
    apply_switches(spec.config);
  } catch (const std::exception& e) {
    result.status = TrialStatus::ConfigError;
    result.message = "cannot apply configuration: " + error_text(e);
    return result;
  }
  result.switches = read_switches(spec.config);
  if (const std::string mismatch = switch_mismatches(result.switches); !mismatch.empty()) {
    result.status = TrialStatus::ConfigError;
    result.message = mismatch;
    return result;
  }
  disable_jit_optimisations();
  try {
    load_libraries(spec.load_libraries);
    const c10::Device device = checked_device(spec.device);
    if (spec.task == ChildTask::Preflight) result.environment = environment_fingerprint();
    seed_generators(spec.seed);
    const std::unique_ptr<targets::Target> target = targets::open_model_target(spec);
    result.input_descriptions = target->load(spec, device);
    if (spec.task == ChildTask::Preflight) {
      result.input_names = target->input_names();
      result.package = target->package();
      const targets::Identity identity = target->identity();
      result.weights_digest = identity.weights;
      result.graph_digest = identity.graph;
    }
    result.startup_ms = ms_since_spawn();
    Recorder rec = trial_recorder(spec);
    // The preflight answers for the trials: the front drops --trace for a compiled target.
    if (!spec.trace_path.empty() && target->tracing() == targets::Tracing::Compiled) {
      if (spec.task != ChildTask::Preflight) throw TrialInputError("a compiled target cannot be traced", "usage");
      result.untraceable =
          fmt::format("{} cannot be traced op by op; auditing its outputs without --trace", target->kind());
    }
    if (!spec.trace_path.empty() && target->tracing() == targets::Tracing::None)
      throw TrialInputError(
          fmt::format("--trace cannot follow this model's ops one by one ({}); audit it without --trace",
                      target->kind()),
          "usage");
    if (spec.task == ChildTask::Referee) {
      run_referee(spec, *target, result);
    } else if (spec.task == ChildTask::Preflight) {
      result.warnings = target->check();
      // Traced: one traced run, so that what the trace cannot see is said before any trial.
      if (!spec.trace_path.empty() && target->tracing() == targets::Tracing::OpByOp) {
        std::vector<report::TensorDigest> unused_state;
        Recorder off = Recorder::off();
        trace::Tracer tracer(device, spec.trace_capacity > 0 ? spec.trace_capacity : uint64_t{1} << 16);
        target->run(off, unused_state);
        trace::Trace t = tracer.finish();
        for (auto& w : target->annotate(t)) result.warnings.push_back("--trace: " + w);
      }
    } else {
      try {
        const std::vector<report::TensorDigest> state_before =
            spec.calls > 1 ? target->state_digests() : std::vector<report::TensorDigest>{};
        std::optional<trace::Tracer> tracer;
        if (!spec.trace_path.empty()) tracer.emplace(device, spec.trace_capacity);
        if (tracer && spec.capture_order >= 0) tracer->capture(static_cast<uint64_t>(spec.capture_order));
        target->run(rec, result.state);
        if (tracer) {
          trace::Trace t = tracer->finish();
          (void)target->annotate(t);
          trace::write_trace(spec.trace_path, t);
          if (!spec.capture_path.empty()) {
            Recorder captured(true);
            for (size_t i = 0; i < tracer->captured().size(); ++i)
              if (tracer->captured()[i].defined()) captured.add(fmt::format("output/{}", i), tracer->captured()[i]);
            (void)captured.write_dump(spec.capture_path);
            trace::write_call(spec.capture_path + ".call", *tracer);
          }
        }
        tracer.reset();
        if (spec.calls > 1) run_later_calls(spec, *target, device, state_before, rec.tensors(), result);
        // Uninstrumented runs for the fix search's costs; the recorded run above was the warm-up.
        for (int i = 0; i < spec.timed_runs; ++i) {
          Recorder off = Recorder::off();
          synchronize(device);
          const double t0 = now_ms();
          std::vector<report::TensorDigest> unused_state;
          target->run(off, unused_state);
          synchronize(device);
          result.run_ms.push_back(now_ms() - t0);
        }
      } catch (const TrialInputError&) {
        throw;
      } catch (const std::exception& e) {
        const std::string msg = error_text(e);
        result.status = is_determinism_alert(msg) ? TrialStatus::Raised : TrialStatus::Error;
        result.message = msg;
      }
      result.dump_error = rec.write_dump(spec.dump_path);  // costs its statistics only
      result.tensors = std::move(rec.tensors());
      result.errors = std::move(rec.errors());
    }
  } catch (const std::exception& e) {
    record_error(result, e);
  }
  result.wall_ms = now_ms() - start;
  return result;
}

}  // namespace ra
