// SPDX-License-Identifier: Apache-2.0
// What restart-replay adds to a target (`run --replay`, audit/train/replay.h). The JSON writer and
// reader of these structs sit beside them in reports/replay_json.cpp.
#pragma once

#include "reports/core_model.h"

#include <cstddef>
#include <string>
#include <vector>

namespace ra::report {

// Restart-replay (`run --replay`): train K/2 steps, checkpoint, resume in a fresh process, and
// compare with the uninterrupted K-step run of the same configuration (audit/train/replay.h).
enum class ReplayVerdict { Reproducible, Diverged, Inconclusive, Crashed };
const char* to_string(ReplayVerdict v);

// One component of the training state at the restart point, compared with the uninterrupted run.
struct ReplayComponent {
  std::string name;                    // parameters | buffers | optimizer | generator/cpu | generator/cuda:N
  std::string description;             // "the CPU generator state"
  size_t tensors = 0;                  // in the uninterrupted run's state
  bool in_checkpoint = true;           // false when --replay-omit left it out
  bool saved_match = true;             // the checkpointing child's state equals the uninterrupted run's
  bool restored_match = true;          // the resumed child's state after restore equals the uninterrupted run's
  std::vector<std::string> differing;  // tensors that differ after restore, in the reference's order
};

struct Replay {
  std::string config;             // "" when no configuration could be used (inconclusive)
  int steps_before = 0;           // steps of the checkpointing child
  int steps_after = 0;            // steps of the resumed child
  std::vector<std::string> omit;  // --replay-omit: rng, optimizer
  ReplayVerdict verdict = ReplayVerdict::Inconclusive;
  std::string reason;
  std::vector<ReplayComponent> components;  // parameters, buffers, optimizer, then generators
  size_t tensors_compared = 0;              // tensors of steps steps_before+1 .. steps_before+steps_after
  std::vector<TensorFinding> differing;     // resumed vs uninterrupted, in execution order
};

}  // namespace ra::report
