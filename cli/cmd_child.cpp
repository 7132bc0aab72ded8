// SPDX-License-Identifier: Apache-2.0
// `repro-audit __child SPEC RESULT`: the hidden subcommand every trial runs in. It reads a trial
// spec, runs it, and writes the result atomically; the parent treats a missing result as a crash.
#include "audit/child.h"
#include "audit/probe_child.h"
#include "audit/errors.h"
#include "audit/files.h"
#include "cli/commands.h"

#include <nlohmann/json.hpp>

namespace ra::cli {

Action attach_child(CLI::App& sub, const GlobalOptions&) {
  auto paths = std::make_shared<std::pair<std::string, std::string>>();
  sub.add_option("spec", paths->first, "trial spec (JSON)")->required();
  sub.add_option("result", paths->second, "where to write the result (JSON)")->required();
  return [paths] {
    TrialSpec spec;
    try {
      spec = trial_spec_from_json(nlohmann::json::parse(read_file(paths->first, "trial spec")));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(std::string("malformed trial spec: ") + e.what());
    }
    if (spec.task == ChildTask::Probes || (spec.task == ChildTask::Preflight && spec.model.empty()))
      return run_probe_child(spec, paths->second);
    const TrialResult result = run_child(spec);
    write_file_atomic(paths->second, to_json(result).dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    return 0;
  };
}

}  // namespace ra::cli
