// SPDX-License-Identifier: Apache-2.0
// `repro-audit env [--json]`: the environment fingerprint of this machine.
#include "audit/fingerprint.h"
#include "cli/commands.h"
#include "reports/render.h"

#include <cstdio>

namespace ra::cli {

Action attach_env(CLI::App& sub, const GlobalOptions&) {
  auto json = std::make_shared<bool>(false);
  sub.add_flag("--json", *json, "machine-readable JSON on stdout");
  return [json] {
    const auto env = environment_fingerprint();
    const std::string out = *json ? env.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n" : report::render_environment_text(env);
    std::fputs(out.c_str(), stdout);
    return 0;
  };
}

}  // namespace ra::cli
