// SPDX-License-Identifier: Apache-2.0
// One registration list feeds the parser, --help and "did you mean". A subcommand registers its
// options on `sub` and returns the action to run once parsing succeeded.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace ra::cli {

struct GlobalOptions {
  bool quiet = false;
  bool verbose = false;
  std::vector<std::string> argv;  // as given, for reports
};

using Action = std::function<int()>;

struct Command {
  const char* name;
  const char* summary;
  bool hidden;
  Action (*attach)(CLI::App& sub, const GlobalOptions& global);
};

Action attach_run(CLI::App& sub, const GlobalOptions& global);
Action attach_lint(CLI::App& sub, const GlobalOptions& global);
Action attach_probes(CLI::App& sub, const GlobalOptions& global);
Action attach_compare(CLI::App& sub, const GlobalOptions& global);
Action attach_diff(CLI::App& sub, const GlobalOptions& global);
Action attach_report(CLI::App& sub, const GlobalOptions& global);
Action attach_env(CLI::App& sub, const GlobalOptions& global);
Action attach_child(CLI::App& sub, const GlobalOptions& global);
Action attach_completion(CLI::App& sub, const GlobalOptions& global);

inline const Command kCommands[] = {
    {"run", "audit a TorchScript model: repeated runs in fresh processes under flag configurations", false, attach_run},
    {"lint", "static scan of a TorchScript model's graph against the knowledge base of nondeterministic ops", false,
     attach_lint},
    {"probes", "measure, op by op, which documented nondeterministic ops diverge here and what the flags fix",
     false, attach_probes},
    {"compare", "compare two reports or baselines: which environment changes explain a changed result, which changes "
                "are regressions", false, attach_compare},
    {"diff", "bitwise diff of two torch.save files (a tensor or a state_dict): digests, dtype, shape, divergence",
     false, attach_diff},
    {"report", "re-render a saved JSON report (from run or probes) as text, JSON, JUnit XML or Markdown", false,
     attach_report},
    {"env", "print the environment fingerprint (torch, CUDA, cuDNN, cuBLAS, GPUs, CPU, threads, switches)", false,
     attach_env},
    {"__child", "internal: run one trial (used by the audit parent)", true, attach_child},
    {"__completion", "internal: print the bash or zsh completion script (used by the build)", true, attach_completion},
};

// The closest of `candidates` to `word`, or "" when none is close.
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace ra::cli
