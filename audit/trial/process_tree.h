// SPDX-License-Identifier: Apache-2.0
// Everything a trial starts ends with the trial, whatever it does to its process group, session or
// environment (issue 28: `env -i setsid sleep` outlived the audit, since leftovers were told by a
// variable of the environment).
//
// Problem: a trial's process group does not hold what the trial moves out of it (setsid, a daemon's
// double fork), and nothing a process carries by inheritance (a variable, a group, a session) is
// out of its reach. The kernel's own bookkeeping is: a process cannot leave its cgroup unless
// someone with write access to the cgroup tree moves it.
//
// Approach, in order of strength:
//  1. A cgroup per trial, where the machine has a writable cgroup v2 hierarchy (our own cgroup, as
//     /proc/self/cgroup and /proc/self/mountinfo name it, accepts a sub-folder). The child waits at
//     a gate (a pipe) between fork and exec until the parent has moved it into
//     <own cgroup>/repro-audit.<pid>.<n>, so every process it ever starts is born there. When the
//     trial ends (or the audit stops), the cgroup is killed whole (cgroup.kill; before Linux 5.14:
//     frozen, then each member killed) and removed once empty. A front killed outright (SIGKILL)
//     removes nothing; the next front to find the hierarchy removes the empty folders of that
//     naming whose pid no longer runs. REPRO_AUDIT_CGROUP=off skips this.
//  2. Otherwise (and for a trial whose move failed), the fallback: this process is a child
//     subreaper (PR_SET_CHILD_SUBREAPER), so whatever a trial orphans is re-parented here, and only
//     a descendant can be; and while the trial runs, its descendants (/proc/PID/task/*/children,
//     walked at most every 50 ms) are recorded with their start times, so that one re-parented
//     elsewhere (under a subreaper of the trial's own) is still known. When the trial ends, the
//     recorded ones still alive (same pid and start time) are killed; when run_children returns or
//     stops, so is every child of this process that is left (the runner is the only code of the
//     front that starts processes, and by then no trial runs), in rounds, since what those leave
//     is re-parented here as they die. A descendant started and orphaned between two walks and then
//     re-parented to a subreaper of the trial's own is the one the fallback can miss.
// Nothing is ever killed by name, and nothing that is not a descendant of this process.
//
// Cost: a pipe and a cgroup folder per trial (a few system calls), and with the fallback a walk of
// the running trials' trees every 50 ms.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace ra {

// How this machine contains trials: "cgroup" or "subreaper", with the folder or the reason.
struct Containment {
  bool cgroup = false;
  std::string detail;  // the cgroup folder trials go under, or why there is none
};
Containment containment();

class ProcessTrees {
 public:
  ProcessTrees();  // becomes a child subreaper; finds the cgroup folder (once per process)
  ~ProcessTrees();
  ProcessTrees(const ProcessTrees&) = delete;
  ProcessTrees& operator=(const ProcessTrees&) = delete;

  // A pipe the next child waits on before exec; {-1, -1} if none could be made (the child then
  // does not wait, and gets the fallback).
  struct Gate {
    int read_fd = -1;
    int write_fd = -1;
  };
  static Gate make_gate();
  // In the child, between fork and exec: async-signal-safe.
  static void wait_at_gate(const Gate& gate) noexcept;
  // In the parent, right after fork (or with pid < 0 when fork failed): puts `pid` in a cgroup of
  // its own where it can, then opens the gate. Closes the gate's descriptors either way.
  void admit(pid_t pid, Gate& gate);

  // While trials run: records the descendants of those not in a cgroup (at most every 50 ms).
  void poll();
  // Trial `pid` has ended and was reaped: kills what it left (its cgroup, or its recorded
  // descendants) and removes its cgroup.
  void ended(pid_t pid);
  // No trial runs any more (all were reaped): kills what any left, and every child of this process.
  void end_all() noexcept;

 private:
  struct Identity {
    pid_t pid;
    unsigned long long start;  // /proc/PID/stat starttime
    bool operator<(const Identity& o) const { return std::pair(pid, start) < std::pair(o.pid, o.start); }
  };
  std::map<pid_t, std::string> cgroups_;          // trial -> its cgroup folder
  std::map<pid_t, std::set<Identity>> recorded_;  // trial (fallback) -> descendants seen
  std::vector<std::string> undeleted_;            // cgroup folders not yet empty
  std::chrono::steady_clock::time_point next_walk_{};
  bool swept_ = true;  // nothing admitted since the last end_all
};

}  // namespace ra
