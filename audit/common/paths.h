// SPDX-License-Identifier: Apache-2.0
// Where the tool finds itself and its data files.
#pragma once

#include <string>

namespace ra {

// Absolute path of the running executable (children are started from it).
std::string self_executable();

// The worker executable (repro-audit-worker), which runs everything that needs LibTorch: beside
// the running binary (a build folder, or the worker itself), else <prefix>/libexec/repro-audit/
// for an installed front. REPRO_AUDIT_WORKER overrides both. Throws InputError when it is missing.
std::string worker_executable();

// The share/ folder: <prefix>/share/repro-audit for an installed binary (the front in bin/, the
// worker in libexec/repro-audit/), else the source tree's share/ for a binary run from its build
// folder. REPRO_AUDIT_SHARE overrides both.
std::string share_dir();

// The tool's version string.
std::string tool_version();

}  // namespace ra
