// SPDX-License-Identifier: Apache-2.0
// `repro-audit run`: the parent side of an audit of one model.
#pragma once

#include "audit/config.h"
#include "audit/trial_spec.h"
#include "reports/model.h"

#include <string>
#include <vector>

namespace ra {

struct RunOptions {
  std::string model;
  std::string input_file;
  std::vector<ShapeSpec> shapes;
  std::string device = "cpu";
  std::string mode = "infer";
  int steps = 1;
  int repeats = 3;
  std::vector<Config> configs;
  int jobs = 1;
  double timeout_s = 600;
  uint64_t seed = 0;
  std::vector<std::string> load_libraries;
  std::vector<std::string> command;  // argv, recorded in the report
  bool progress = false;             // progress lines on stderr
};

// Runs the preflight (throws InputError/UsageError for a bad model, inputs or device), then every
// configuration x repeat in its own child, and returns the finished report.
report::Report run_audit(const RunOptions& options);

}  // namespace ra
