// SPDX-License-Identifier: Apache-2.0
#include "audit/trial/worker_client.h"

#include "audit/common/errors.h"
#include "audit/common/paths.h"
#include "audit/common/stop.h"
#include "audit/trial/runner.h"
#include "audit/trial/trials.h"

#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace ra {

void check_worker_loaded(const ChildOutcome& out) {
  if (out.kind != ChildOutcome::Kind::Exited) return;
  std::string line = last_line(out.log_tail);
  // The worker's own check (worker/runtime/fingerprint.h): its line as it is.
  if (const std::string prefix = "repro-audit: "; line.rfind(prefix, 0) == 0) line = line.substr(prefix.size());
  if (out.exit_code == static_cast<int>(ExitCode::Input) && line.find(" was built against torch ") != std::string::npos)
    throw InputError(line);
  line = loader_failure(out.exit_code, out.log_tail);
  if (line.empty()) return;
  // Torch's own libraries: the symbols of c10, at and torch, or a library of torch's folder.
  bool torch = false;
  for (const char* mark : {"libtorch", "libc10", "/torch/lib/lib", "_ZN3c10", "_ZN2at", "_ZN5torch"})
    torch = torch || line.find(mark) != std::string::npos;
  if (torch)
    throw InputError(
        fmt::format("the worker cannot load the torch it was built against ({}): its torch environment was moved, "
                    "replaced or upgraded, or LD_LIBRARY_PATH names another torch; rebuild against the torch you run "
                    "(./dev build, or REPRO_AUDIT_PYTHON=... ./dev build) or restore that environment",
                    excerpt(line, 600)));
  throw Error(ExitCode::Incomplete,
              fmt::format("the worker could not start: the dynamic loader failed ({}): a library it needs is shadowed "
                          "by one that lacks what it was built against (LD_LIBRARY_PATH, LD_PRELOAD) or was replaced; "
                          "unset those, or reinstall the library",
                          excerpt(line, 600)));
}

int run_forwarded(const std::vector<std::string>& argv) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw InputError(fmt::format("cannot start the worker {}: {}", argv.front(), std::strerror(errno)));
  const int user_stderr = ::fcntl(STDERR_FILENO, F_DUPFD, 10);  // no FD_CLOEXEC: the worker inherits it
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string(*e).rfind(std::string(kForwardedStderr) + "=", 0) != 0) env.push_back(*e);
  if (user_stderr >= 0) env.push_back(fmt::format("{}={}", kForwardedStderr, user_stderr));
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Child: only async-signal-safe calls from here to exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    for (const int sig : kStopSignals) ::sigaction(sig, &sa, nullptr);
    ::execve(args[0], args.data(), envp.data());
    const char* why = std::strerror(errno);
    (void)!::write(STDERR_FILENO, why, std::strlen(why));
    ::_exit(126);
  }
  const int fork_errno = errno;
  ::close(pipe_fds[1]);
  if (user_stderr >= 0) ::close(user_stderr);
  if (pid < 0) {
    ::close(pipe_fds[0]);
    throw InputError(fmt::format("cannot start the worker {}: {}", argv.front(), std::strerror(fork_errno)));
  }
  // What came before the worker's main(): the loader's lines (or exec's error), at most 64 KiB kept.
  std::string held;
  char buffer[4096], last = 1;
  int forwarded = 0;  // the stop signal passed on to the worker, once
  const auto forward_stop = [&] {
    if (const int sig = stop_signal(); sig != 0 && sig != forwarded) ::kill(pid, forwarded = sig);
  };
  for (;;) {
    forward_stop();  // one that came before the read blocks
    const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n > 0) {
      if (held.size() < (64u << 10)) held.append(buffer, static_cast<size_t>(n));
      last = buffer[n - 1];
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(pipe_fds[0]);
  // The pipe ends with a NUL byte when the worker's main() takes its stderr back (the loader is done: what
  // came before it, its warnings, is passed on now), and without one when it ended before main().
  const bool started = last == '\0';
  if (started) {
    if (!held.empty() && held.back() == '\0') held.pop_back();
    std::fputs(held.c_str(), stderr);
    held.clear();
  }
  int status = 0;
  forward_stop();
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw Error(ExitCode::Incomplete, fmt::format("the worker {} was lost", argv.front()));
    forward_stop();
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (!started && WIFEXITED(status) && code == 126 && !held.empty())
    throw InputError(fmt::format("cannot start the worker {}: {}", argv.front(), excerpt(held, 300)));
  if (!started && WIFEXITED(status)) {
    ChildOutcome out;
    out.exit_code = code;
    out.log_tail = held;
    check_worker_loaded(out);
  }
  std::fputs(held.c_str(), stderr);  // what a worker that ended before its main() said, as it was
  return code;
}

