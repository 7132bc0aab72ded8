// SPDX-License-Identifier: Apache-2.0
// `./dev bench` (build/repro-audit-bench): the figures issue #2 asks for, measured side by side in
// one run so that machine noise hits both sides alike.
//   1. Digest throughput against a plain copy of the same bytes, as a ratio, for 1 to 256 MiB:
//      CPU: std::memcpy into a preallocated buffer vs ra::digest (vectorised kernel over all
//      intra-op threads, and with one thread); CUDA (when present): device-to-device copy_ vs
//      ra::digest on the device (the fused kernel), and ATen's arithmetic. Each figure is the
//      median of interleaved repetitions.
//   2. Start-up: the front's `--help` and `report`, against a process that loads LibTorch and its
//      CUDA half as every invocation did before the front/worker split; and a CPU trial's time
//      from spawn to the first model op, with and without the CUDA half, from real audits.
// Like the worker, this binary links LibTorch's CPU half only, so it loads libtorch_cuda.so itself
// (worker/runtime/cuda_loader.h) first thing in main(), before anything asks torch for its CUDA
// hooks; without that, a GPU machine reads as "no CUDA device here". REPRO_AUDIT_LOAD_CUDA=0 skips
// it. `repro-audit-bench --cuda-only` measures the CUDA digest alone.
#include "worker/digest/digest.h"
#include "worker/runtime/cuda_loader.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <nlohmann/json.hpp>

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

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

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
  std::printf("Digest throughput vs device-to-device copy, CUDA (digests by %s; target: ratio >= 0.8 from 64 MiB)\n",
              ra::cuda_digest_implementation().c_str());
  std::printf("  %8s %12s %14s %8s %14s %8s\n", "MiB", "copy GB/s", "digest GB/s", "ratio", "ATen GB/s", "ratio");
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
    const auto [copy2_s, generic_s] = side_by_side(
        [&] {
          dst.copy_(src);
          torch::cuda::synchronize();
        },
        [&] { sink = ra::digest_generic(src); }, 5);
    const double gb = static_cast<double>(bytes) / 1e9;
    // A copy reads and writes every byte; the figure is the tensor's size over time, for both.
    std::printf("  %8lld %12.2f %14.2f %8.2f %14.2f %8.2f\n", static_cast<long long>(mib), gb / copy_s, gb / digest_s,
                copy_s / digest_s, gb / generic_s, copy2_s / generic_s);
  }
}

// Runs argv (no shell) with stdout and stderr to /dev/null, extra environment entries added, and
// returns its wall time in seconds.
double run_quiet(const std::vector<std::string>& argv, const std::vector<std::string>& env_extra = {}) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  env_strings.insert(env_strings.end(), env_extra.begin(), env_extra.end());
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  const auto t0 = Clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data()) != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  posix_spawn_file_actions_destroy(&actions);
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Start-up of the front against a process that loads LibTorch with its CUDA half, as every
// invocation did before the front/worker split (the worker with REPRO_AUDIT_LOAD_CUDA=1 loads
// exactly those libraries). Then the CPU trial's spawn-to-first-op time, from real audits of a
// tiny model whose children load the CUDA half (as before) or not (now), interleaved.
void startup_and_trial_cost(const std::string& front, const std::string& worker) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("repro-audit-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  torch::jit::Module m("Tiny");
  m.register_parameter("w", at::ones({8, 8}), false);
  m.define("def forward(self, x):\n    return torch.matmul(x, self.w)\n");
  m.save((dir / "tiny.pt").string());
  const std::string report = (dir / "r.json").string();
  const std::vector<std::string> audit = {front,     "run",       (dir / "tiny.pt").string(),
                                          "--shape", "2x8",       "--configs",
                                          "default", "--repeats", "5",
                                          "--quiet", "--report",  report};
  const std::vector<std::string> with_cuda = {"REPRO_AUDIT_LOAD_CUDA=1"};
  run_quiet(audit);  // the report that `report` re-renders below

  constexpr int kReps = 15;
  std::vector<double> help, report_s, torch_help;
  for (int i = 0; i < kReps; ++i) {
    help.push_back(run_quiet({front, "--help"}));
    report_s.push_back(run_quiet({front, "report", report}));
    torch_help.push_back(run_quiet({worker, "--help"}, with_cuda));
  }
  std::printf("Start-up (median of %d, interleaved)\n", kReps);
  std::printf("  repro-audit --help (front, no LibTorch):                 %7.1f ms\n", median(help) * 1e3);
  std::printf("  repro-audit report r.json (front):                       %7.1f ms\n", median(report_s) * 1e3);
  std::printf("  LibTorch + CUDA half loaded (the old start of any command): %7.1f ms\n", median(torch_help) * 1e3);

  // Spawn to first model op of CPU trials: children without the CUDA half (now) and with it (before).
  const auto startups = [&](const std::vector<std::string>& env) {
    run_quiet(audit, env);
    std::ifstream in(report);
    const auto r = nlohmann::json::parse(in);
    std::vector<double> out;
    for (const auto& t : r["timing"]["trials"]) out.push_back(t["startup_ms"].get<double>());
    return out;
  };
  std::vector<double> now, before;
  for (int i = 0; i < 3; ++i) {
    const auto a = startups({});
    const auto b = startups(with_cuda);
    now.insert(now.end(), a.begin(), a.end());
    before.insert(before.end(), b.begin(), b.end());
  }
  std::printf("Spawn to first model op, CPU trial (tiny 8x8 model; median of %zu trials each, interleaved audits)\n",
              now.size());
  std::printf("  now (worker without the CUDA half):     %7.1f ms\n", median(now));
  std::printf("  before (LibTorch's CUDA half loaded):   %7.1f ms\n", median(before));
  std::printf("  ratio now/before:                       %7.2f\n", median(now) / median(before));
  fs::remove(dir / "tiny.pt");
  fs::remove(report);
  fs::remove(dir);
}

}  // namespace

int main(int argc, char** argv) {
  if (!ra::cuda_refused_by_environment()) ra::load_cuda();
  std::printf("%s\n", ra::cuda_loader_line().c_str());
  std::fflush(stdout);
  if (argc > 1 && std::string(argv[1]) == "--cuda-only") {
    digest_cuda();
    return 0;
  }
  const std::string front = argc > 1 ? argv[1] : RA_FRONT;
  const std::string worker = argc > 2 ? argv[2] : RA_WORKER;
  startup_and_trial_cost(front, worker);
  digest_cpu();
  digest_cuda();
  return 0;
}
