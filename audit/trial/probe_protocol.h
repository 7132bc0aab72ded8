// SPDX-License-Identifier: Apache-2.0
// The result file of a probe child. A probe child runs many probes one after another, so that the
// fixed cost of a process (loading LibTorch and CUDA) is paid once per configuration x repeat,
// not once per probe. Its result is a log of JSON lines, each flushed as soon as it is written:
//
//   {"event":"begin", ...TrialResult: status ok or config_error, switches, startup_ms}
//   {"event":"start","probe":NAME}
//   {"event":"probe","probe":NAME, ...TrialResult: status, message, tensors, alerts, wall_ms}
//   ... start/probe pairs ...
//   {"event":"end"}
//
// When the process dies (a segfault in a kernel, a timeout), the lines written so far survive: the
// parent keeps the finished probes, charges the crash to the probe that had started and not
// finished, and runs the remaining ones in a new process. A torn last line is ignored.
#pragma once

#include "audit/trial/trial_spec.h"

#include <map>
#include <optional>
#include <string>

namespace ra {

struct ProbeLog {
  std::optional<TrialResult> begin;        // nullopt when the child died before writing it
  std::map<std::string, TrialResult> done;  // probe -> its result
  std::string running;                      // a probe that started and did not finish, or ""
  bool ended = false;
};

std::string probe_begin_line(const TrialResult& header);
std::string probe_start_line(const std::string& probe);
std::string probe_result_line(const std::string& probe, const TrialResult& result);
std::string probe_end_line();

// Reads a probe child's log; a missing file gives an empty log.
ProbeLog read_probe_log(const std::string& path);

}  // namespace ra
