// SPDX-License-Identifier: Apache-2.0
// Where the tool finds itself and its data files.
#pragma once

#include <cstddef>
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

// How a report shows a file of Python source (issue 43 item 7: reports carried the runner's venv
// path): a file inside an installed package relative to its site-packages or dist-packages folder
// ("torch/nn/modules/linear.py"), the user's own files relative to `cwd` where they lie under it,
// any other path as it is.
std::string shown_path(const std::string& path, const std::string& cwd);

// The same for a place in source, "PATH:LINE: CODE", "PATH:LINE" or "PATH:LINE (node n)": its path
// as shown_path shows it, and its line of code whole up to kShownCode bytes, else cut before a
// character with "…". Text that names no PATH:LINE is returned as it is.
inline constexpr size_t kShownCode = 160;
std::string shown_source(const std::string& source, const std::string& cwd);

// A place in a traced (not scripted) TorchScript module: such a module keeps no code, only the
// Python stack it was traced through, so its "line of code" is "PATH(LINE): FUNCTION" and a report
// showed the path twice. Returns "PATH:LINE: CODE" with the line read from PATH where it can be,
// else "PATH:LINE (in FUNCTION)"; any other source as it is.
std::string traced_source(const std::string& source);

// The working directory, "" when it cannot be read.
std::string working_directory();

}  // namespace ra
