// SPDX-License-Identifier: Apache-2.0
// common/: errors and exit codes, logging, files, paths, progress: what every folder uses.
// The error vocabulary and the exit codes. Two recoverable error kinds reach the user (a usage
// error and an input error); anything else is a bug and is reported as such by audit/cmdline/command_line.cpp.
// Findings (divergence, a raised alert, a crashed trial) are data in the report, never exceptions.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace ra {

// Untrusted values in messages. A value from a file (a JSON string, an entry name, a dtype) can be
// megabytes long, and a message quoting it whole floods the terminal and the logs. `excerpt` cuts
// such a value to `max` bytes (at a UTF-8 character boundary) and says how long it was:
// "aaaa... (52428800 bytes)". Every Error's message passes through `cut_message`, which keeps a
// message's head and tail (the next step is said last) around a marker, as the last line of defence.
inline constexpr size_t kMaxQuoted = 200;
inline constexpr size_t kMaxMessage = 1000;

inline size_t utf8_boundary(std::string_view s, size_t at) {
  while (at > 0 && at < s.size() && (static_cast<unsigned char>(s[at]) & 0xC0) == 0x80) --at;
  return at;
}

inline std::string excerpt(std::string_view s, size_t max = kMaxQuoted) {
  if (s.size() <= max) return std::string(s);
  return fmt::format("{}... ({} bytes)", s.substr(0, utf8_boundary(s, max)), s.size());
}

inline std::string cut_message(std::string_view s, size_t max = kMaxMessage) {
  if (s.size() <= max) return std::string(s);
  const size_t head = utf8_boundary(s, max * 2 / 3);
  const size_t tail = utf8_boundary(s, s.size() - max / 4);
  return fmt::format("{} [... {} bytes cut ...] {}", s.substr(0, head), tail - head, s.substr(tail));
}

// Stable exit codes: documented in README.md and share/man/repro-audit.1.
enum class ExitCode : int {
  Reproducible = 0,      // every verdict reproducible (configuration dependence included)
  Nondeterministic = 1,  // a divergence or a raised nondeterminism alert was found, or a baseline regression
  Usage = 2,             // bad flags, unknown configuration, key or device
  Input = 3,             // model, input, report or baseline unreadable or invalid
  Incomplete = 4,        // a trial crashed or timed out, so the verdict is incomplete
  Interrupted = 130,     // SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE (audit/common/stop.h)
};

// Base of the errors shown to the user as one line: "repro-audit: <what>".
class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& what) : std::runtime_error(cut_message(what)), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(ExitCode::Usage, what) {}
};

class InputError : public Error {
 public:
  explicit InputError(const std::string& what) : Error(ExitCode::Input, what) {}
};

class Interrupted : public Error {
 public:
  Interrupted() : Error(ExitCode::Interrupted, "interrupted") {}
};

}  // namespace ra
