// SPDX-License-Identifier: Apache-2.0
// The self-test's `invariance` check: the batch-invariance probes find a real positive and a real
// negative on this machine. The worker first measures in-process whether a Linear layer's row
// differs between batch 1 and larger batches (worker/child/selftest_child.cpp, invariance.json);
// the probes batch.linear, batch.layer_norm and batch.detect-control then run under default, and:
//   * where the Linear row differed in-process, batch.linear must be variant (more than one class);
//     where it did not (an invariant library), the check says so and relies on the controls;
//   * batch.layer_norm must be invariant (one class): the control;
//   * batch.detect-control, one ulp up at every M >= 2, must split {1} | {2…}: the comparison can
//     see a difference of one ulp on this device.
#pragma once

#include "reports/model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ra {

// What the worker measured in-process (invariance.json): the sizes tried, and those at which a
// Linear layer's row 0 differed from the row computed alone.
struct LinearRows {
  std::vector<int64_t> sizes;
  std::vector<int64_t> differs_at;
};
// Throws Error(Incomplete) for a missing or malformed file.
LinearRows read_linear_rows(const std::string& path);

// The probes whose classes the check judges, in suite order.
std::vector<std::string> invariance_check_probes();

// Judges the probes' report (run under a configuration named "default") against the measurement.
report::SelfCheck invariance_check(const report::Report& probes, const LinearRows& measured);

}  // namespace ra
