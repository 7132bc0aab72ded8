// SPDX-License-Identifier: Apache-2.0
// One registration list feeds the parser, --help and "did you mean". A subcommand registers its
// options on `sub` and returns the action to run once parsing succeeded.
#pragma once

#include <functional>
#include <span>
#include <string>

// Only a reference to CLI11's App here: its headers cost every file that includes them about 4 s
// of a 2-core build (the files that register options include <CLI/CLI.hpp> themselves).
namespace CLI {
class App;
}  // namespace CLI

namespace ra::cli {

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

struct Command {
  const char* name;
  const char* summary;
  bool hidden;
  Action (*attach)(CLI::App& sub, const GlobalOptions& global);
};

// Front subcommands (cli/cmd_*.cpp). env, lint and diff register their options in the front too
// (so that --help, "did you mean" and usage errors never start LibTorch), and then hand the whole
// command line to the worker, which runs them (worker/services/).
Action attach_run(CLI::App& sub, const GlobalOptions& global);
Action attach_lint(CLI::App& sub, const GlobalOptions& global);
Action attach_probes(CLI::App& sub, const GlobalOptions& global);
Action attach_compare(CLI::App& sub, const GlobalOptions& global);
Action attach_diff(CLI::App& sub, const GlobalOptions& global);
Action attach_report(CLI::App& sub, const GlobalOptions& global);
Action attach_merge(CLI::App& sub, const GlobalOptions& global);
Action attach_exec(CLI::App& sub, const GlobalOptions& global);
Action attach_env(CLI::App& sub, const GlobalOptions& global);
Action attach_selftest(CLI::App& sub, const GlobalOptions& global);
Action attach_invariance(CLI::App& sub, const GlobalOptions& global);
Action attach_completion(CLI::App& sub, const GlobalOptions& global);

// The front's subcommands, in --help order (cli/command_table.cpp).
std::span<const Command> front_commands();

// An action that replaces this process with the worker, given the same command line (execv), so
// that its output, exit code and signals are the command's own.
Action forward_to_worker(const GlobalOptions& global);

// The closest of `candidates` to `word`, or "" when none is close.
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace ra::cli
