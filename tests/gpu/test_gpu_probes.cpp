// SPDX-License-Identifier: Apache-2.0
// GPU tier: the probe suite on CUDA. index_add with float32 and many duplicate indices is the
// classic atomics case: it must diverge under `default` and be reproducible under `det`; its
// control without duplicates, and an integer scatter_add, must be reproducible under both; put_
// must raise under `det`. The same suite with --jobs 4 (children sharing the GPU, issue 31) must
// give the same verdicts for every probe and configuration, and its report must say that children
// shared the GPU. Exits 77 (reported by ctest as skipped) where no CUDA device exists.
#include "tests/gpu/gpu_binary.h"

#include <ATen/detail/CUDAHooksInterface.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  std::printf("%-70s %s\n", what.c_str(), ok ? "ok" : "FAILED");
  failures += !ok;
}

std::string verdict(const nlohmann::json& report, const std::string& probe, size_t config) {
  for (const auto& t : report["targets"])
    if (t["name"] == probe) return t["configs"][config]["verdict"].get<std::string>();
  return "missing";
}

}  // namespace

int main() {
  const std::string binary = ra::gpu_test::repro_audit_binary();
  std::printf("repro-audit under test: %s\n", binary.c_str());
  const auto& cuda = at::detail::getCUDAHooks();
  if (!cuda.hasCUDA() || cuda.deviceCount() == 0) {
    std::puts("no CUDA device: skipped");
    return 77;
  }
  const std::string report =
      std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/ra-gpu-probes.json";
  // The controls under default and det with `jobs` children at once: the exit status and the report
  // (discarded when it is not valid JSON).
  const auto run_controls = [&binary](int jobs, const std::string& path) {
    const std::string cmd =
        binary +
        " probes --device cuda --only index_add,index_add.unique-control,scatter_add.int-control,put"
        " --configs default,det --repeats 3 --jobs " +
        std::to_string(jobs) + " --quiet --report " + path + " > /dev/null";
    const int status = std::system(cmd.c_str());
    std::ifstream in(path);
    return std::make_pair(status, nlohmann::json::parse(in, nullptr, false));
  };
  const auto [status, j] = run_controls(1, report);
  expect(WIFEXITED(status) && WEXITSTATUS(status) == 1, "probes exits 1 (nondeterminism found)");
  if (j.is_discarded()) {
    expect(false, "the report is valid JSON");
    return 1;
  }
  expect(verdict(j, "index_add", 0) == "diverged", "index_add diverges under default");
  expect(verdict(j, "index_add", 1) == "reproducible", "index_add is reproducible under det");
  expect(verdict(j, "index_add.unique-control", 0) == "reproducible", "index_add without duplicates is reproducible");
  expect(verdict(j, "scatter_add.int-control", 0) == "reproducible", "integer scatter_add is reproducible");
  expect(verdict(j, "put", 1) == "raised", "put_ raises under det");

  // --jobs 4: the controls keep their verdicts when children share the GPU.
  const std::string shared = report + ".jobs4";
  const auto [status4, j4] = run_controls(4, shared);
  expect(WIFEXITED(status4) && WEXITSTATUS(status4) == 1, "probes --jobs 4 exits 1 too");
  if (j4.is_discarded()) {
    expect(false, "the --jobs 4 report is valid JSON");
  } else {
    for (const char* probe : {"index_add", "index_add.unique-control", "scatter_add.int-control", "put"})
      for (size_t c = 0; c < 2; ++c)
        expect(verdict(j4, probe, c) == verdict(j, probe, c),
               std::string(probe) + (c == 0 ? " under default" : " under det") + ": same verdict with --jobs 4 (" +
                   verdict(j4, probe, c) + ")");
    const auto& timing = j4["timing"];
    const std::string note = timing.contains("contention") ? timing["contention"].get<std::string>() : "";
    if (cuda.deviceCount() < 4)  // fewer GPUs than children: some share one
      expect(note.find("children at once shared") != std::string::npos, "the report says the GPU was shared: " + note);
    else
      expect(note.empty(), "one child per GPU: no contention to report");
    expect(!j["timing"].contains("contention"), "with --jobs 1 it says nothing of the kind");
  }
  std::remove(shared.c_str());
  std::remove(report.c_str());
  std::printf("%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
