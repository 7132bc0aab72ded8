// SPDX-License-Identifier: Apache-2.0
// `repro-audit selftest`: does the tool work on this machine and device? Six checks, each passed
// or failed with its evidence in one sentence:
//   digests      the same bits give the same digest however and wherever computed, and a swap of
//                two elements or -0.0 for +0.0 changes it (in the worker: worker/child/selftest_child.h);
//   switches     every switch of the table, set to each of two values in a child, reads back as set;
//   detection    a positive control diverges under `default` and is reproducible under `det`, and
//                its negative control is reproducible under both (probe trials in fresh processes;
//                a positive control that did not race under default gets a second round of 16);
//   fingerprint  the environment names the torch, CPU and, on CUDA, every GPU with its name, SM
//                count, compute capability and UUID;
//   tracing      `run --trace` names a forward root cause and a backward one (on CUDA, on the
//                device's autograd thread) in two small models the worker writes.
//   invariance   the batch-invariance probes find a Linear layer variant where the worker measured
//                it so in-process, layer_norm invariant, and a one-ulp difference visible
//                (audit/selftest/selftest_invariance.h).
// The report is a normal report with no targets: `report`, `compare` and every format read it,
// and a failed check makes the exit code 1.
#pragma once

#include "audit/common/device.h"
#include "reports/model.h"

#include <string>
#include <vector>

namespace ra {

struct SelfTestOptions {
  Device device;                     // cpu, cuda, cuda:N
  int jobs = 1;                      // children at once
  double timeout_s = 300;            // per child
  std::vector<std::string> command;  // argv, recorded in the report
  bool progress = false;             // progress lines on stderr
};

// Runs every check (a missing device is a UsageError before any) and returns the finished report.
report::Report run_selftest(const SelfTestOptions& options);

// The judging, apart from the running, for tests: each returns one check from the reports it reads.
report::SelfCheck detection_check(const report::Report& probes, const std::string& positive,
                                  const std::string& negative, unsigned cpus, const Device& device);
report::SelfCheck switches_check(const report::Report& probes);
report::SelfCheck fingerprint_check(const nlohmann::ordered_json& environment, const Device& device);
report::SelfCheck tracing_check(const report::Report& forward, const report::Report& backward, const Device& device);
// The two configurations of the switches check, which between them set every switch of the table
// that a LibTorch trial applies (all but exec's) to two different values (a unit test checks them
// against the table); `cpus` for the second's thread count.
std::vector<std::string> switch_configs(unsigned cpus);

}  // namespace ra
