// SPDX-License-Identifier: Apache-2.0
// `repro-audit env [--json]`: the environment fingerprint of this machine (run by the worker:
// worker/services/service_env.cpp).
#include "audit/cmdline/worker_options.h"
#include "cli/command_table.h"

#include <memory>

namespace ra::cli {

Action attach_env(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<cmdline::EnvArgs>();
  cmdline::add_env_options(sub, *a);
  // The options write into *a while CLI11 parses, after this function returns: the action keeps it
  // alive (found by the ASan front: a heap-use-after-free on every env, lint and diff).
  return [a, forward = forward_to_worker(global)] { return forward(); };
}

}  // namespace ra::cli
