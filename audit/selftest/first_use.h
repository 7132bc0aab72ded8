// SPDX-License-Identifier: Apache-2.0
// The first use of a build whose torch is newer than the newest tested (audit/common/torch_release.h):
// `selftest --device cpu` runs once, before the command, and its report stays in the user's cache
// folder (first_use_report), where the fingerprint's untested line reads its result from then on.
#pragma once

namespace ra {

// Before a command that runs this build's torch (cli/command_table.cpp marks them): when the build's
// release is untested and its first-use report is missing, runs the selftest in a child process (the
// front itself, its summary discarded: the report is the record) and says on stderr, in one line
// each, that it runs and what it found. The command then goes on whatever the selftest found; a
// stop signal during it interrupts the command (exit 130). Nothing happens for a tested release.
void first_use_selftest();

}  // namespace ra
