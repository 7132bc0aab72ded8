// SPDX-License-Identifier: Apache-2.0
// The child side of `repro-audit probes`: one process per configuration x repeat runs the probes
// of the spec in turn and logs each result as a JSON line (audit/trial/probe_protocol.h).
#pragma once

#include "audit/trial/trial_spec.h"

#include <string>

namespace ra {

// Runs spec.probes under spec.config and appends the log to `log_path`. A Preflight spec (no model)
// only checks the device and the plugins and logs the environment fingerprint in its begin line. Never throws for a probe's
// failure: it becomes that probe's status. Returns the process exit code (0).
int run_probe_child(const TrialSpec& spec, const std::string& log_path);

// Loads the --load-library plugins that export ra_probe_plugin_v1 and registers their probes
// (also used by the parent to list and select them). Throws InputError.
void load_probe_plugins(const std::vector<std::string>& libraries);

// Loads the plugins, then writes every probe's description (audit/probes/probe_info.h) to `path` as a
// JSON array, in suite order: the worker's `__catalogue` service.
void write_probe_catalogue(const std::string& path, const std::vector<std::string>& libraries);

}  // namespace ra
