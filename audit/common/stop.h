// SPDX-License-Identifier: Apache-2.0
// Stopping the tool any way a user or a pipeline can: SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGPIPE
// (a closed pipe on stdout, `repro-audit ... | head`). The handlers only record the signal; the
// places that wait or write check it and throw ra::Interrupted, so the stack unwinds: every child
// process group is killed (audit/trial/runner.h), the scratch folder's destructor removes it, and no
// report is half-written (reports are written to a temporary file and renamed). The tool then
// exits 130, whichever signal it was. Children get the default handlers back before exec, and die
// with their parent (PR_SET_PDEATHSIG) should it be killed outright.
#pragma once

namespace ra {

// Installs the handlers for the rest of the process (the front's main()).
void install_stop_handlers();

// The signal that asked the tool to stop, or 0.
int stop_signal();

// Throws ra::Interrupted when a stop signal has arrived.
void check_stop();

// The signals handled, for children to restore to their defaults.
inline constexpr int kStopSignals[] = {2 /*INT*/, 15 /*TERM*/, 1 /*HUP*/, 3 /*QUIT*/, 13 /*PIPE*/};

}  // namespace ra
