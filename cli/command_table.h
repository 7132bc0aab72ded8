// SPDX-License-Identifier: Apache-2.0
// The front's command table: one registration list feeds the parser, --help and "did you mean". A
// subcommand registers its options on `sub` and returns the action to run once parsing succeeded.
#pragma once

#include "audit/cmdline/command_line.h"

#include <span>
#include <string>

namespace ra::cli {

// The parser, the catch site and "did you mean" are the ground floor both executables share
// (audit/cmdline/command_line.h); this table and its commands are the front's.
using cmdline::Action;
using cmdline::closest;
using cmdline::Command;
using cmdline::GlobalOptions;

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

// The front, in-process: repro-audit's own subcommands through the shared catch site.
int run(int argc, char** argv);

// An action that replaces this process with the worker, given the same command line (execv), so
// that its output, exit code and signals are the command's own.
Action forward_to_worker(const GlobalOptions& global);

}  // namespace ra::cli