std::string worker_error_line(const ChildOutcome& out, bool user_errors) {
  check_worker_loaded(out);
  std::string line = last_line(out.log_tail);
  if (const std::string prefix = "repro-audit: "; line.rfind(prefix, 0) == 0) line = line.substr(prefix.size());
  if (user_errors && out.kind == ChildOutcome::Kind::Exited && out.exit_code == static_cast<int>(ExitCode::Usage))
    throw UsageError(line);
  if (user_errors && out.kind == ChildOutcome::Kind::Exited && out.exit_code == static_cast<int>(ExitCode::Input))
    throw InputError(line);
  if (out.kind == ChildOutcome::Kind::Exited && out.exit_code == static_cast<int>(ExitCode::Interrupted))
    throw Interrupted();
  return line;
}

void run_worker_service(const ScratchDir& scratch, const std::string& tag, const std::vector<std::string>& args,
                        double timeout_s) {
  ChildJob job;
  job.argv = {worker_executable()};
  job.argv.insert(job.argv.end(), args.begin(), args.end());
  job.log_path = scratch.path() + "/" + tag + ".log";
  job.timeout = std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  const ChildOutcome out = run_children({job}, 1).front();
  if (out.kind == ChildOutcome::Kind::Exited && out.exit_code == 0) return;
  const std::string line = worker_error_line(out);
  // A full TMPDIR makes the worker fail in whatever way it meets it first (an exception, exit 1): say
  // what happened, as the documented "no space left in TMPDIR", an input error like any full disk.
  if (out.disk_full)
    throw InputError(fmt::format("no space left in TMPDIR ({}): the worker ({}) could not write its files{}",
                                 scratch.path().substr(0, scratch.path().rfind('/')), args.empty() ? "" : args.front(),
                                 line.empty() ? "" : ": " + line));
  const std::string how = out.kind == ChildOutcome::Kind::TimedOut   ? "timed out"
                          : out.kind == ChildOutcome::Kind::Signaled ? fmt::format("died of signal {}", out.signal)
                          : out.kind == ChildOutcome::Kind::SpawnFailed
                              ? "could not be started"
                              : fmt::format("exited with code {}", out.exit_code);
  throw Error(ExitCode::Incomplete, fmt::format("the worker ({}) {}{}", args.empty() ? "" : args.front(), how,
                                                line.empty() ? "" : ": " + line));
}

ArtifactAnswer worker_artifacts(const ScratchDir& scratch, const ArtifactRequest& request, double timeout_s) {
  if (request.reads.empty() && request.compares.empty()) return {};
  static int calls = 0;
  const std::string tag = fmt::format("artifacts{}", calls++);
  const std::string request_path = scratch.path() + "/" + tag + ".request.json";
  const std::string result_path = scratch.path() + "/" + tag + ".result.json";
  write_file_atomic(request_path, to_json(request).dump());
  run_worker_service(scratch, tag, {"__artifacts", request_path, result_path}, timeout_s);
  try {
    ArtifactAnswer a = artifact_answer_from_json(nlohmann::json::parse(read_file(result_path, "artifact answer")));
    if (a.reads.size() == request.reads.size() && a.compares.size() == request.compares.size()) return a;
  } catch (const nlohmann::json::exception&) {}
  throw Error(ExitCode::Incomplete, "the worker (__artifacts) wrote an answer that does not match its request");
}

