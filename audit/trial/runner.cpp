// SPDX-License-Identifier: Apache-2.0
#include "audit/trial/runner.h"

#include "audit/common/errors.h"
#include "audit/common/stop.h"
#include "audit/trial/process_tree.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <dirent.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace ra {
namespace {

std::vector<std::string> build_environment(const std::map<std::string, std::optional<std::string>>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string key = entry.substr(0, entry.find('='));
    if (overrides.count(key) == 0) env.push_back(entry);
  }
  for (const auto& [key, value] : overrides)
    if (value) env.push_back(key + "=" + *value);
  return env;
}

struct Running {
  size_t index;
  ChildJob job;
  pid_t pid;
  std::chrono::steady_clock::time_point start;
  std::chrono::steady_clock::time_point deadline;
};

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// `gate`: the child waits there before exec until the parent has placed it (process_tree.h).
pid_t spawn(const ChildJob& job, const ProcessTrees::Gate& gate) {
  const pid_t parent = ::getpid();
  std::vector<std::string> env = build_environment(job.env);
  env.push_back("REPRO_AUDIT_SPAWN_NS=" + std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                             std::chrono::steady_clock::now().time_since_epoch())
                                                             .count()));
  std::vector<char*> argv, envp;
  for (const auto& a : job.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  const int log_fd = ::open(job.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) return -1;
  const int out_fd = job.stdout_path.empty()
                         ? log_fd
                         : ::open(job.stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out_fd < 0) {
    ::close(log_fd);
    return -1;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Child: only async-signal-safe calls from here to exec.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // die with the parent, even when it is killed outright
    if (::getppid() != parent) ::_exit(127);
    ProcessTrees::wait_at_gate(gate);
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    for (const int sig : kStopSignals) ::sigaction(sig, &sa, nullptr);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(log_fd);
  if (out_fd != log_fd) ::close(out_fd);
  if (pid > 0) ::setpgid(pid, pid);  // also from the parent, to close the race with killpg
  return pid;
}

// Reaps, while children run, the adopted descendants that have ended (a trial's leftovers killed
// with its group end up here), so that a long audit does not pile up zombies.
void reap_ended_orphans(const std::vector<Running>& running) {
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
    for (const auto& r : running)
      if (r.pid == info.si_pid) return;  // a child of ours: the polling loop reaps it
    ::waitpid(info.si_pid, nullptr, 0);
  }
}

void kill_group(pid_t pid) {
  ::killpg(pid, SIGKILL);
  ::kill(pid, SIGKILL);
}

}  // namespace

std::string file_tail(const std::string& path, size_t max_lines, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff from =
      size > static_cast<std::streamoff>(max_bytes) ? size - static_cast<std::streamoff>(max_bytes) : 0;
  in.seekg(from);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  size_t lines = 0, pos = text.size();
  while (pos > 0) {
    if (text[pos - 1] == '\n' && ++lines == max_lines) break;
    --pos;
  }
  return text.substr(pos);
}

std::string loader_failure(int exit_code, const std::string& tail) {
  if (exit_code != 127) return "";
  // ld.so's fatal messages; its warnings ("no version information available") come before them.
  const auto fatal = [](const std::string& line) {
    return line.find("error while loading shared libraries") != std::string::npos ||
           line.find("symbol lookup error") != std::string::npos ||
           line.find("relocation error") != std::string::npos ||
           (line.find(": version `") != std::string::npos && line.find("' not found") != std::string::npos);
  };
  std::istringstream lines(tail);
  std::string found;
  for (std::string line; std::getline(lines, line);)
    if (fatal(line)) found = line;
  return found;
}

// Whether the filesystem holding `path` has (almost) no space left.
bool no_space_at(const std::string& path) {
  struct statvfs st {};
  const std::string dir = path.substr(0, path.rfind('/') == std::string::npos ? 0 : path.rfind('/'));
  if (::statvfs(dir.empty() ? "." : dir.c_str(), &st) != 0) return false;
  return static_cast<unsigned long long>(st.f_bavail) * st.f_frsize < (64u << 10);
}

