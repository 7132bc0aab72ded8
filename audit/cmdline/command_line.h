// SPDX-License-Identifier: Apache-2.0
// The command line both executables share: the front (cli/) and the worker (worker/services/) each
// give run() their own command table, and get the same parser, the same "did you mean", and the
// one catch site that maps errors to exit codes. The ground floor under both towers: it knows no
// command of either.
#pragma once

#include <exception>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

// Only a reference to CLI11's App here: its headers cost every file that includes them about 4 s
// of a 2-core build (the files that register options include <CLI/CLI.hpp> themselves).
namespace CLI {
class App;
}  // namespace CLI

namespace ra::cmdline {

struct GlobalOptions {
  bool quiet = false;
  bool verbose = false;
  std::vector<std::string> argv;  // as given, for reports
  // exec: the command after the first "--", taken out of argv before the parser sees it (CLI11
  // reads "--" as the end of one vector option's values, and would take the command's own
  // options, such as --seed, as exec's). `dashdash` is whether there was a "--".
  bool dashdash = false;
  std::vector<std::string> after_dashdash;
};

using Action = std::function<int()>;

// One registration list feeds the parser, --help and "did you mean". A subcommand registers its
// options on `sub` and returns the action to run once parsing succeeded.
struct Command {
  const char* name;
  const char* summary;
  bool hidden;
  Action (*attach)(CLI::App& sub, const GlobalOptions& global);
};

// What distinguishes the two executables that share this parser and catch site.
struct Program {
  std::span<const Command> commands;
  // The worker turns LibTorch's own errors (c10::Error) into input errors: their one-line text,
  // or nullopt for an exception that is not one. The front has none.
  std::optional<std::string> (*library_error)(const std::exception& e, bool verbose) = nullptr;
};

// The whole command line, in-process: parses argv, runs the subcommand, maps errors to exit codes.
int run(int argc, char** argv, const Program& program);

// The closest of `candidates` to `word`, or "" when none is close.
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace ra::cmdline
