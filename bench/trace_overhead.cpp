// SPDX-License-Identifier: Apache-2.0
// `./dev bench` (build/repro-audit-bench-trace [cpu|cuda] [repetitions] [width]): what `run --trace` costs, measured side by
// side in one process. A ResNet-like convolutional training step (stem convolution, four residual
// blocks with batch norm at two widths, by default ResNet-18's first two, 64 and 128 channels, a strided downsampling convolution, pooling, a linear head,
// log-softmax loss, backward, an SGD update) is timed untraced and traced, interleaved, as the
// median of the repetitions after warm-up; the traced time includes collecting the trace (finish()).
// On a GPU the traced step is timed twice, interleaved: with the batched digest (one launch per op's
// inputs or outputs, the default) and with one launch per tensor (REPRO_AUDIT_TRACE_BATCH=0, the
// path before issue 31), so one run gives the before and after figures on the same card.
// Targets: traced/untraced at most 1.2 on CPU (issue 12; 1.5 before) and 1.25 on GPU. Also prints what the trace
// held: records, tensor digests and memory.
// On cuda it loads libtorch_cuda.so first, as the worker does (worker/runtime/cuda_loader.h): this
// binary links LibTorch's CPU half only, and torch keeps the first answer to "is there CUDA?".
#include "reports/core_model.h"
#include "worker/digest/digest.h"
#include "worker/runtime/child_support.h"
#include "worker/runtime/cuda_loader.h"
#include "worker/trace/tracer.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

const char* kResNetLike = R"JIT(
def block(self, x, w1, g1, b1, m1, v1, w2, g2, b2, m2, v2):
    h = torch.conv2d(x, w1, None, [1, 1], [1, 1])
    h = torch.relu(torch.batch_norm(h, g1, b1, m1, v1, self.training, 0.1, 1e-5, True))
    h = torch.conv2d(h, w2, None, [1, 1], [1, 1])
    h = torch.batch_norm(h, g2, b2, m2, v2, self.training, 0.1, 1e-5, True)
    return torch.relu(h + x)

def forward(self, x):
    h = torch.conv2d(x, self.stem, None, [1, 1], [1, 1])
    h = torch.relu(torch.batch_norm(h, self.stemg, self.stemb, self.stemm, self.stemv, self.training, 0.1, 1e-5, True))
    h = self.block(h, self.a1, self.a1g, self.a1b, self.a1m, self.a1v, self.a2, self.a2g, self.a2b, self.a2m, self.a2v)
    h = self.block(h, self.c1, self.c1g, self.c1b, self.c1m, self.c1v, self.c2, self.c2g, self.c2b, self.c2m, self.c2v)
    h = torch.relu(torch.conv2d(h, self.down, None, [2, 2], [1, 1]))
    h = self.block(h, self.d1, self.d1g, self.d1b, self.d1m, self.d1v, self.d2, self.d2g, self.d2b, self.d2m, self.d2v)
    h = self.block(h, self.e1, self.e1g, self.e1b, self.e1m, self.e1v, self.e2, self.e2g, self.e2b, self.e2m, self.e2v)
    z = torch.matmul(torch.mean(h, [2, 3]), self.fc) + self.fcb
    return -torch.log_softmax(z, 1).mean()
)JIT";

torch::jit::Module resnet_like(const c10::Device& device, int64_t width) {
  torch::jit::Module m("ResNetLike");
  m.register_attribute("training", c10::BoolType::get(), true);
  const auto conv = [&](const std::string& name, int64_t out, int64_t in) {
    m.register_parameter(name, (at::randn({out, in, 3, 3}) / std::sqrt(9.0 * static_cast<double>(in))).to(device),
                         false);
    m.register_parameter(name + "g", at::ones({out}).to(device), false);
    m.register_parameter(name + "b", at::zeros({out}).to(device), false);
    m.register_buffer(name + "m", at::zeros({out}).to(device));
    m.register_buffer(name + "v", at::ones({out}).to(device));
  };
  const int64_t w = width, w2 = 2 * width;
  conv("stem", w, 3);
  for (const char* b : {"a", "c"}) conv(std::string(b) + "1", w, w), conv(std::string(b) + "2", w, w);
  m.register_parameter("down", (at::randn({w2, w, 3, 3}) / std::sqrt(9.0 * static_cast<double>(w))).to(device), false);
  for (const char* b : {"d", "e"}) conv(std::string(b) + "1", w2, w2), conv(std::string(b) + "2", w2, w2);
  m.register_parameter("fc", (at::randn({w2, 10}) / std::sqrt(static_cast<double>(w2))).to(device), false);
  m.register_parameter("fcb", at::zeros({10}).to(device), false);
  m.define(kResNetLike);
  for (const auto& p : m.parameters()) p.requires_grad_(true);
  m.train();
  return m;
}

}  // namespace

