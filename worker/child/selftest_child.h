// SPDX-License-Identifier: Apache-2.0
// The worker's half of `repro-audit selftest` (`repro-audit-worker __selftest DEVICE RESULT FOLDER`):
// the checks that need LibTorch in-process, and the models the front then traces. The front's half,
// which runs trials and judges them, is audit/selftest/selftest.h.
#pragma once

#include "audit/common/device.h"
#include "reports/selftest_model.h"

#include <string>
#include <vector>

namespace ra {

// Checks `device` (a UsageError names a missing GPU), runs the digest check on
// it, and writes the self-test's traced models into `model_folder`: forward.pt, whose forward pass
// (a scatter with many duplicate indices), and backward.pt, whose backward pass (the gradient of a
// gather with them), are nondeterministic on that device under the default configuration.
// It also measures whether a Linear layer's row differs between batch 1 and the larger batches the
// batch-invariance probes try, on that device, and writes it to `model_folder`/invariance.json.
std::vector<report::SelfCheck> worker_selftest(const Device& device, const std::string& model_folder);

}  // namespace ra
