// SPDX-License-Identifier: Apache-2.0
// Where the tool finds itself and its data files.
#pragma once

#include <string>

namespace ra {

// Absolute path of the running executable (children are started from it).
std::string self_executable();

// The share/ folder: <prefix>/share/repro-audit next to an installed binary, else the source
// tree's share/ for a binary run from its build folder. REPRO_AUDIT_SHARE overrides both.
std::string share_dir();

// The tool's version string.
std::string tool_version();

}  // namespace ra
