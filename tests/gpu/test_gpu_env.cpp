// SPDX-License-Identifier: Apache-2.0
// GPU tier: what the CPU cannot show of the CUDA runtime path. The fingerprint lists every device
// with its name, UUID, SM count and compute capability (on CUDA 13 it listed none); and
// `--device cuda:N` makes N the current device, so a model's own `device="cuda"` lands there too;
// `run` on CUDA in infer and train modes, with the restart-replay and with a trace whose backward
// root cause is on the device's autograd thread; and `selftest --device cuda` passes.
// Exits 77 (reported by ctest as skipped) where no CUDA device exists.
#include "tests/gpu/gpu_binary.h"

#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/script.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  std::printf("%-70s %s\n", what.c_str(), ok ? "ok" : "FAILED");
  failures += !ok;
}

std::string output_of(const std::string& cmd, int& status) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (p != nullptr && fgets(buf.data(), buf.size(), p) != nullptr) out += buf.data();
  status = p == nullptr ? -1 : pclose(p);
  return out;
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
  int status = 0;
  const auto env = nlohmann::json::parse(output_of(binary + " env --json", status), nullptr, false);
  expect(!env.is_discarded() && status == 0, "env --json exits 0 with JSON");
  const auto& devices = env.value("cuda", nlohmann::json::object()).value("devices", nlohmann::json::array());
  expect(static_cast<int>(devices.size()) == cuda.deviceCount(), "the fingerprint lists every CUDA device");
  for (const auto& d : devices) {
    expect(d.value("name", "unknown") != "unknown", "device " + d.value("name", std::string("?")) + " has a name");
    expect(d.value("uuid", "unknown").rfind("GPU-", 0) == 0, "it has a UUID");
    expect(d["sm_count"].is_number() && d["sm_count"].get<int>() > 0, "it has an SM count");
    expect(d.value("compute_capability", "unknown") != "unknown", "it has a compute capability");
  }

  // A model that makes a tensor on "cuda" (the current device) and adds it to its input.
  const int last = cuda.deviceCount() - 1;
  const std::string dir = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  const std::string model = dir + "/ra-gpu-current-device.pt";
  torch::jit::Module m("m");
  m.define(R"(
def forward(self, x):
    return x + torch.ones([1], device=torch.device("cuda"))
)");
  m.save(model);
  output_of(binary + " run " + model + " --device cuda:" + std::to_string(last) +
                " --shape 4 --repeats 2 --quiet > /dev/null 2>&1",
            status);
  expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
         "run --device cuda:" + std::to_string(last) + " makes it current for the model's own \"cuda\"");
  std::remove(model.c_str());

  // run on CUDA: infer, train with the restart-replay, and a trace whose backward root cause was
  // found on the device's autograd thread.
  const std::string elementwise = dir + "/ra-gpu-elementwise.pt";
  torch::jit::Module e("e");
  e.register_parameter("w", torch::ones({64}) * 0.5, false);
  e.define(R"(
def forward(self, x):
    return torch.tanh(x * self.w) + 1.0
)");
  e.save(elementwise);
  const std::string report = dir + "/ra-gpu-run.json";
  const auto run_json = [&](const std::string& args, int want, const std::string& what) {
    output_of(binary + " run " + args + " --quiet --report " + report + " > /dev/null 2>&1", status);
    expect(WIFEXITED(status) && WEXITSTATUS(status) == want, what + ": exit " + std::to_string(want));
    std::ifstream in(report);
    return nlohmann::json::parse(in, nullptr, false);
  };
  auto r = run_json(elementwise + " --device cuda --shape 16x64 --repeats 3", 0, "run --device cuda (infer)");
  expect(!r.is_discarded() && r["targets"][0]["device"] == "cuda", "the target ran on cuda");
  r = run_json(elementwise + " --device cuda --shape 16x64 --mode train --steps 2 --replay", 0,
               "run --device cuda --mode train --replay");
  expect(
      !r.is_discarded() && r["targets"][0].contains("replay") && r["targets"][0]["replay"]["verdict"] == "reproducible",
      "the restart-replay on cuda is reproducible");
  const std::string gather = dir + "/ra-gpu-gather.pt";
  torch::jit::Module g("g");
  g.register_parameter("w", torch::ones({64}), false);
  g.define(R"(
def forward(self, x):
    idx = torch.remainder(torch.arange(x.numel(), device=x.device) * 7919, 64)
    return self.w.index_select(0, idx) * x
)");
  g.save(gather);
  r = run_json(
      gather + " --device cuda --shape 1048576 --mode train --trace --no-fix-search --configs default --repeats 4", 1,
      "run --device cuda --trace on a gather whose gradient adds with atomics");
  bool backward_off_thread = false;
  if (!r.is_discarded())
    for (const auto& cause : r["targets"][0]["configs"][0]["trace"]["root_causes"])
      backward_off_thread = backward_off_thread || (cause["direction"] == "backward" && cause["thread"] != 0);
  expect(backward_off_thread, "a backward root cause on the device's autograd thread");
  std::remove(elementwise.c_str());
  std::remove(gather.c_str());
  std::remove(report.c_str());

  // The self-test on the GPU: every check passes (the fused digest, cuBLAS and TF32 switches, the
  // index_add controls, the GPU's fingerprint, a backward root cause on the autograd thread).
  const std::string self = dir + "/ra-gpu-selftest.json";
  const std::string text = output_of(binary + " selftest --device cuda --report " + self, status);
  std::fputs(text.c_str(), stdout);
  expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "selftest --device cuda passes every check");
  std::remove(self.c_str());
  std::printf("%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
