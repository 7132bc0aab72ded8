// SPDX-License-Identifier: Apache-2.0
// The worker executable's subcommands (repro-audit-worker): env, lint and diff, which the front
// hands over whole (audit/cmdline/worker_options.h), and the hidden services the front starts as children:
// `__child` (a trial, a probe child or a preflight), `__stats`, `__catalogue` (audit/trial/worker_client.h)
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
Action attach_op_class(CLI::App& sub, const GlobalOptions& global);
Action attach_selftest(CLI::App& sub, const GlobalOptions& global);
Action attach_invariance(CLI::App& sub, const GlobalOptions& global);

// When a command needs LibTorch's CUDA half, which main() loads before anything could ask torch
// whether CUDA exists (worker/runtime/cuda_loader.h): a column of the worker's command table.
enum class Cuda {
  Never,
  Always,          // `env`: it lists the GPUs
  DeviceArgument,  // `__selftest DEVICE`: a CUDA device
  Spec,            // `__child SPEC`: the spec names a CUDA device, or is a preflight (which records the fingerprint)
  Request,         // `__invariance REQUEST`: its spec names a CUDA device, or it asks for the fingerprint
};

// A row of the worker's command table: the command, and when it needs CUDA.
struct Service {
  Command command;
  Cuda cuda;
};

std::span<const Command> commands();

// Whether the command of `argv` needs the CUDA half, as its row says (any command with
// REPRO_AUDIT_LOAD_CUDA=1: repro-audit-bench compares both). A file it cannot read says no: the
// command itself reports it.
bool needs_cuda(int argc, char** argv);

}  // namespace ra::services
