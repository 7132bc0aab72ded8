// SPDX-License-Identifier: Apache-2.0
// What exec's start-up hook (share/exec/sitecustomize.py) saw in a run: one JSON file per Python
// process that imported it (hook-PID.json; the format is the hook's `report()`), read here into
// the switches in effect, where the program set them itself, and the seeding checklist.
//
// A run may leave several files: a torchrun launcher and its ranks (each rank's has RANK). The
// launcher's is set aside; ranks are merged, and a checklist line seen by several ranks is listed
// once with their numbers. Malformed files are skipped with a note: the hook runs inside the
// user's program, and nothing it writes is trusted.
#pragma once

#include "audit/trial/config.h"
#include "reports/core_model.h"
#include "reports/exec_model.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ra::exec {

struct HookProcess {
  nlohmann::json report;
  int rank = -1;  // RANK, -1 for a single process
};

struct HookRun {
  std::vector<HookProcess> processes;  // by rank (a single process: one, rank -1); the launcher left out
  bool launcher = false;               // a process without RANK beside ranks (torchrun's agent)
  std::vector<std::string> notes;      // files that could not be read
};

// Reads every hook-*.json in `dir`.
HookRun read_hook_run(const std::string& dir);

// "python" when a process imported torch, "python-without-torch" when the hook ran but torch was
// never imported, "none" when no process reported.
std::string hook_state(const HookRun& run);

// The switches as the run saw them, in switch-table order: requested from `config`; effective from
// the hook where it reported (rank 0's in a torchrun), else the environment the command was given
// (`environment`: the parent's variables with the configuration's overrides) for environment
// switches, and "not applied (...)" or "unknown (...)" for in-process ones. set_at names the last
// place the program set a switch itself.
std::vector<report::SwitchValue> run_switches(const HookRun& run, const Config& config,
                                              const std::map<std::string, std::optional<std::string>>& environment);

// The seeding checklist from what the processes recorded (see the list): seeds before the
// first draw, DataLoaders and the RNG objects their datasets hold, the switches at the first
// convolution or matmul, and the RNG states each checkpoint holds.
std::vector<report::ChecklistItem> seeding_checklist(const HookRun& run);

// torchrun facts: world size, backend, and variables the launcher set in the ranks that the
// command was not given (OMP_NUM_THREADS=1 with several processes per node).
void distributed_facts(const HookRun& run, const std::map<std::string, std::optional<std::string>>& environment,
                       report::ExecFacts& facts);

// What the hook saw in one run (the reference run of the first configuration that has one), into
// the command's facts: the hook's state and note, the seeding checklist (paths below `run_dir`
// read as $REPRO_AUDIT_OUT), torchrun facts, and how often each --metric was printed.
void hook_facts(report::ExecFacts& facts, const HookRun& run,
                const std::map<std::string, std::optional<std::string>>& environment, const std::string& run_dir,
                const std::map<std::string, std::vector<std::string>>& metrics);

}  // namespace ra::exec
