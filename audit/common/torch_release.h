// SPDX-License-Identifier: Apache-2.0
// The torch release this build serves, and what the tool says when it is newer than the newest one
// repro-audit is tested with.
//
// The problem: torch ships a release every few months, and a user who upgrades on release day must
// not be refused by a tool that worked the day before, nor be told nothing, since an untested
// release may change what the audit relies on (a switch that no longer reads back, a kernel whose
// alert moved). The approach: a build against a minor newer than the newest tested
// (cmake/TorchReleases.cmake, one constant) builds and runs. The worker's fingerprint then carries
// one line saying that the release is untested (worker/runtime/fingerprint.cpp), so `env` prints it
// and every report, which carries the fingerprint, shows it; and the front runs `selftest` once, at
// the first use of such a build (audit/selftest/first_use.h), keeping its report in the user's cache
// folder, one file per worker build and torch release, whose result that line then quotes. Nothing
// is written in the working directory, and a tested release costs one comparison.
#pragma once

#include <string>

namespace ra {

// The torch release this build was compiled against ("2.11.0", CMake's Torch_VERSION). The front
// links no torch, so it is told; the worker checks at start that it loaded this very release
// (worker/runtime/fingerprint.h).
std::string built_torch();

// The newest release repro-audit is tested with ("2.15.0", cmake/TorchReleases.cmake). The tool's own
// tests pretend this bound lower with REPRO_AUDIT_TEST_TORCH_NEWEST_TESTED (a release, "2.10.0"), rather
// than pretend the installed torch newer: the fingerprint and the line still name the real release,
// and the line names the variable. Throws UsageError when it is set to something that is not a release.
std::string newest_tested_torch();

// True when `version` ("2.16.0", "2.16.0+cu130") is a minor newer than newest_tested_torch()'s.
bool untested_torch(const std::string& version);

// The first use's selftest report of the worker `worker` with torch `version`:
// <cache>/repro-audit/first-use/torch-<version>-<hash of the worker's path, size and time>.json, where
// <cache> is $XDG_CACHE_HOME, else $HOME/.cache (absolute paths only); "" when there is neither.
std::string first_use_report(const std::string& version, const std::string& worker);

// The one line for an untested `version` ("" for a tested one): "torch 2.16.0 is newer than 2.15, the
// newest release repro-audit is tested with; selftest at its first use here: all 6 checks passed
// (report: PATH)", or what became of that selftest ("not run yet", "did not finish").
std::string untested_torch_line(const std::string& version, const std::string& worker);

}  // namespace ra
