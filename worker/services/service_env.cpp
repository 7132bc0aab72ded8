// SPDX-License-Identifier: Apache-2.0
// `env` in the worker: the fingerprint needs LibTorch (and its CUDA half, loaded for it).
#include "audit/cmdline/worker_options.h"
#include "audit/common/files.h"
#include "reports/render.h"
#include "worker/runtime/fingerprint.h"
#include "worker/services/service_table.h"

#include <cstdio>
#include <memory>

namespace ra::services {

Action attach_env(CLI::App& sub, const GlobalOptions&) {
  auto a = std::make_shared<cmdline::EnvArgs>();
  cmdline::add_env_options(sub, *a);
  return [a] {
    const auto env = environment_fingerprint();
    const std::string out = a->json ? env.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n"
                                    : report::render_environment_text(env);
    write_stdout(out);
    return 0;
  };
}

}  // namespace ra::services
