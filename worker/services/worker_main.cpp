// SPDX-License-Identifier: Apache-2.0
// repro-audit-worker: the half of the tool that links LibTorch (see CMakeLists.txt). It loads
// LibTorch's CUDA half only for work that asks for a CUDA device, before anything could ask torch
// whether CUDA exists (worker/runtime/cuda_loader.h).
#include "audit/cmdline/command_line.h"
#include "audit/common/device.h"
#include "audit/common/errors.h"
#include "audit/trial/worker.h"
#include "worker/runtime/cuda_loader.h"
#include "worker/runtime/fingerprint.h"
#include "worker/runtime/library_error.h"
#include "worker/services/service_table.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

// Whether this command needs LibTorch's CUDA half: `env` (it lists the GPUs), a `__selftest` on a
// CUDA device, an `__invariance` whose request names a CUDA device or asks for the fingerprint, and
// a `__child` whose spec names a CUDA device or is a preflight (the preflight
// records the fingerprint).
// REPRO_AUDIT_LOAD_CUDA=1 loads it for any command (repro-audit-bench compares both).
bool needs_cuda(int argc, char** argv) {
  if (ra::cuda_forced_by_environment()) return true;
  int i = 1;
  while (i < argc && argv[i][0] == '-') ++i;  // global flags: -v, -q
  if (i >= argc) return false;
  const std::string command = argv[i];
  if (command == "env") return true;
  if (command == "__selftest") return i + 1 < argc && ra::Device::of(argv[i + 1]).is_cuda();
  if (command == "__invariance" && i + 1 < argc) {  // its request holds a trial spec
    std::ifstream in(argv[i + 1]);
    const auto request = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!request.is_object() || !request.contains("spec") || !request["spec"].is_object()) return false;
    return request.value("fingerprint", false) ||
           ra::Device::of(request["spec"].value("device", std::string())).is_cuda();
  }
  if (command != "__child" || i + 1 >= argc) return false;
  std::ifstream in(argv[i + 1]);
  const auto spec = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!spec.is_object()) return false;  // the command itself reports the malformed spec
  return ra::Device::of(spec.value("device", std::string())).is_cuda() ||
         spec.value("task", std::string()) == "preflight";
}

}  // namespace

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
  if (needs_cuda(argc, argv)) ra::load_cuda();
  const int code = ra::cmdline::run(argc, argv, ra::cmdline::Program{ra::services::commands(), ra::library_error_text});
  // Every file the command wrote is closed (they are written and renamed in scope), so what is
  // left is LibTorch's static teardown: deregistering thousands of operators, about a fifth of a
  // trial child's CPU time for a small model. Flush the standard streams and skip it (run() has
  // already flushed stdout and turned a failed write into exit 3 with its line on stderr).
  std::fflush(nullptr);
  std::_Exit(code);
}
