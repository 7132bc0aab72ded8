// SPDX-License-Identifier: Apache-2.0
// The subcommands the worker runs for the user (env, lint, diff): their options, registered by the
// front for parsing (cli/cmd_env.cpp, cmd_lint.cpp, cmd_diff.cpp) and by the worker for running
// (worker/services/), so both read a command line alike.
#pragma once

#include "audit/cmdline/shared_options.h"

#include <string>
#include <vector>

namespace ra::cmdline {

struct EnvArgs {
  bool json = false;
};
void add_env_options(CLI::App& sub, EnvArgs& a);

struct LintArgs {
  std::string model;
  std::string device = "cpu";
  std::string report;
  std::string sarif;       // SARIF 2.1.0 for code scanning
  std::string sarif_root;  // the repository root its paths start from; "" for the working directory's
  std::string knowledge;
  bool json = false;
  std::vector<std::string> libraries;
  std::string allowlist;
  std::string mode = "infer";     // infer | train: whether backward entries apply
  bool strict = false;            // notes fail too
  bool batch_invariance = false;  // batch-variant ops are ranked warnings, not notes
  bool verbose = false;           // every finding in full
};
void add_lint_options(CLI::App& sub, LintArgs& a);

struct DiffArgs {
  std::string a;
  std::string b;
  std::string key;
  std::string report;
  bool json = false;
  ToleranceArgs tolerance;
};
void add_diff_options(CLI::App& sub, DiffArgs& a);

}  // namespace ra::cmdline
