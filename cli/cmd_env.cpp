// SPDX-License-Identifier: Apache-2.0
// `repro-audit env [--json]`: the environment fingerprint of this machine (run by the worker:
// cli/worker/env.cpp).
#include "cli/worker_commands.h"

#include <memory>

namespace ra::cli {

void add_env_options(CLI::App& sub, EnvArgs& a) { sub.add_flag("--json", a.json, "machine-readable JSON on stdout"); }

Action attach_env(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<EnvArgs>();
  add_env_options(sub, *a);
  return forward_to_worker(global);
}

}  // namespace ra::cli
