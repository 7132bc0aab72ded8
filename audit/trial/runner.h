// SPDX-License-Identifier: Apache-2.0
// Running children: every trial is a fresh process, so that cuDNN's benchmark cache,
// CUBLAS_WORKSPACE_CONFIG and MKL_CBWR start from scratch, and so that a segfault, an abort, an
// out-of-memory kill or a hang costs one trial, not the audit.
//
// The runner forks and execs (the environment is built before fork), puts each child in its own
// process group so that a timeout kills whatever the child started, sends the child's stdout and
// stderr to a file, and polls: waitpid(WNOHANG) for exits and a deadline per child. At most `jobs`
// children run at once. A stop signal in the parent (audit/common/stop.h) kills every child group
// and raises ra::Interrupted; a child dies with the parent if the parent is killed outright.
// What a child starts outside its group (setsid, a daemon, with or without its environment) is
// killed when the child ends, or when run_children returns or stops (audit/trial/process_tree.h):
// where the machine has a writable cgroup v2 hierarchy each child runs in a cgroup of its own,
// killed whole; elsewhere this process is a child subreaper, records each child's descendants
// while it runs, and kills those and every child left to it. While run_children runs, it owns
// this process's children: it reaps any that ends which it did not start.
//
// Jobs may be made as they start (run_children with a JobMaker): an audit of a million repeats
// writes each trial's spec just before the trial and removes it after, so neither memory nor disk
// holds a million specs, and a signal in that phase leaves nothing behind.
//
// The runner also keeps the progress line of what it runs (run_children with a ChildProgress), as
// ninja's builder calls its Status and no edge counts itself: it numbers the children, says which
// one has run long, and reports each end; a caller says only what a child is called.
#pragma once

#include "audit/common/progress.h"

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ra {

struct ChildJob {
  std::vector<std::string> argv;                          // argv[0] is the executable path
  std::map<std::string, std::optional<std::string>> env;  // overrides: value, or nullopt to unset
  std::string log_path;                                   // stdout+stderr of the child
  std::string stdout_path;                                // when set, stdout goes here and only stderr to log_path
  std::chrono::milliseconds timeout{600000};
  std::vector<std::string> remove_after;  // files removed once the child has ended (its spec)
};

struct ChildOutcome {
  enum class Kind { Exited, Signaled, TimedOut, SpawnFailed } kind = Kind::Exited;
  int exit_code = 0;
  int signal = 0;
  double wall_ms = 0;
  std::string log_tail;    // last lines of the log (only filled when the child did not exit 0)
  bool disk_full = false;  // the child failed while the filesystem of its log had no space left
};

// Runs every job, at most `jobs` at a time; `on_done(index, outcome)` is called as each ends.
// Outcomes are returned in job order.
using DoneFn = std::function<void(size_t, const ChildOutcome&)>;
// `on_tick(running)`, when given, is called every kTickEvery while children run, with the running
// ones (job index and time since it started), the longest-running first: the hook for a progress
// line that says what is still running (audit/common/progress.h).
struct RunningChild {
  size_t index;
  double elapsed_ms;
};
using TickFn = std::function<void(const std::vector<RunningChild>&)>;
inline constexpr std::chrono::milliseconds kTickEvery{1000};
std::vector<ChildOutcome> run_children(const std::vector<ChildJob>& jobs, int parallel, const DoneFn& on_done = {},
                                       const std::function<int(size_t)>& slot_of = {}, int per_slot = 1,
                                       const TickFn& on_tick = {});

// The same for `count` jobs made by `make(index)` as each is about to start (and may throw: the
// children running are then killed and the exception goes on).
using JobMaker = std::function<ChildJob(size_t)>;
// `slot_of(index)`, when given, names a resource that at most `per_slot` running children may hold
// at once (a GPU: audit/trial/placement.h), or -1 for none: a job whose slot is full waits, and a
// later job whose slot has room starts first (looking at most kSlotLookahead jobs ahead).
using SlotFn = std::function<int(size_t)>;
inline constexpr size_t kSlotLookahead = 4096;
std::vector<ChildOutcome> run_children(size_t count, const JobMaker& make, int parallel, const DoneFn& on_done = {},
                                       const SlotFn& slot_of = {}, int per_slot = 1, const TickFn& on_tick = {});

// A batch of children on a progress line (audit/common/progress.h), which the runner keeps: it
// numbers them after the children the line has finished already ("run 5/12" counts on from them),
// says every kTickEvery which one has run longest ("run 5/12 (det): 14 s, still running"), and
// reports each end after `on_done` ("[5/12] det repeat 1: 612 ms"). The line's total must count
// them already: that is the plan of whoever owns the line (Progress(total), or Progress::add before
// each batch). A child that writes how far it has got (invariance's SweepProgress) gets its
// caller's line instead of "still running": `status`, when given, makes the whole line from the
// children running, and is asked on a terminal only (it may read files).
struct ChildProgress {
  Progress& line;
  std::function<std::string(size_t)> running;                    // job i while it runs: "det"
  std::function<std::string(size_t, const ChildOutcome&)> done;  // job i once it ended: "det repeat 1: 612 ms"
  std::function<std::string(const std::vector<RunningChild>&)> status = {};
};
std::vector<ChildOutcome> run_children(size_t count, const JobMaker& make, int parallel, const ChildProgress& progress,
                                       const DoneFn& on_done = {}, const SlotFn& slot_of = {}, int per_slot = 1);
std::vector<ChildOutcome> run_children(const std::vector<ChildJob>& jobs, int parallel, const ChildProgress& progress,
                                       const DoneFn& on_done = {}, const SlotFn& slot_of = {}, int per_slot = 1);

// The last `max_lines` lines (at most `max_bytes`) of a file.
std::string file_tail(const std::string& path, size_t max_lines = 20, size_t max_bytes = 4096);

// The dynamic loader's own line when a process exited 127 because the loader could not start it (a
// library not found, a symbol or symbol version missing: the last such line of `tail`, its stderr),
// else "". Its warnings ("no version information available") are not such lines.
std::string loader_failure(int exit_code, const std::string& tail);

}  // namespace ra
