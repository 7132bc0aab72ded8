# SPDX-License-Identifier: Apache-2.0
# The torch releases repro-audit builds against (docs/TORCH_RELEASES.md), one constant each. ./dev
# reads both from here (`torch_range` in dev), the front and the worker are told the newest tested
# (audit/common/torch_release.h), and both builds, ./dev's and pip's, check their torch with
# ra_check_torch_release():
#   * older than RA_TORCH_MIN: refused in one line (the LibTorch API the worker uses differs);
#   * a minor newer than RA_TORCH_NEWEST_TESTED's: built, with one line saying that the release is
#     untested; the tool then says so in `env` and in every report, and runs `selftest` at its
#     first use (audit/common/torch_release.h).
# A new release that passes the tests becomes RA_TORCH_NEWEST_TESTED (and ./dev's test-newest leg).
set(RA_TORCH_MIN 2.11)
set(RA_TORCH_NEWEST_TESTED 2.15.0)

# ra_check_torch_release(VERSION ADVICE...): stops, in one line first, when VERSION is older than
# RA_TORCH_MIN (ADVICE, its pieces joined, says how to choose another torch); one line when it is
# untested.
function(ra_check_torch_release version)
  string(JOIN "" advice ${ARGN})
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" minor "${version}")
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" newest "${RA_TORCH_NEWEST_TESTED}")
  if(NOT minor OR minor VERSION_LESS RA_TORCH_MIN)
    # NOTICE prints the line as it is (FATAL_ERROR would wrap it); the error follows.
    message(NOTICE "repro-audit: torch ${version} is older than ${RA_TORCH_MIN}, the oldest release repro-audit "
                   "supports: ${advice}")
    message(FATAL_ERROR "unsupported torch ${version} (the line above)")
  elseif(minor VERSION_GREATER newest)
    message(NOTICE "repro-audit: warning: torch ${version} is newer than ${newest}, the newest release repro-audit "
                   "is tested with: it builds, and the tool says so in env and in every report and runs its "
                   "selftest at first use")
  endif()
endfunction()
