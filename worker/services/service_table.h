// SPDX-License-Identifier: Apache-2.0
// The worker executable's subcommands (repro-audit-worker): env, lint and diff, which the front
// hands over whole (audit/cmdline/worker_options.h), and the hidden services the front starts as children:
// `__child` (a trial, a probe child or a preflight), `__stats`, `__catalogue` (audit/trial/worker.h)
// and `__selftest` (worker/child/selftest_child.h). Nobody is meant to run it by hand.
#pragma once

#include "audit/cmdline/command_line.h"

#include <span>

namespace ra::services {

using cmdline::Action;
using cmdline::Command;
using cmdline::GlobalOptions;

Action attach_env(CLI::App& sub, const GlobalOptions& global);
Action attach_lint(CLI::App& sub, const GlobalOptions& global);
Action attach_diff(CLI::App& sub, const GlobalOptions& global);
Action attach_child(CLI::App& sub, const GlobalOptions& global);
Action attach_stats(CLI::App& sub, const GlobalOptions& global);
Action attach_catalogue(CLI::App& sub, const GlobalOptions& global);
Action attach_artifacts(CLI::App& sub, const GlobalOptions& global);
Action attach_selftest(CLI::App& sub, const GlobalOptions& global);
Action attach_invariance(CLI::App& sub, const GlobalOptions& global);

std::span<const Command> commands();

}  // namespace ra::services
