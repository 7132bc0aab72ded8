// SPDX-License-Identifier: Apache-2.0
// build/repro-audit-bench-export MODEL.pt2 SIZES [RUNS [VOCAB]]: the export interpreter's forward
// (worker/targets/export_program.h) on one input of SIZES ("1x3x224x224"): float32 normal values, or
// with VOCAB int64 token ids below it (a language model's input_ids). Prints two medians of RUNS
// calls each, after two warm-up calls, in milliseconds, on the CPU: the forward alone, and the
// forward under `--trace`'s tracer (worker/trace/tracer.h, finish() included), the two interleaved.
// bench/export_interp.sh runs it beside Python's `torch.export.load(p).module()` on the same
// archive, threads and input, and prints the ratios (issue 41's targets: at most 1.10 against
// Python; tracing no dearer than on TorchScript, 1.10-1.26).
#include "worker/targets/export_archive.h"
#include "worker/targets/export_program.h"
#include "worker/trace/tracer.h"

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
    const auto traced = [&] {
      ra::trace::Tracer tracer(c10::Device(c10::kCPU), uint64_t{1} << 21);
      (void)program.run(args);
      (void)tracer.finish();
    };
    for (int i = 0; i < 2; ++i) {
      (void)program.run(args);
      traced();
    }
    const auto ms_of = [](const auto& f) {
      const auto t0 = std::chrono::steady_clock::now();
      f();
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    std::vector<double> plain, with_trace;
    for (int i = 0; i < runs; ++i) {
      plain.push_back(ms_of([&] { (void)program.run(args); }));
      with_trace.push_back(ms_of(traced));
    }
    std::sort(plain.begin(), plain.end());
    std::sort(with_trace.begin(), with_trace.end());
    std::printf("%.3f %.3f\n", plain[plain.size() / 2], with_trace[with_trace.size() / 2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 3;
  }
  return 0;
}
