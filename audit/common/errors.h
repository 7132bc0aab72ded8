// SPDX-License-Identifier: Apache-2.0
// common/: errors and exit codes, logging, files, paths, progress: what every folder uses.
// The error vocabulary and the exit codes. Two recoverable error kinds reach the user (a usage
// error and an input error); anything else is a bug and is reported as such by cli/app.cpp.
// Findings (divergence, a raised alert, a crashed trial) are data in the report, never exceptions.
#pragma once

#include <stdexcept>
#include <string>

namespace ra {

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
  Error(ExitCode code, const std::string& what) : std::runtime_error(what), code_(code) {}
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
