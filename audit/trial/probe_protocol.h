// SPDX-License-Identifier: Apache-2.0
// The result file of a probe child. A probe child runs many probes one after another, so that the
// fixed cost of a process (loading LibTorch and CUDA) is paid once per configuration x repeat,
// not once per probe. Its result is a log of JSON lines, each flushed as soon as it is written:
//
//   {"event":"begin", ...TrialResult: status ok or config_error, switches, startup_ms}
//   {"event":"start","probe":NAME}
//   {"event":"probe","probe":NAME, ...TrialResult: status, message, tensors, alerts, wall_ms}
//   ... start/probe pairs ...
//   {"event":"end"}                        or, after a sticky device error,
//   {"event":"restart","reason":TEXT}      the probes left run in a fresh process
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
  std::optional<TrialResult> begin;         // nullopt when the child died before writing it
  std::map<std::string, TrialResult> done;  // probe -> its result
  std::string running;                      // a probe that started and did not finish, or ""
  bool ended = false;
  std::string restart;  // why the child stopped early on purpose, or ""
};

std::string probe_begin_line(const TrialResult& header);
std::string probe_start_line(const std::string& probe);
std::string probe_result_line(const std::string& probe, const TrialResult& result);
std::string probe_end_line();
// A sticky device error (an illegal address, a device-side assert) poisons the CUDA context: every
// later probe in the process would fail. The child files the probe that hit it, writes this line
// and exits; the parent runs the probes left in a fresh process.
std::string probe_restart_line(const std::string& reason);

// Reads a probe child's log; a missing file gives an empty log.
ProbeLog read_probe_log(const std::string& path);

}  // namespace ra
