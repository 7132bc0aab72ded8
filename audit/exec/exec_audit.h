// SPDX-License-Identifier: Apache-2.0
// `repro-audit exec [options] -- COMMAND [ARGS...]`: the whole audit brought to any command.
//
// Each run of the command is a trial, as a model's is for `run`: a fresh process tree in its own
// process group, with its own timeout, its stdout and stderr kept in the scratch folder, under one
// configuration's switches. Environment switches are set in the command's environment; in-process
// ones reach a Python program through the start-up hook (share/exec/sitecustomize.py, put first on
// PYTHONPATH), which also records the seeding checklist (audit/exec/hook_report.h).
//
// What a run is compared by, and what that costs: audit/exec/exec_session.h.
#pragma once

#include "audit/exec/artifacts.h"
#include "audit/exec/metrics.h"
#include "audit/fleet/shard_run.h"
#include "audit/trial/trials.h"
#include "reports/model.h"

#include <optional>
#include <string>
#include <vector>

namespace ra::exec {

struct ExecOptions : SessionOptions {
  std::vector<std::string> argv;            // the command, after --
  std::vector<ArtifactPattern> artifacts;   // placed (place_artifact_pattern) against artifact_roots
  std::vector<std::string> artifact_roots;  // --artifact-root: absolute, normalised
  std::vector<MetricSpec> metrics;
  bool ranks_equal = false;  // --ranks-equal: each run's {rank} artifacts must be equal across ranks
  bool fix_search = true;    // search the switches that fix a diverged configuration
  // --fix-search always: search even where a missing seeding line explains the divergence (no
  // switch seeds an RNG, so by default the search is skipped and the line is said first).
  bool fix_search_always = false;
  int timed_runs = 5;  // fix search: timed runs of the command per candidate (median)
  std::optional<fleet::ShardOptions> shard;
};

// The executable `argv0` names: itself when it holds a '/', else the first match on PATH.
// InputError when there is none, or it is a folder or not executable.
std::string resolve_command(const std::string& argv0);

// Runs the audit and returns the finished report. InputError (exit 3) for a command that cannot be
// found, fails in every run, writes no artifact, or whose --artifact or --metric matches nothing
// in any run; Error(Incomplete) when it timed out in every run.
report::Report run_exec(const ExecOptions& options);

}  // namespace ra::exec
