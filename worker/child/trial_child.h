// SPDX-License-Identifier: Apache-2.0
// child/ (worker): the worker's entry points: the trial child and the probe child.
// The child side of a trial (`repro-audit-worker __child SPEC RESULT`).
#pragma once

#include "audit/trial/trial_spec.h"

namespace ra {

// Runs a preflight or a trial as `spec` says and returns its result. Never throws for problems of
// the model or its inputs: they become the result's status and message.
TrialResult run_child(const TrialSpec& spec);

}  // namespace ra
