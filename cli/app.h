// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cli/command_table.h"

#include <exception>
#include <optional>
#include <span>
#include <string>

namespace ra::cli {

// What distinguishes the two executables that share this parser and catch site.
struct Program {
  std::span<const Command> commands;
  // The worker turns LibTorch's own errors (c10::Error) into input errors: their one-line text,
  // or nullopt for an exception that is not one. The front has none.
  std::optional<std::string> (*library_error)(const std::exception& e, bool verbose) = nullptr;
};

// The whole command line, in-process: parses argv, runs the subcommand, maps errors to exit codes.
int run(int argc, char** argv, const Program& program);

// The front: repro-audit's own subcommands.
int run(int argc, char** argv);

}  // namespace ra::cli
