// SPDX-License-Identifier: Apache-2.0
// The front and its worker (docs/ARCHITECTURE.md, "Two executables"): the front finds the worker,
// says so in one line when it cannot, hands env/lint/diff over with their exit codes, and the
// worker loads LibTorch's CUDA half when the fingerprint needs it.
#include "tests/cli/harness.h"

// torch before doctest: c10 defines a CHECK macro that doctest must override.
#include <torch/script.h>

#include <doctest/doctest.h>

#include <cstdlib>

using ra::test::run_cli;

namespace {

// Sets an environment variable for the lifetime of the guard (the binary under test inherits it).
class EnvGuard {
 public:
  EnvGuard(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~EnvGuard() { unsetenv(name_); }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;

 private:
  const char* name_;
};

}  // namespace

TEST_CASE("worker_executable: a missing worker is one line and exit 3, before any work") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), ra::test::kLinearReluModel, {{"w", {4, 2}}});
  EnvGuard guard("REPRO_AUDIT_WORKER", "/nonexistent/repro-audit-worker");
  const auto r = run_cli({"run", dir.file("m.pt"), "--shape", "2x4", "--report", dir.file("r.json")});
  CHECK(r.code == 3);
  CHECK(ra::test::count_lines(r.err) == 1);
  CHECK(r.out.empty());
  CHECK(r.err.find("REPRO_AUDIT_WORKER='/nonexistent/repro-audit-worker' is not an executable file") !=
        std::string::npos);
  CHECK_FALSE(ra::test::file_exists(dir.file("r.json")));
  // The front's own commands need no worker.
  CHECK(run_cli({"--help"}).code == 0);
  CHECK(run_cli({"report", dir.file("missing.json")}).code == 3);
  const auto env = run_cli({"env"});
  CHECK(env.code == 3);
  CHECK(env.err.find("REPRO_AUDIT_WORKER") != std::string::npos);
}

TEST_CASE("forward_to_worker: env, lint and diff keep their output and exit codes") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), ra::test::kLinearReluModel, {{"w", {4, 2}}});
  const auto env = run_cli({"env", "--json"});
  REQUIRE(env.code == 0);
  const auto j = nlohmann::json::parse(env.out);
  // The worker links only LibTorch's CPU half; `env` loads the CUDA half, whose hooks then know the
  // CUDA build (on a CUDA wheel), exactly as when the whole of LibTorch was linked.
  if (j["torch"]["cuda_compiled"].get<bool>()) {
    CHECK(j["cuda"]["compiled_cuda"].is_string());
    CHECK(j["cuda"]["compiled_cudnn"].is_string());
  }
  // The worker's own errors keep their exit codes: usage 2, input 3, one line.
  const auto usage = run_cli({"lint", dir.file("m.pt"), "--device", "tpu"});
  CHECK(usage.code == 2);
  const auto diff = run_cli({"diff", dir.file("m.pt"), dir.file("missing.pt")});
  CHECK(diff.code == 3);
  CHECK(ra::test::count_lines(diff.err) == 1);
}