std::vector<ChildOutcome> run_children(const std::vector<ChildJob>& jobs, int parallel, const DoneFn& on_done,
                                       const std::function<int(size_t)>& slot_of, int per_slot, const TickFn& on_tick) {
  return run_children(
      jobs.size(), [&jobs](size_t i) { return jobs[i]; }, parallel, on_done, slot_of, per_slot, on_tick);
}

namespace {

// The children of one run_children call: the jobs not started yet, the children running (each
// holding its slot), and what each ended with. run_children's loop starts, reaps and ticks
// through it.
class ChildPool {
 public:
  ChildPool(size_t count, const JobMaker& make, int parallel, const DoneFn& on_done, const SlotFn& slot_of,
            int per_slot)
      : count_(count),
        make_(make),
        parallel_(std::max(1, parallel)),
        on_done_(on_done),
        slot_of_(slot_of),
        capacity_(static_cast<size_t>(std::max(1, per_slot))),
        outcomes_(count),
        started_(slot_of ? count : 0, 0) {}

  bool done() const { return next_ >= count_ && running_.empty(); }

  // Starts jobs while fewer than `parallel` children run and one can start.
  void start_ready() {
    for (size_t i = pick(); i < count_ && static_cast<int>(running_.size()) < parallel_; i = pick()) start(i);
  }

  // Reaps the children that have ended and kills those past their deadline; whether any did.
  bool reap() {
    reap_ended_orphans(running_);
    trees_.poll();
    bool progressed = false;
    for (size_t r = 0; r < running_.size();) {
      int status = 0;
      const pid_t ended = ::waitpid(running_[r].pid, &status, WNOHANG);
      if (ended == running_[r].pid) {
        ChildOutcome o;
        if (WIFSIGNALED(status)) {
          o.kind = ChildOutcome::Kind::Signaled;
          o.signal = WTERMSIG(status);
        } else {
          o.exit_code = WEXITSTATUS(status);
        }
        ::killpg(running_[r].pid, SIGKILL);  // anything the child left behind
        trees_.ended(running_[r].pid);       // and outside its group
        finish(r, o);
        progressed = true;
        continue;
      }
      if (std::chrono::steady_clock::now() >= running_[r].deadline) {
        kill_group(running_[r].pid);
        ::waitpid(running_[r].pid, nullptr, 0);
        trees_.ended(running_[r].pid);
        ChildOutcome o;
        o.kind = ChildOutcome::Kind::TimedOut;
        finish(r, o);
        progressed = true;
        continue;
      }
      ++r;
    }
    return progressed;
  }

  // The children running, in the order they started, for on_tick.
  std::vector<RunningChild> running() const {
    std::vector<RunningChild> now;
    for (const auto& r : running_) now.push_back({r.index, ms_since(r.start)});
    return now;
  }
  bool any_running() const { return !running_.empty(); }

  // Kills and reaps every running child: on a stop signal, or when making a job failed.
  void stop_all() {
    for (const auto& r : running_) kill_group(r.pid);
    for (const auto& r : running_) {
      ::waitpid(r.pid, nullptr, 0);
      remove_files(r.job);
    }
    running_.clear();
    trees_.end_all();
  }

  // What every child ended with, in job order, once all have; what they started ends with them.
  std::vector<ChildOutcome> outcomes() {
    trees_.end_all();
    return std::move(outcomes_);
  }

 private:
  // The next job to start: `next_`, or with slots the first within reach whose slot is free;
  // `count_` when none can start now.
  size_t pick() {
    if (!slot_of_) return next_;
    for (size_t i = next_; i < count_ && i < next_ + kSlotLookahead; ++i) {
      if (started_[i]) continue;
      const int slot = slot_of_(i);
      if (slot < 0 || busy_[slot] < capacity_) return i;
    }
    return count_;
  }

  void advance(size_t i) {
    if (!slot_of_) {
      ++next_;
      return;
    }
    started_[i] = 1;
    while (next_ < count_ && started_[next_]) ++next_;
  }

