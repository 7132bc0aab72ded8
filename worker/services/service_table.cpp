// SPDX-License-Identifier: Apache-2.0
#include "worker/services/service_table.h"

namespace ra::services {
namespace {

const Command kWorkerCommands[] = {
    {"env", "the environment fingerprint", false, attach_env},
    {"lint", "static scan of a model's graph", false, attach_lint},
    {"diff", "bitwise diff of two torch.save files", false, attach_diff},
    {"__child", "run one trial, probe child or preflight", true, attach_child},
    {"__stats", "divergence statistics between dumps", true, attach_stats},
    {"__catalogue", "the probe catalogue", true, attach_catalogue},
    {"__artifacts", "what exec's artifacts hold and how they differ", true, attach_artifacts},
    {"__selftest", "the self-test's in-process checks", true, attach_selftest},
    {"__invariance", "one configuration's batch-invariance sweep", true, attach_invariance},
};

}  // namespace

std::span<const Command> commands() { return kWorkerCommands; }

}  // namespace ra::services
