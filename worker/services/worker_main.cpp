// SPDX-License-Identifier: Apache-2.0
// repro-audit-worker: the half of the tool that links LibTorch (see CMakeLists.txt). It loads
// LibTorch's CUDA half only for the commands whose row of the command table asks for it
// (worker/services/service_table.h: `env`, and work on a CUDA device or recording the fingerprint),
// before anything could ask torch whether CUDA exists (worker/runtime/cuda_loader.h).
#include "audit/cmdline/command_line.h"
#include "audit/common/errors.h"
#include "audit/trial/worker_protocol.h"
#include "worker/runtime/cuda_loader.h"
#include "worker/runtime/fingerprint.h"
#include "worker/runtime/library_error.h"
#include "worker/services/service_table.h"

#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  // A command the front forwards (env, lint, diff) starts with stderr on the front's pipe, which held
  // what the dynamic loader printed; the loader is done here, so the user's stderr comes back.
  ra::take_back_forwarded_stderr();
  // Another torch's libraries (LD_LIBRARY_PATH, a replaced environment): one line, exit 3, before
  // anything can fail with a symbol-lookup error (worker/runtime/fingerprint.h).
  if (const std::string mismatch = ra::torch_library_mismatch(); !mismatch.empty()) {
    std::fprintf(stderr, "repro-audit: %s\n", mismatch.c_str());
    return static_cast<int>(ra::ExitCode::Input);
  }
  if (ra::services::needs_cuda(argc, argv)) ra::load_cuda();  // as its row of the command table says
  const int code = ra::cmdline::run(argc, argv, ra::cmdline::Program{ra::services::commands(), ra::library_error_text});
  // Every file the command wrote is closed (they are written and renamed in scope), so what is
  // left is LibTorch's static teardown: deregistering thousands of operators, about a fifth of a
  // trial child's CPU time for a small model. Flush the standard streams and skip it (run() has
  // already flushed stdout and turned a failed write into exit 3 with its line on stderr).
  std::fflush(nullptr);
  std::_Exit(code);
}
