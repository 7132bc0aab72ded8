// SPDX-License-Identifier: Apache-2.0
// `./dev bench` (build/repro-audit-bench): the figures issue #2 asks for, measured side by side in
// one run so that machine noise hits both sides alike.
//   1. Digest throughput against a plain copy of the same bytes, as a ratio, for 1 to 256 MiB:
//      CPU: std::memcpy into a preallocated buffer vs ra::digest (vectorised kernel over all
//      intra-op threads, and with one thread); CUDA (when present): device-to-device copy_ vs
//      ra::digest on the device. Each figure is the median of interleaved repetitions.
//   2. The fixed cost of one trial on CPU: `repro-audit --version` (process start + library load),
//      and, from a real audit of a tiny model, the time from spawn to the first model op and the
//      whole trial's wall time (medians over the repeats).
#include "audit/digest.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds(const std::function<void()>& f) {
  const auto t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Interleaves the two measurements `reps` times and returns their median times.
std::pair<double, double> side_by_side(const std::function<void()>& a, const std::function<void()>& b, int reps) {
  a();
  b();  // warm-up: page faults, lazy initialisation
  std::vector<double> ta, tb;
  for (int i = 0; i < reps; ++i) {
    ta.push_back(seconds(a));
    tb.push_back(seconds(b));
  }
  return {median(ta), median(tb)};
}

void digest_cpu() {
  std::printf("Digest throughput vs memcpy, CPU (%d intra-op threads)\n", at::get_num_threads());
  std::printf("  %8s %12s %14s %8s %16s %8s\n", "MiB", "memcpy GB/s", "digest GB/s", "ratio", "1-thread GB/s", "ratio");
  for (int64_t mib : {1, 16, 64, 256}) {
    const int64_t bytes = mib << 20;
    auto gen = at::make_generator<at::CPUGeneratorImpl>(1);
    const at::Tensor src = at::randn({bytes / 4}, gen);
    std::vector<char> dst(static_cast<size_t>(bytes));
    const int reps = mib >= 64 ? 5 : 21;
    const int threads = at::get_num_threads();
    std::string sink;
    const auto [copy_s, digest_s] = side_by_side([&] { std::memcpy(dst.data(), src.const_data_ptr(), bytes); },
                                                 [&] { sink = ra::digest(src); }, reps);
    at::set_num_threads(1);
    const auto [copy1_s, digest1_s] = side_by_side([&] { std::memcpy(dst.data(), src.const_data_ptr(), bytes); },
                                                   [&] { sink = ra::digest(src); }, reps);
    at::set_num_threads(threads);
    const double gb = static_cast<double>(bytes) / 1e9;
    std::printf("  %8lld %12.2f %14.2f %8.2f %16.2f %8.2f\n", static_cast<long long>(mib), gb / copy_s, gb / digest_s,
                copy_s / digest_s, gb / digest1_s, copy1_s / digest1_s);
  }
}

void digest_cuda() {
  const auto& cuda = at::detail::getCUDAHooks();
  if (!cuda.hasCUDA() || cuda.deviceCount() == 0) {
    std::printf("Digest throughput vs copy, CUDA: no CUDA device here, not measured\n");
    return;
  }
  std::printf("Digest throughput vs device-to-device copy, CUDA\n");
  std::printf("  %8s %12s %14s %8s\n", "MiB", "copy GB/s", "digest GB/s", "ratio");
  for (int64_t mib : {1, 16, 64, 256, 1024}) {
    const int64_t bytes = mib << 20;
    const at::Tensor src = at::randn({bytes / 4}, at::TensorOptions().device(at::kCUDA));
    at::Tensor dst = at::empty_like(src);
    std::string sink;
    const auto [copy_s, digest_s] = side_by_side(
        [&] {
          dst.copy_(src);
          torch::cuda::synchronize();
        },
        [&] { sink = ra::digest(src); }, 11);
    const double gb = static_cast<double>(bytes) / 1e9;
    // A copy reads and writes every byte; the figure is the tensor's size over time, for both.
    std::printf("  %8lld %12.2f %14.2f %8.2f\n", static_cast<long long>(mib), gb / copy_s, gb / digest_s, copy_s / digest_s);
  }
}

void trial_cost(const std::string& binary) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("repro-audit-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  torch::jit::Module m("Tiny");
  m.register_parameter("w", at::ones({8, 8}), false);
  m.define("def forward(self, x):\n    return torch.matmul(x, self.w)\n");
  m.save((dir / "tiny.pt").string());
  std::vector<double> start;
  for (int i = 0; i < 11; ++i)
    start.push_back(seconds([&] { (void)std::system((binary + " --version >/dev/null").c_str()); }));
  const std::string cmd = binary + " run " + (dir / "tiny.pt").string() + " --shape 2x8 --configs default --repeats 9 " +
                          "--quiet --report " + (dir / "r.json").string() + " >/dev/null";
  const double audit_s = seconds([&] { (void)std::system(cmd.c_str()); });
  std::ifstream in(dir / "r.json");
  const auto report = nlohmann::json::parse(in);
  std::vector<double> startup, wall;
  for (const auto& t : report["timing"]["trials"]) {
    startup.push_back(t["startup_ms"].get<double>());
    wall.push_back(t["wall_ms"].get<double>());
  }
  std::printf("Fixed cost of one trial, CPU (tiny 8x8 model)\n");
  std::printf("  process start + library load (repro-audit --version): %7.1f ms (median of 11)\n", median(start) * 1e3);
  std::printf("  spawn to first model op:                              %7.1f ms (median of %zu trials)\n", median(startup),
              startup.size());
  std::printf("  whole trial (spawn to exit):                          %7.1f ms (median of %zu trials)\n", median(wall),
              wall.size());
  std::printf("  whole audit, preflight + 9 trials:                    %7.1f ms\n", audit_s * 1e3);
  fs::remove(dir / "tiny.pt");
  fs::remove(dir / "r.json");
  fs::remove(dir);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string binary = argc > 1 ? argv[1] : (std::filesystem::path(argv[0]).parent_path() / "repro-audit").string();
  digest_cpu();
  digest_cuda();
  trial_cost(binary);
  return 0;
}
