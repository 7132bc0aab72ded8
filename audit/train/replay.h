// SPDX-License-Identifier: Apache-2.0
// train/: training: optimizers, checkpoints and the restart-replay.
// Restart-replay (`run --mode train --steps K --replay`): does training that is stopped after K/2
// steps, checkpointed, and resumed in a fresh process give the bits that an uninterrupted K-step
// run gives?
//
// The problem. Long training jobs are preempted and resumed from checkpoints. If the checkpoint
// leaves out state that the remaining steps depend on (the generator that draws dropout masks,
// the optimizer's moment estimates, a buffer), the resumed run silently differs from the one
// that was never interrupted, and "same seed, same data" no longer means "same model". Comparing
// final weights says that something differs, not what.
//
// The approach. Two more children run under one configuration, the first whose verdict is
// reproducible (against a nondeterministic configuration a difference would prove nothing, so
// without one the replay is inconclusive):
//   - the checkpointing child trains K/2 steps (floor) and saves parameters, buffers, optimizer
//     state and every default generator's state (worker/train/checkpoint.h), recording a digest of each;
//   - the resumed child, a fresh process, loads the model, restores the checkpoint, records the
//     digests of what it restored, and trains steps K/2+1 .. K, digesting as every trial does.
// Every uninterrupted trial of the audit also records the digests of the same state after step
// K/2. The resumed child's tensors of steps K/2+1 .. K are compared with the uninterrupted
// reference repeat's: equal means reproducible. When they differ, the state components are
// compared in a fixed order (parameters, buffers, optimizer, generators), and the first that
// differs is the reason: already in the checkpoint (the first K/2 steps did not reproduce), left
// out of it (`--replay-omit`), or lost in the restore. When every component matched, the resumed
// run diverged after an identical restore: nondeterminism, or state outside the checkpoint.
//
// The cost. Two child processes, run one after the other after the trials, plus a state digest
// after step K/2 in every trial (no copies: digests only).
#pragma once

#include "audit/common/files.h"
#include "audit/trial/analysis.h"
#include "audit/trial/config.h"
#include "audit/trial/trial_spec.h"
#include "reports/replay_model.h"
#include "reports/target_model.h"

#include <string>
#include <vector>

namespace ra {

// What the replay compares, as the children recorded it (TrialResult::state and ::tensors).
struct ReplayEvidence {
  int steps_before = 0;                                 // K/2: steps of the checkpointing child, and the restore point
  int steps_total = 0;                                  // K
  std::vector<std::string> omit;                        // --replay-omit: rng, optimizer
  std::vector<report::TensorDigest> reference_state;    // uninterrupted run, after step steps_before
  std::vector<report::TensorDigest> reference_tensors;  // uninterrupted run, every tensor
  std::vector<report::TensorDigest> saved_state;        // checkpointing child, when it saved
  std::vector<report::TensorDigest> restored_state;     // resumed child, after the restore
  std::vector<report::TensorDigest> resumed_tensors;    // resumed child, every tensor
};

// The component a state tensor belongs to: "param/fc.weight" -> "parameters", "buffer/..." ->
// "buffers", "optimizer/..." -> "optimizer", "generator/cpu" -> "generator/cpu".
std::string state_component(const std::string& tensor_name);

// The step of a trial tensor "stepN/...", 0 for the others ("param/w" digested after loading).
int step_of(const std::string& tensor_name);

// Compares the evidence: components, verdict (reproducible or diverged; inconclusive when the
// reference holds no state), reason, and the differing tensors without statistics.
report::Replay compare_replay(const std::string& config, const ReplayEvidence& evidence);

// A replay that could not run, with its reason.
report::Replay inconclusive_replay(int steps_total, const std::vector<std::string>& omit, const std::string& reason);

// Everything the two replay children need.
struct ReplayContext {
  TrialSpec base;  // the audit's trial spec: model, inputs, device, train mode, K steps, optimizer
  std::vector<std::string> omit;
  const ScratchDir* scratch = nullptr;
  double timeout_s = 600;
  DiffFn diff;            // divergence statistics between the reference's and the resumed child's dumps
  bool progress = false;  // a line on stderr as each child ends
};

// Picks the first reproducible configuration, runs the checkpointing and the resumed child under
// it, and compares them with that configuration's reference repeat (`runs[c]`, which recorded
// their state after step K/2). Never throws for what the children do: a child that fails makes
// the replay crashed, with the reason.
report::Replay run_replay(const ReplayContext& ctx, const std::vector<Config>& configs,
                          const std::vector<report::ConfigResult>& results,
                          const std::vector<std::vector<TrialRun>>& runs);

}  // namespace ra
