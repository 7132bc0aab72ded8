// SPDX-License-Identifier: Apache-2.0
// Flag configurations: named sets of switches applied in a fresh child process before CUDA or the
// model is touched.
//
// A switch is either applied through the child's environment (CUBLAS_WORKSPACE_CONFIG, MKL_CBWR,
// OMP_NUM_THREADS: these are read once when a library initialises, so the parent sets them before
// exec) or through at::globalContext() in the child before anything else runs. A switch that a
// configuration does not name keeps the value inherited from the environment and PyTorch's
// defaults; the child records the value actually in effect either way.
//
// Spelling on the command line (`--configs`): comma-separated items, each a preset name or a
// `+`-joined list of `key=value` pairs, optionally starting from a preset: `det+threads=1`.
#pragma once

#include "audit/common/device.h"

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ra {

enum class SwitchKind { Bool, Choice, Threads };

// Which devices' results a switch can change: a baseline's changed switch explains new bits only
// on those (audit/baseline/baseline.h).
enum class Affects { Any, Cpu, Cuda };

// A switch as a fix search toggles it: toward `value` (its deterministic or batch-stable setting),
// tried on the CPU and/or CUDA; not a candidate when `value` is null.
struct FixToggle {
  const char* value = nullptr;
  bool cpu = false;
  bool cuda = false;
};

// Where a switch takes effect, so who applies it and who reads it back.
enum class Applied {
  Environment,  // a variable (env_var) the parent sets before exec; read back from the environment
  Context,      // torch's state in the process: the worker (worker/runtime/switches.cpp) and exec's start-up hook
                // (share/exec/sitecustomize.py) each hold how it is set and read, by its key
  Compile,      // exec's torch.compile, Inductor and NCCL switches (audit/exec/compile_switches.h); the hook reads
                // them back
};

// One row per switch: every fact about it that the tool uses lives here (issue 42).
struct SwitchInfo {
  std::string key;
  SwitchKind kind;
  Applied applied;
  // Only `exec` applies it (a Python program's environment): a LibTorch trial has no use for it,
  // and its reports do not list it.
  bool exec_only = false;
  Affects affects = Affects::Any;
  FixToggle run_fix;                 // run's and exec's fix search (audit/trace/fix_search.h)
  FixToggle invariance_fix;          // invariance's (audit/invariance/invariance_fix.h): what changes a batch's kernel
  std::vector<std::string> choices;  // for Choice; Bool accepts on/off/true/false/1/0
  std::string env_var;               // an Environment switch's variable (threads sets OMP_NUM_THREADS as well)
  std::string help;
  // How a program sets it, for switch_snippet: an Environment switch's variable is set `when` says;
  // any other's is a line of C++ (LibTorch) and one of Python, with {on} and {On} for C++'s and
  // Python's bool (the value is on), {bit} for 1 or 0, {tf32} for TF32 or IEEE, {value} for the
  // value. A snippet that differs by value holds one form per value, joined by " | ", each but the
  // last labelled with its value ("off: ...").
  const char* when = "";
  const char* cpp = "";
  const char* python = "";
};

// The table of every switch, in a fixed order (reports list switches in this order).
std::span<const SwitchInfo> switch_table();
const SwitchInfo* find_switch(const std::string& key);

struct Config {
  std::string name;                           // as the user wrote it, or the preset name
  std::map<std::string, std::string> values;  // key -> canonical value ("on"/"off", choice, thread count)
};

// Preset names in contract order: default, benchmark, cudnn-det, det-warn, det, strict,
// threads-1, threads-N, mkl-cbwr.
const std::vector<std::string>& preset_names();

// Parses one item ("det", "threads=2", "det+tf32.cublas=off"). Throws UsageError listing the
// valid presets or keys. `logical_cpus` resolves threads=N.
Config parse_config(const std::string& item, unsigned logical_cpus);

// Splits a --configs value on commas and parses each item; duplicates are a usage error.
std::vector<Config> parse_configs(const std::vector<std::string>& args, unsigned logical_cpus);

// The default configuration list for a device.
std::vector<std::string> default_config_names(const Device& device);

// Environment the parent sets for a child running `config`: name -> value, or nullopt to unset.
std::map<std::string, std::optional<std::string>> config_environment(const Config& config);

// How a program sets switch `key` to `value` itself: one line of C++ (LibTorch) and one of Python.
// Environment switches are set before the library reads them (before the first CUDA call, before
// MKL initialises).
struct Snippet {
  std::string cpp;
  std::string python;
};
Snippet switch_snippet(const std::string& key, const std::string& value);

// Logical CPUs of this machine (at least 1).
unsigned logical_cpu_count();

}  // namespace ra
