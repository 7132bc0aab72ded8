// SPDX-License-Identifier: Apache-2.0
// GPU tier: what the CPU cannot show of the CUDA runtime path. The fingerprint lists every device
// with its name, UUID, SM count and compute capability (on CUDA 13 it listed none); and
// `--device cuda:N` makes N the current device, so a model's own `device="cuda"` lands there too;
// and `selftest --device cuda` passes.
// Exits 77 (reported by ctest as skipped) where no CUDA device exists.
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/script.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
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
  const auto& cuda = at::detail::getCUDAHooks();
  if (!cuda.hasCUDA() || cuda.deviceCount() == 0) {
    std::puts("no CUDA device: skipped");
    return 77;
  }
  int status = 0;
  const auto env = nlohmann::json::parse(output_of(std::string(RA_BINARY) + " env --json", status), nullptr, false);
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
  output_of(std::string(RA_BINARY) + " run " + model + " --device cuda:" + std::to_string(last) +
                " --shape 4 --repeats 2 --quiet > /dev/null 2>&1",
            status);
  expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
         "run --device cuda:" + std::to_string(last) + " makes it current for the model's own \"cuda\"");
  std::remove(model.c_str());

  // The self-test on the GPU: every check passes (the fused digest, cuBLAS and TF32 switches, the
  // index_add controls, the GPU's fingerprint, a backward root cause on the autograd thread).
  const std::string self = dir + "/ra-gpu-selftest.json";
  const std::string text = output_of(std::string(RA_BINARY) + " selftest --device cuda --report " + self, status);
  std::fputs(text.c_str(), stdout);
  expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "selftest --device cuda passes every check");
  std::remove(self.c_str());
  std::printf("%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
