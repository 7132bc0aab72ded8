// SPDX-License-Identifier: Apache-2.0
#include "audit/selftest/first_use.h"

#include "audit/common/log.h"
#include "audit/common/paths.h"
#include "audit/common/stop.h"
#include "audit/common/torch_release.h"
#include "audit/trial/runner.h"

#include <filesystem>

namespace ra {

void first_use_selftest() {
  const std::string torch = built_torch();
  if (!untested_torch(torch)) return;
  const std::string worker = worker_executable();
  const std::string report = first_use_report(torch, worker);
  std::error_code ec;
  if (report.empty() || std::filesystem::exists(report, ec)) return;
  std::filesystem::create_directories(std::filesystem::path(report).parent_path(), ec);
  if (ec) {
    log::warn("torch {} is untested, and its first-use selftest has no folder to keep its report in ({}): {}", torch,
              report, ec.message());
    return;
  }
  log::warn(
      "torch {} is newer than the newest release repro-audit is tested with: running selftest --device cpu "
      "once, at its first use here (about 20 s)",
      torch);
  ChildJob job;
  job.argv = {self_executable(), "-q", "selftest", "--device", "cpu", "--report", report};
  job.log_path = report + ".log";
  job.stdout_path = "/dev/null";
  const ChildOutcome done = run_children({job}, 1).front();
  check_stop();
  if (done.kind == ChildOutcome::Kind::Exited && (done.exit_code == 0 || done.exit_code == 1))
    std::filesystem::remove(job.log_path, ec);
  log::warn("{}", untested_torch_line(torch, worker));
}

}  // namespace ra