int run(const std::string& device_name, int argc, char** argv);

int main(int argc, char** argv) {
  const std::string device_name = argc > 1 ? argv[1] : "cpu";
  if ((device_name.rfind("cuda", 0) == 0 || ra::cuda_forced_by_environment()) && !ra::cuda_refused_by_environment())
    ra::load_cuda();
  std::printf("%s\n", ra::cuda_loader_line().c_str());
  std::fflush(stdout);
  try {
    return run(device_name, argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "repro-audit-bench-trace: %s\n", e.what());
    return 3;
  }
}

int run(const std::string& device_name, int argc, char** argv) {
  const int reps = argc > 2 ? std::max(3, std::atoi(argv[2])) : 7;
  // ResNet-18's first two stages are 64 and 128 channels wide; a narrower net is more memory-bound.
  const int64_t width = argc > 3 ? std::max(8, std::atoi(argv[3])) : 64;
  ra::disable_jit_optimisations();  // as in a trial child
  const c10::Device device = ra::checked_device(ra::Device::parse(device_name));
  ra::seed_generators(0);
  torch::jit::Module model = resnet_like(device, width);
  const int64_t batch = device.is_cpu() ? 16 : 128;
  const at::Tensor x = at::randn({batch, 3, 32, 32}).to(device);
  std::vector<at::Tensor> params;
  for (const auto& p : model.parameters()) params.push_back(p);

  const auto step = [&] {
    for (auto& p : params) p.mutable_grad() = at::Tensor();
    const at::Tensor loss = model.forward({x}).toTensor();
    loss.backward();
    at::NoGradGuard no_grad;
    for (auto& p : params) p.sub_(p.grad(), 0.01);
    ra::synchronize(device);
  };
  const auto seconds = [](const std::function<void()>& f) {
    const auto t0 = Clock::now();
    f();
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  ra::trace::Trace last;
  // The tracer reads REPRO_AUDIT_TRACE_BATCH when it is made: "0" digests one tensor per launch.
  const auto traced_with = [&](bool batched) {
    setenv("REPRO_AUDIT_TRACE_BATCH", batched ? "1" : "0", 1);
    ra::trace::Tracer tracer(device, uint64_t{1} << 21);
    step();
    last = tracer.finish();
  };
  const auto traced = [&] { traced_with(true); };
  const auto traced_per_tensor = [&] { traced_with(false); };
  const bool both = device.is_cuda();  // the CPU digests at once: no launches to batch
  step();
  traced();  // warm-up: allocator, lazy initialisation, cuDNN handles
  if (both) traced_per_tensor();
  std::vector<double> plain, with_trace, per_tensor;
  for (int i = 0; i < reps; ++i) {
    plain.push_back(seconds(step));
    if (both) per_tensor.push_back(seconds(traced_per_tensor));
    with_trace.push_back(seconds(traced));
  }
  size_t digests = 0;
  for (const auto& r : last.records) digests += r.inputs.size() + r.outputs.size();
  const double a = *ra::report::median(plain), b = *ra::report::median(with_trace);
  std::printf(
      "Trace overhead, ResNet-like training step on %s (batch %lld, 3x32x32, %lld/%lld channels; %d intra-op "
      "threads)\n",
      device.str().c_str(), static_cast<long long>(batch), static_cast<long long>(width),
      static_cast<long long>(2 * width), at::get_num_threads());
  std::printf("  untraced step: %8.1f ms (median of %d)\n", a * 1e3, reps);
  if (both) {
    const double c = *ra::report::median(per_tensor);
    std::printf("  CUDA digests:  %s\n", ra::cuda_digest_implementation().c_str());
    std::printf("  traced step, one launch per tensor (REPRO_AUDIT_TRACE_BATCH=0): %8.1f ms, ratio %.2f\n", c * 1e3,
                c / a);
    std::printf("  traced step, batched per op (default):                          %8.1f ms, ratio %.2f\n", b * 1e3,
                b / a);
  }
  std::printf("  traced step:   %8.1f ms (median of %d, interleaved)\n", b * 1e3, reps);
  std::printf("  ratio:         %8.2f   (target: at most %.2f)\n", b / a, device.is_cpu() ? 1.2 : 1.25);
  std::printf("  trace: %zu records, %zu tensor digests, %.1f MiB in memory (slots for %llu digests)\n",
              last.records.size(), digests, static_cast<double>(last.memory_bytes) / (1024.0 * 1024.0),
              static_cast<unsigned long long>(last.capacity));
  return 0;
}