  void start(size_t i) {
    const auto now = std::chrono::steady_clock::now();
    ChildJob job;
    try {
      job = make_(i);
    } catch (...) {
      stop_all();
      throw;
    }
    advance(i);
    ProcessTrees::Gate gate = ProcessTrees::make_gate();
    const pid_t pid = spawn(job, gate);
    const int spawn_errno = errno;
    trees_.admit(pid, gate);
    errno = spawn_errno;
    if (pid < 0) {
      ChildOutcome o;
      o.kind = ChildOutcome::Kind::SpawnFailed;
      o.log_tail = std::string("cannot start child: ") + std::strerror(errno);
      o.disk_full = errno == ENOSPC;
      remove_files(job);
      outcomes_[i] = o;
      if (on_done_) on_done_(i, o);
    } else {
      const auto timeout = job.timeout;
      if (slot_of_ && slot_of_(i) >= 0) ++busy_[slot_of_(i)];
      running_.push_back({i, std::move(job), pid, now, now + timeout});
    }
  }

  void finish(size_t r, ChildOutcome outcome) {
    const size_t index = running_[r].index;
    outcome.wall_ms = ms_since(running_[r].start);
    if (!(outcome.kind == ChildOutcome::Kind::Exited && outcome.exit_code == 0)) {
      outcome.log_tail = file_tail(running_[r].job.log_path);
      outcome.disk_full = no_space_at(running_[r].job.log_path) ||
                          outcome.log_tail.find("No space left on device") != std::string::npos;
    }
    remove_files(running_[r].job);
    outcomes_[index] = outcome;
    if (slot_of_ && slot_of_(index) >= 0) --busy_[slot_of_(index)];
    running_.erase(running_.begin() + static_cast<long>(r));
    if (on_done_) on_done_(index, outcomes_[index]);
  }

  static void remove_files(const ChildJob& job) {
    for (const auto& f : job.remove_after) ::unlink(f.c_str());
  }

  const size_t count_;
  const JobMaker& make_;
  const int parallel_;
  const DoneFn& on_done_;
  const SlotFn& slot_of_;
  const size_t capacity_;  // children that may hold one slot at once
  std::vector<ChildOutcome> outcomes_;
  std::vector<Running> running_;
  size_t next_ = 0;  // the first job not started
  std::vector<char> started_;
  std::map<int, size_t> busy_;  // slot -> running children holding it (0 to capacity_)
  ProcessTrees trees_;          // what the children start, wherever it goes, ends with them (process_tree.h)
};

}  // namespace

std::vector<ChildOutcome> run_children(size_t count, const JobMaker& make, int parallel, const DoneFn& on_done,
                                       const SlotFn& slot_of, int per_slot, const TickFn& on_tick) {
  ChildPool pool(count, make, parallel, on_done, slot_of, per_slot);
  auto next_tick = std::chrono::steady_clock::now() + kTickEvery;
  while (!pool.done()) {
    if (stop_signal() != 0) {
      pool.stop_all();
      throw Interrupted();
    }
    pool.start_ready();
    const bool progressed = pool.reap();
    if (on_tick && pool.any_running() && std::chrono::steady_clock::now() >= next_tick) {
      on_tick(pool.running());
      next_tick = std::chrono::steady_clock::now() + kTickEvery;
    }
    if (!progressed) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::vector<ChildOutcome> outcomes = pool.outcomes();
  return outcomes;
}

std::vector<ChildOutcome> run_children(size_t count, const JobMaker& make, int parallel, const ChildProgress& progress,
                                       const DoneFn& on_done, const SlotFn& slot_of, int per_slot) {
  const size_t numbered = progress.line.finished();  // children finished before these
  const auto done = [&](size_t i, const ChildOutcome& outcome) {
    if (on_done) on_done(i, outcome);
    progress.line.done(progress.done(i, outcome));
  };
  const auto tick = [&](const std::vector<RunningChild>& now) {
    if (progress.status) {
      if (progress.line.terminal()) progress.line.show(progress.status(now));
      return;
    }
    const RunningChild& longest = now.front();
    progress.line.still_running(numbered + longest.index + 1, progress.running(longest.index), longest.elapsed_ms,
                                now.size() - 1);
  };
  return run_children(count, make, parallel, done, slot_of, per_slot, tick);
}

std::vector<ChildOutcome> run_children(const std::vector<ChildJob>& jobs, int parallel, const ChildProgress& progress,
                                       const DoneFn& on_done, const SlotFn& slot_of, int per_slot) {
  return run_children(
      jobs.size(), [&jobs](size_t i) { return jobs[i]; }, parallel, progress, on_done, slot_of, per_slot);
}

}  // namespace ra
