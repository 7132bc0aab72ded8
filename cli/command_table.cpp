// SPDX-License-Identifier: Apache-2.0
// The front's subcommand table, and the hand-over of env, lint and diff to the worker.
#include "cli/command_table.h"

#include "audit/common/paths.h"
#include "audit/selftest/first_use.h"
#include "audit/trial/worker_client.h"

namespace ra::cli {
namespace {

// A command that runs this build's torch: at the first use of a release newer than the newest
// tested, the self-test runs once before it (audit/selftest/first_use.h). compare, report, merge and
// selftest itself are not marked: they read files or are that check.
template <Action (*attach)(CLI::App&, const GlobalOptions&)>
Action uses_torch(CLI::App& sub, const GlobalOptions& global) {
  return [action = attach(sub, global)] {
    first_use_selftest();
    return action();
  };
}

const Command kFrontCommands[] = {
    {"run",
     "audit a model (TorchScript, torch.export or AOTInductor): repeated runs in fresh processes under flag "
     "configurations",
     false, uses_torch<attach_run>},
    {"exec",
     "audit any command (a training script, torchrun): its artifacts and printed metrics compared bit for bit "
     "across runs and flag configurations, with a seeding checklist",
     false, uses_torch<attach_exec>},
    {"lint",
     "static scan of a model's graph (TorchScript or torch.export) against the knowledge base of nondeterministic ops",
     false, uses_torch<attach_lint>},
    {"probes", "measure, op by op, which documented nondeterministic ops diverge here and what the flags fix", false,
     uses_torch<attach_probes>},
    {"compare",
     "compare two reports or baselines: which environment changes explain a changed result, which changes "
     "are regressions",
     false, attach_compare},
    {"diff", "bitwise diff of two torch.save files (a tensor or a state_dict): digests, dtype, shape, divergence",
     false, uses_torch<attach_diff>},
    {"report",
     "re-render a saved JSON report (from run, probes, exec or merge) as text, JSON, JUnit XML, Markdown or HTML",
     false, attach_report},
    {"invariance",
     "does a row's result depend on the batch it shares? classes of batch sizes with identical bits, "
     "position and warm-up dependence, and what to pad or batch to",
     false, uses_torch<attach_invariance>},
    {"merge", "join the shards of one plan (run, probes or exec with --shard K/N) into one report", false,
     attach_merge},
    {"selftest",
     "check that the tool works on this machine and device: digests, switches, detection, fingerprint, "
     "tracing (run it first on a new machine or GPU)",
     false, attach_selftest},
    {"env", "print the environment fingerprint (torch, CUDA, cuDNN, cuBLAS, GPUs, CPU, threads, switches)", false,
     uses_torch<attach_env>},
    {"__completion", "internal: print the bash or zsh completion script (used by the build)", true, attach_completion},
};

}  // namespace

std::span<const Command> front_commands() { return kFrontCommands; }

int run(int argc, char** argv) { return cmdline::run(argc, argv, cmdline::Program{front_commands()}); }

Action forward_to_worker(const GlobalOptions& global) {
  return [&global] {
    std::vector<std::string> argv = {worker_executable()};
    argv.insert(argv.end(), global.argv.begin() + 1, global.argv.end());
    return run_forwarded(argv);
  };
}

}  // namespace ra::cli
