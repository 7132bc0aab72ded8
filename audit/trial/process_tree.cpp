// SPDX-License-Identifier: Apache-2.0
#include "audit/trial/process_tree.h"

#include "audit/common/log.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ra {
namespace {

// A /proc or cgroup file, whole (they are small); empty when it cannot be read.
std::string proc_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool write_text(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// The fields of /proc/PID/stat this file needs; pid 0 when the process is gone.
struct ProcStat {
  pid_t pid = 0;
  char state = 0;
  pid_t ppid = 0;
  pid_t session = 0;
  unsigned long long start = 0;
};

ProcStat proc_stat(pid_t pid) {
  const std::string stat = proc_text("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos) return {};
  std::istringstream fields(stat.substr(paren + 1));
  ProcStat s;
  long pgrp = 0;
  std::string skip;
  if (!(fields >> s.state >> s.ppid >> pgrp >> s.session)) return {};
  for (int i = 7; i < 22; ++i) fields >> skip;  // tty_nr .. itrealvalue
  if (!(fields >> s.start)) return {};
  s.pid = pid;
  return s;
}

std::vector<pid_t> pids_in(const std::string& text) {
  std::vector<pid_t> out;
  std::istringstream in(text);
  long pid = 0;
  while (in >> pid)
    if (pid > 0) out.push_back(static_cast<pid_t>(pid));
  return out;
}

// The children of `pid`, from every thread's list.
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = ::opendir(task.c_str());
  if (dir == nullptr) return out;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    for (const pid_t c : pids_in(proc_text(task + "/" + e->d_name + "/children"))) out.push_back(c);
  }
  ::closedir(dir);
  return out;
}

// Every process whose parent is this one (live or ended).
std::vector<ProcStat> own_children() {
  std::vector<ProcStat> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  const pid_t self = ::getpid();
  while (const dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    const ProcStat s = proc_stat(static_cast<pid_t>(pid));
    if (s.pid != 0 && s.ppid == self) out.push_back(s);
  }
  ::closedir(proc);
  return out;
}

// Waits (bounded: a process stuck in the kernel must not hang the audit) for child `pid` to end.
void reap(pid_t pid) {
  for (int i = 0; i < 2000; ++i) {
    const pid_t r = ::waitpid(pid, nullptr, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Unescapes a mountinfo path (\040 for a space, ...).
std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      out += static_cast<char>(std::strtol(s.substr(i + 1, 3).c_str(), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

// The pid in a cgroup folder name of ours, "repro-audit.<pid>.<n>" or "repro-audit.<pid>.probe"; 0
// for any other name.
pid_t owner_of(const std::string& name) {
  static const std::string prefix = "repro-audit.";
  if (name.rfind(prefix, 0) != 0) return 0;
  const size_t dot = name.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size() || dot - prefix.size() > 9) return 0;
  for (size_t i = prefix.size(); i < dot; ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return 0;
  const std::string rest = name.substr(dot + 1);
  if (rest.empty() || (rest != "probe" && !std::all_of(rest.begin(), rest.end(), [](char c) {
                         return std::isdigit(static_cast<unsigned char>(c)) != 0;
                       })))
    return 0;
  return static_cast<pid_t>(std::stol(name.substr(prefix.size(), dot - prefix.size())));
}

// Removes the cgroups a front killed outright left behind (SIGKILL runs no destructor, issue 39):
// folders of our naming under `folder` whose front (the pid in the name) no longer runs. Only
// those: a folder of a running front, or of a pid that was reused, is left alone, and rmdir
// removes nothing but an empty cgroup, so one that still holds a process stays.
void remove_stale_cgroups(const std::string& folder) {
  DIR* d = ::opendir(folder.c_str());
  if (d == nullptr) return;
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const pid_t owner = owner_of(name);
    if (owner <= 0 || owner == ::getpid()) continue;
    if (::kill(owner, 0) == 0 || errno != ESRCH) continue;  // running, or not ours to ask about
    stale.push_back(folder + "/" + name);
  }
  ::closedir(d);
  for (const auto& dir : stale)
    if (::rmdir(dir.c_str()) == 0) log::debug("removed the cgroup {} a killed audit left", dir);
}

Containment find_containment() {
  const char* setting = std::getenv("REPRO_AUDIT_CGROUP");
  if (setting != nullptr && std::string(setting) == "off") return {false, "REPRO_AUDIT_CGROUP=off"};
  std::string own;
  bool found = false;
  std::istringstream lines(proc_text("/proc/self/cgroup"));
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("0::", 0) == 0) {
      own = line.substr(3);
      found = true;
    }
  if (!found) return {false, "no cgroup v2 hierarchy (/proc/self/cgroup)"};
  std::string folder;
  std::istringstream mounts(proc_text("/proc/self/mountinfo"));
  for (std::string line; std::getline(mounts, line);) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream f(line.substr(0, dash));
    std::string id, parent, dev, root, point;
    if (!(f >> id >> parent >> dev >> root >> point)) continue;
    root = unescape(root);
    if (root != "/" && own.rfind(root, 0) != 0) continue;
    folder = unescape(point) + (root == "/" ? own : own.substr(root.size()));
    break;
  }
  if (folder.empty()) return {false, "the cgroup v2 hierarchy is not mounted here"};
  while (folder.size() > 1 && folder.back() == '/') folder.pop_back();
  const std::string probe = folder + "/repro-audit." + std::to_string(::getpid()) + ".probe";
  if (::mkdir(probe.c_str(), 0755) != 0)
    return {false, folder + " does not take a cgroup of ours (" + std::strerror(errno) + ")"};
  ::rmdir(probe.c_str());
  remove_stale_cgroups(folder);
  return {true, folder};
}

// Kills every process of a cgroup.
void kill_cgroup(const std::string& dir) {
  if (write_text(dir + "/cgroup.kill", "1")) return;
  // Before Linux 5.14: freeze it (no member can fork or end, so no pid is reused), kill each, thaw.
  write_text(dir + "/cgroup.freeze", "1");
  for (int round = 0; round < 64; ++round) {
    const std::vector<pid_t> members = pids_in(proc_text(dir + "/cgroup.procs"));
    if (members.empty()) break;
    for (const pid_t p : members) ::kill(p, SIGKILL);
  }
  write_text(dir + "/cgroup.freeze", "0");
}

// Removes an emptied cgroup, waiting (at most 2 s) for its killed members to end.
bool remove_cgroup(const std::string& dir) {
  for (int i = 0; i < 2000; ++i) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return true;
    if (errno != EBUSY) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

std::atomic<unsigned> cgroup_serial{0};

}  // namespace

Containment containment() {
  static const Containment c = find_containment();
  return c;
}

ProcessTrees::ProcessTrees() {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);  // what the trials orphan comes back here
  static const bool said = [] {
    const Containment c = containment();
    log::debug("trials are contained by {}: {}", c.cgroup ? "a cgroup each" : "the child subreaper", c.detail);
    return true;
  }();
  (void)said;
}

ProcessTrees::~ProcessTrees() { end_all(); }

ProcessTrees::Gate ProcessTrees::make_gate() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {};
  return {fds[0], fds[1]};
}

void ProcessTrees::wait_at_gate(const Gate& gate) noexcept {
  if (gate.read_fd < 0) return;
  ::close(gate.write_fd);
  char c = 0;
  while (::read(gate.read_fd, &c, 1) < 0 && errno == EINTR) {}
  ::close(gate.read_fd);
}

void ProcessTrees::admit(pid_t pid, Gate& gate) {
  const Containment c = containment();
  if (pid > 0 && c.cgroup) {
    const std::string dir =
        c.detail + "/repro-audit." + std::to_string(::getpid()) + "." + std::to_string(cgroup_serial++);
    if (::mkdir(dir.c_str(), 0755) == 0) {
      if (write_text(dir + "/cgroup.procs", std::to_string(pid))) {
        cgroups_[pid] = dir;
      } else {
        log::debug("trial {} could not join {} ({}): the child subreaper contains it", pid, dir, std::strerror(errno));
        ::rmdir(dir.c_str());
      }
    }
  }
  if (pid > 0) swept_ = false;
  if (pid > 0 && cgroups_.count(pid) == 0) recorded_[pid];
  if (gate.read_fd >= 0) ::close(gate.read_fd);
  if (gate.write_fd >= 0) ::close(gate.write_fd);  // the child goes on to exec
  gate = {};
}

void ProcessTrees::poll() {
  if (recorded_.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  if (now < next_walk_) return;
  next_walk_ = now + std::chrono::milliseconds(50);
  for (auto& [trial, seen] : recorded_) {
    std::vector<pid_t> todo = children_of(trial);
    for (size_t i = 0; i < todo.size() && i < 100000; ++i) {
      const ProcStat s = proc_stat(todo[i]);
      if (s.pid == 0) continue;
      seen.insert({s.pid, s.start});
      for (const pid_t c : children_of(s.pid)) todo.push_back(c);
    }
  }
}

void ProcessTrees::ended(pid_t pid) {
  if (const auto it = cgroups_.find(pid); it != cgroups_.end()) {
    kill_cgroup(it->second);
    if (!remove_cgroup(it->second)) undeleted_.push_back(it->second);
    cgroups_.erase(it);
  }
  if (const auto it = recorded_.find(pid); it != recorded_.end()) {
    for (const Identity& d : it->second) {
      const ProcStat s = proc_stat(d.pid);
      if (s.pid != 0 && s.start == d.start && s.state != 'Z' && s.state != 'X') ::kill(d.pid, SIGKILL);
    }
    recorded_.erase(it);
  }
}

void ProcessTrees::end_all() noexcept {
  if (swept_) return;
  try {
    while (!cgroups_.empty()) ended(cgroups_.begin()->first);
    while (!recorded_.empty()) ended(recorded_.begin()->first);
    // Every child left is something a trial orphaned (no trial runs now); what each leaves in
    // turn is re-parented here as it dies, hence the rounds.
    for (int round = 0; round < 64; ++round) {
      const std::vector<ProcStat> left = own_children();
      if (left.empty()) break;
      for (const ProcStat& s : left) {
        if (s.state != 'Z' && s.state != 'X') {
          if (s.session == s.pid) ::kill(-s.pid, SIGKILL);  // its session's group: its own descendants
          ::kill(s.pid, SIGKILL);
        }
        reap(s.pid);
      }
    }
    for (const std::string& dir : undeleted_)
      if (!remove_cgroup(dir))
        log::warn("the cgroup {} of a trial could not be removed: {}", dir, std::strerror(errno));
    undeleted_.clear();
    swept_ = true;
  } catch (...) {  // called from destructors: nothing may escape
  }
}

}  // namespace ra
