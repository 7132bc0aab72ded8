// SPDX-License-Identifier: Apache-2.0
// The worker's command table (worker/services/service_table.h): which commands load LibTorch's CUDA
// half, by its CUDA column.
#include "tests/unit/temp_folder.h"
#include "worker/services/service_table.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace {

bool needs_cuda(std::vector<std::string> args) {
  std::string program = "repro-audit-worker";
  std::vector<char*> argv = {program.data()};
  for (auto& a : args) argv.push_back(a.data());
  return ra::services::needs_cuda(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("needs_cuda: env, and work on a CUDA device or recording the fingerprint, as each command's row says") {
  const char* forced = std::getenv("REPRO_AUDIT_LOAD_CUDA");
  const std::string saved = forced != nullptr ? forced : "";
  ::unsetenv("REPRO_AUDIT_LOAD_CUDA");
  const ra::test::TempFolder dir("ra-needs-cuda");
  CHECK(needs_cuda({"env"}));
  CHECK(needs_cuda({"-v", "env", "--json"}));
  CHECK_FALSE(needs_cuda({"lint", "model.pt"}));
  CHECK_FALSE(needs_cuda({"diff", "a.pt", "b.pt"}));
  CHECK_FALSE(needs_cuda({}));
  CHECK_FALSE(needs_cuda({"nosuch"}));
  // __child: its spec's device, or a preflight (which records the fingerprint).
  CHECK(needs_cuda({"__child", dir.write("cuda.json", R"({"device": "cuda:1", "task": "trial"})"), "r.json"}));
  CHECK(needs_cuda({"__child", dir.write("preflight.json", R"({"device": "cpu", "task": "preflight"})"), "r.json"}));
  CHECK_FALSE(needs_cuda({"__child", dir.write("cpu.json", R"({"device": "cpu", "task": "trial"})"), "r.json"}));
  CHECK_FALSE(needs_cuda({"__child", dir.write("bad.json", R"({"device": 7})"), "r.json"}));  // the child says why
  CHECK_FALSE(needs_cuda({"__child", dir.file("missing.json")}));
  CHECK_FALSE(needs_cuda({"__child"}));
  // __selftest: its device argument.
  CHECK(needs_cuda({"__selftest", "cuda"}));
  CHECK_FALSE(needs_cuda({"__selftest", "cpu"}));
  // __invariance: its request's spec, or a request for the fingerprint.
  CHECK(needs_cuda({"__invariance", dir.write("i-cuda.json", R"({"spec": {"device": "cuda"}})")}));
  CHECK(needs_cuda({"__invariance", dir.write("i-fp.json", R"({"spec": {"device": "cpu"}, "fingerprint": true})")}));
  CHECK_FALSE(needs_cuda({"__invariance", dir.write("i-cpu.json", R"({"spec": {"device": "cpu"}})")}));
  CHECK_FALSE(needs_cuda({"__invariance", dir.write("i-none.json", R"({"device": "cuda"})")}));
  // The services that never touch a device.
  for (const char* command : {"__stats", "__catalogue", "__artifacts", "__op_class"})
    CHECK_FALSE(needs_cuda({command, "x"}));
  // REPRO_AUDIT_LOAD_CUDA=1 loads it for any command.
  ::setenv("REPRO_AUDIT_LOAD_CUDA", "1", 1);
  CHECK(needs_cuda({"lint", "model.pt"}));
  if (forced != nullptr)
    ::setenv("REPRO_AUDIT_LOAD_CUDA", saved.c_str(), 1);
  else
    ::unsetenv("REPRO_AUDIT_LOAD_CUDA");
}
