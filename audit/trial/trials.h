// SPDX-License-Identifier: Apache-2.0
// Parent-side plumbing shared by `run` (audit/run/model_audit.cpp) and `probes` (audit/probes/probe_audit.cpp):
// writing a trial spec and turning it into a child job, reading results back, and the checks of
// input paths made before any child starts.
#pragma once

#include "audit/common/device.h"
#include "audit/common/files.h"
#include "audit/trial/config.h"
#include "audit/trial/placement.h"
#include "audit/trial/runner.h"
#include "audit/trial/trial_spec.h"
#include "reports/model.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace ra {

// What `run` and `probes` share: where the trials run, how many, under what, and how.
struct SessionOptions {
  Device device;  // --device, parsed at the command line's edge
  int repeats = 3;
  std::optional<report::AutoRepeats> auto_repeats;  // --repeats auto: repeats until decided (repeats unused)
  std::vector<Config> configs;
  int jobs = 1;
  double timeout_s = 600;  // per child process
  uint64_t seed = 0;
  std::vector<std::string> load_libraries;
  std::vector<std::string> command;            // argv, recorded in the report
  bool progress = false;                       // progress lines on stderr
  std::optional<report::Tolerance> tolerance;  // --atol/--rtol for the divergence statistics
  bool tolerant = false;                       // --tolerant (report::finalize)
  std::vector<int> devices;                    // --devices: GPUs to spread children over (placement.h)
  // Where `run` keeps each configuration's reference tensors past the audit, for the finish
  // (ConfigResult::reference_tensors: --baseline-tensors, or a --baseline that kept its own); null:
  // not kept. The caller owns the folder until the report is finished.
  std::shared_ptr<const ScratchDir> keep_tensors;
  // Called after the preflight and before any trial, with the body of the kind's report as its plan
  // names its targets (identity set, no results yet) and the configurations' names; throws to stop the audit
  // (--baseline checks that the baseline was made from the same targets: audit/baseline/baseline.h).
  std::function<void(const report::Body&, const std::vector<std::string>&)> check_targets;
};

// The placement of this session's children on GPUs (audit/trial/placement.h), from --devices or
// --device cuda with --jobs, the GPUs the preflight's fingerprint (`environment`) shows and the
// parent's CUDA_VISIBLE_DEVICES; nullopt when there is none. Throws UsageError.
std::optional<DevicePlacement> session_placement(const SessionOptions& o, const nlohmann::ordered_json& environment);

// Copies a reference repeat's dump out of the scratch folder into SessionOptions::keep_tensors as
// `name`, and returns where it lies now (ConfigResult::reference_tensors); "" when nothing is kept
// (no folder, no dump) or the copy failed, which a warning naming `what` says.
std::string keep_reference_tensors(const SessionOptions& o, const std::string& dump, const std::string& name,
                                   const std::string& what);

// The names of the configurations, in order.
std::vector<std::string> config_names(const std::vector<Config>& configs);

struct PreparedChild {
  ChildJob job;
  std::string result_path;
  std::string dump_path;  // for Trial and Probes tasks (a prefix for Probes), else ""
};

// Writes `spec` to <scratch>/<tag>.spec.json and describes the child that runs it (the runner
// removes the spec when the child has ended). Without `dump` the child keeps no tensor copies (the
// census needs none). Called from a JobMaker, it writes the spec only as the trial starts.
// With `gpu` (an entry of DevicePlacement::visible) the child sees only that GPU
// (CUDA_VISIBLE_DEVICES) and runs on it as cuda:0.
PreparedChild prepare_child(const ScratchDir& scratch, const std::string& tag, TrialSpec spec, double timeout_s,
                            bool dump = true, const std::string& gpu = "");

// The result a model child wrote, or nullopt when it wrote none (or an unreadable one).
std::optional<TrialResult> read_result(const std::string& path);

// The last line of a child's stderr tail, for one-line error messages.
std::string last_line(const std::string& tail);

}  // namespace ra
