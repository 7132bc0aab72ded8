// SPDX-License-Identifier: Apache-2.0
// `__invariance REQUEST RESULT`: one configuration's batch-invariance sweep
// (worker/invariance/batch_sweep.h), started by `repro-audit invariance`. A bad model or
// input exits 3 (a bad request 2) with one line; the front ends the audit with it.
#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "worker/invariance/batch_sweep.h"
#include "worker/services/service_table.h"

#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>

namespace ra::services {

Action attach_invariance(CLI::App& sub, const GlobalOptions&) {
  auto paths = std::make_shared<std::pair<std::string, std::string>>();
  sub.add_option("request", paths->first, "invariance request (JSON)")->required();
  sub.add_option("result", paths->second, "where to write the measurement (JSON)")->required();
  return [paths] {
    InvarianceRequest request;
    try {
      request = invariance_request_from_json(nlohmann::json::parse(read_file(paths->first, "invariance request")));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(std::string("malformed invariance request: ") + e.what());
    }
    const InvarianceMeasurement m = invariance::run_sweep(
        request, std::filesystem::absolute(paths->second).parent_path().string(), sweep_progress_path(paths->second));
    write_file_atomic(paths->second, to_json(m).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return 0;
  };
}

}  // namespace ra::services