std::vector<StatsAnswer> worker_stats(const ScratchDir& scratch, const std::vector<StatsRequest>& requests,
                                      double timeout_s) {
  if (requests.empty()) return {};
  static int calls = 0;
  const std::string tag = fmt::format("stats{}", calls++);
  const std::string request_path = scratch.path() + "/" + tag + ".request.json";
  const std::string result_path = scratch.path() + "/" + tag + ".result.json";
  std::string failure;
  try {
    write_file_atomic(request_path, stats_requests_to_json(requests).dump());
    run_worker_service(scratch, tag, {"__stats", request_path, result_path}, timeout_s);
    auto answers = stats_answers_from_json(nlohmann::json::parse(read_file(result_path, "statistics")));
    if (answers.size() == requests.size()) return answers;
    failure = "the worker answered a different number of requests";
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    failure = e.what();
  }
  std::vector<StatsAnswer> out;
  for (const auto& r : requests) {
    StatsAnswer a;
    for (const auto& name : r.names) a[name].note = "statistics unavailable: " + failure;
    out.push_back(std::move(a));
  }
  return out;
}

OpClassAnswer worker_op_class(const ScratchDir& scratch, const OpClassRequest& request, double timeout_s) {
  static int calls = 0;
  const std::string tag = fmt::format("opclass{}", calls++);
  const std::string request_path = scratch.path() + "/" + tag + ".request.json";
  const std::string result_path = scratch.path() + "/" + tag + ".result.json";
  try {
    write_file_atomic(request_path, to_json(request).dump());
    run_worker_service(scratch, tag, {"__op_class", request_path, result_path}, timeout_s);
    return op_class_answer_from_json(nlohmann::json::parse(read_file(result_path, "op class")));
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    OpClassAnswer a;
    a.note = fmt::format("the op could not be examined: {}", e.what());
    return a;
  }
}

DiffFn worker_diff(const ScratchDir& scratch, double timeout_s, const std::optional<report::Tolerance>& tolerance) {
  return [&scratch, timeout_s, tolerance](const std::string& a, const std::string& b,
                                          const std::vector<std::string>& names) {
    return worker_stats(scratch, {{a, b, names, tolerance, {}, {}}}, timeout_s).front();
  };
}

std::string BatchedDiff::key(const std::string& a, const std::string& b, const std::vector<std::string>& names) {
  std::string k = a + '\n' + b;
  for (const auto& n : names) k += '\n' + n;
  return k;
}

DiffFn BatchedDiff::collect() {
  return [this](const std::string& a, const std::string& b, const std::vector<std::string>& names) {
    if (index_.emplace(key(a, b, names), requests_.size()).second)
      requests_.push_back({a, b, names, tolerance_, {}, {}});
    return StatsAnswer{};
  };
}

void BatchedDiff::declare(const std::string& path, std::vector<report::TensorDigest> declared) {
  declared_[path] = std::move(declared);
}

void BatchedDiff::resolve() {
  for (auto& r : requests_) {
    if (const auto it = declared_.find(r.dump_a); it != declared_.end()) r.declared_a = it->second;
    if (const auto it = declared_.find(r.dump_b); it != declared_.end()) r.declared_b = it->second;
  }
  answers_ = worker_stats(scratch_, requests_, timeout_s_);
}

DiffFn BatchedDiff::answer() const {
  return [this](const std::string& a, const std::string& b, const std::vector<std::string>& names) {
    const auto it = index_.find(key(a, b, names));
    return it == index_.end() || it->second >= answers_.size() ? StatsAnswer{} : answers_[it->second];
  };
}

}  // namespace ra
