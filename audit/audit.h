// SPDX-License-Identifier: Apache-2.0
// `repro-audit run`: the parent side of an audit of one model.
#pragma once

#include "audit/config.h"
#include "audit/trial_spec.h"
#include "audit/trials.h"
#include "reports/model.h"

#include <string>
#include <vector>

namespace ra {

struct RunOptions : SessionOptions {
  std::string model;
  std::string input_file;
  std::vector<ShapeSpec> shapes;
  std::string mode = "infer";
  int steps = 1;
  std::string optimizer = "sgd";  // train mode: sgd | adam
  double lr = 0.01;               // train mode: learning rate
};

// Runs the preflight (throws InputError/UsageError for a bad model, inputs or device), then every
// configuration x repeat in its own child, and returns the finished report.
report::Report run_audit(const RunOptions& options);

}  // namespace ra
