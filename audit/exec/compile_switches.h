// SPDX-License-Identifier: Apache-2.0
// exec's switches for compiled programs and collectives (issue 32): `compile`, `inductor.*` and
// `nccl.*` (audit/trial/config.cpp's table), and the checklist lines that compiled code and
// collectives add to the seeding checklist.
//
// How each reaches the program. Inductor reads most of its settings from the environment when
// `torch._inductor.config` is first imported, so the parent sets them in the run's environment:
// `compile=off` is TORCH_COMPILE_DISABLE=1 (torch.compile returns the eager function),
// `inductor.deterministic` is TORCHINDUCTOR_DETERMINISTIC, `inductor.autotune=off` zeroes the four
// TORCHINDUCTOR_MAX_AUTOTUNE* and COORDINATE_DESCENT variables, `nccl.nvls=off` is NCCL_NVLS_ENABLE=0
// (nccl.algo and nccl.proto are plain NCCL_ALGO and NCCL_PROTO, set by config_environment). What
// has no variable is the start-up hook's (share/exec/sitecustomize.py): `fallback_random`, and a
// torch.compile(mode="max-autotune") that autotune=off must turn down; it acts when the program
// itself imports torch._inductor.config or calls torch.compile, and reads every value back at exit.
// The parent's half is one row per switch (compile_switches.cpp: its variables, and its read-back
// when no Python process importing torch reported), the hook's another (_Hook.COMPILE).
//
// The cache. `inductor.cache=cold` gives each run a fresh TORCHINDUCTOR_CACHE_DIR and
// TRITON_CACHE_DIR inside the run's own scratch folder; `warm` gives every run of a configuration
// one folder, filled first by an untimed warm-up run of the command; `unset` leaves the user's.
// A folder that cannot be made is an input error (exit 3) naming it.
//
// Cost: a handful of variables per run; the warm-up run, once per warm configuration; nothing
// when a configuration names none of these switches.
#pragma once

#include "audit/exec/hook_report.h"
#include "audit/trial/config.h"
#include "reports/model.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ra::exec {

enum class CacheMode { Unset, Cold, Warm };

CacheMode cache_mode(const Config& config);

// The variables a run of `config` gets for these switches, beyond config_environment's.
// `cache_dir` is the run's Inductor cache folder for a cold or warm cache ("" for unset); Triton's
// is its `triton` subfolder.
std::map<std::string, std::optional<std::string>> compile_environment(const Config& config,
                                                                      const std::string& cache_dir);

// The compile switches whose environment and read-back this file holds, by key: its table's keys,
// one per compile row of switch_table (Applied::Compile; a unit test checks them against it).
std::vector<std::string> compile_switch_keys();

// Makes `dir` and its `triton` subfolder; InputError (exit 3) naming the folder and the reason.
void make_cache_folder(const std::string& dir);

// The value of a compile, Inductor or NCCL switch in a run, for report::SwitchValue::effective:
// the hook's read-back when a process reported one, else what the environment says.
std::string compile_switch_effective(const std::string& key, const HookRun& run,
                                     const std::map<std::string, std::optional<std::string>>& environment);

// Seconds the run's main process spent in torch.compile's compiling (Dynamo and Inductor, cache
// loads included), from the hook; nullopt when it compiled nothing or did not report.
std::optional<double> compile_seconds(const HookRun& run);

// One line for stderr on the time a configuration's runs spent compiling (median over `runs`),
// naming a cold or warm cache; "" when none compiled.
std::string compile_time_line(const Config& config, const std::vector<const HookRun*>& runs);

// Whether any process of the run called torch.compile.
bool called_compile(const HookRun& run);

// One configuration's reference run, as the checklist needs it.
struct ConfigRun {
  const Config* config = nullptr;
  const HookRun* hook = nullptr;
  std::vector<report::SwitchValue> switches;  // as read back (run_switches)
};

// The checklist lines for compiled code and collectives, from every configuration's reference run:
// each torch.compile call (a note), max-autotune without deterministic mode, random ops compiled
// with fallback_random off where compiled and eager runs are compared, a cache folder that runs
// side by side share (`jobs` > 1), a compile=off audit of a program that never calls torch.compile
// (a note), and per rank the NCCL variables each rank saw.
std::vector<report::ChecklistItem> compile_checklist(const std::vector<ConfigRun>& runs, int jobs);

// Whether a checklist item is about seeding (an RNG that nothing seeds: no switch can fix it).
bool is_seeding_item(const report::ChecklistItem& item);

}  // namespace ra::exec
