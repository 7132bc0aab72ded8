// SPDX-License-Identifier: Apache-2.0
// build/repro-audit-bench-export MODEL.pt2 SIZES [RUNS [VOCAB]]: the export interpreter's forward
// (worker/targets/export_program.h) on one input of SIZES ("1x3x224x224"): float32 normal values, or
// with VOCAB int64 token ids below it (a language model's input_ids). Timed as the median of RUNS
// calls after two warm-up calls, in milliseconds, on the CPU. bench/export_interp.sh runs it beside
// Python's `torch.export.load(p).module()` on the same archive, threads and input, and prints the
// ratio (issue 41's target: at most 1.10).
#include "worker/targets/export_archive.h"
#include "worker/targets/export_program.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL.pt2 SIZES [RUNS [VOCAB]]\n", argv[0]);
    return 2;
  }
  std::vector<int64_t> sizes;
  std::stringstream in(argv[2]);
  for (std::string part; std::getline(in, part, 'x');) sizes.push_back(std::stoll(part));
  const int runs = argc > 3 ? std::atoi(argv[3]) : 20;
  const int64_t vocab = argc > 4 ? std::atoll(argv[4]) : 0;
  try {
    const auto archive = ra::targets::read_export_archive(argv[1]);
    ra::targets::ExportProgram program(archive.model, archive.weights, argv[1], c10::Device(c10::kCPU));
    at::manual_seed(0);
    const std::vector<c10::IValue> args{vocab > 0 ? at::randint(vocab, sizes, at::kLong) : at::randn(sizes)};
    for (int i = 0; i < 2; ++i) (void)program.run(args);
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      (void)program.run(args);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%.3f\n", ms[ms.size() / 2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 3;
  }
  return 0;
}
