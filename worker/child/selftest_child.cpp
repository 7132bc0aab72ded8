// SPDX-License-Identifier: Apache-2.0
#include "worker/child/selftest_child.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "probes/batch_invariance.h"
#include "worker/digest/digest.h"
#include "worker/runtime/child_support.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/nn/modules/linear.h>
#include <torch/script.h>
#include <nlohmann/json.hpp>

namespace ra {
namespace {

// The same bits must give the same digest however it is computed (the vectorised CPU kernel over
// any thread count, ATen's arithmetic, the device's kernel), a view must digest as its contiguous
// copy, and a swap of two elements or -0.0 for +0.0 must change it. Returns the first failure.
std::string digest_failure(const c10::Device& device, std::string& implementation) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(20261124);
  const at::Tensor base = at::randn({1 << 20}, gen);
  const std::vector<at::Tensor> samples = {
      base,       base.to(at::kBFloat16),    base.to(at::kDouble), (base * 1000).to(at::kLong),
      base.gt(0), (base * 100).to(at::kChar)};
  const int threads = at::get_num_threads();
  for (const at::Tensor& cpu : samples) {
    const std::string name = fmt::format("{}[{}]", dtype_name(cpu.scalar_type()), cpu.numel());
    const std::string want = digest(cpu);
    if (digest_generic(cpu) != want) return name + ": the CPU kernel and ATen's arithmetic disagree";
    at::set_num_threads(1);
    const std::string one_thread = digest(cpu);
    at::set_num_threads(threads);
    if (one_thread != want) return fmt::format("{}: 1 thread and {} threads give different digests", name, threads);
    const at::Tensor grid = cpu.reshape({1024, 1024});
    if (digest(grid.t()) != digest(grid.t().contiguous())) return name + ": a transposed view and its copy differ";
    if (device.is_cuda()) {
      const at::Tensor on_device = cpu.to(device);
      if (digest(on_device) != want) return fmt::format("{}: {} and cpu give different digests", name, device.str());
      if (digest_generic(on_device) != want)
        return fmt::format("{}: ATen's arithmetic on {} differs", name, device.str());
      if (digest(on_device.reshape({1024, 1024}).t()) != digest(grid.t()))
        return fmt::format("{}: a transposed view on {} differs from the CPU's", name, device.str());
    }
  }
  at::Tensor swapped = base.clone().to(device);
  swapped[3] = base[500].item<float>();
  swapped[500] = base[3].item<float>();
  if (digest(swapped) == digest(base)) return "a swap of two elements left the digest unchanged";
  const at::Tensor zero = at::zeros({4}, at::TensorOptions().device(device));
  if (digest(zero) == digest(zero.neg())) return "-0.0 and +0.0 gave the same digest";
  if (device.is_cuda()) implementation = cuda_digest_implementation();
  return "";
}

// The two models the front traces, each nondeterministic in one pass under the default
// configuration (each has a single root cause: the trace lists the first one of a run).
//   forward.pt: 2^20 values scattered into 64 slots (index_put_ accumulate on the CPU, whose
//     parallel kernel adds duplicates in a racy order; index_add_ on CUDA, with atomics);
//   backward.pt: 64 parameters gathered at those indices, whose gradient is the same scatter
//     (index_put_ accumulate on the CPU, index_add_ on CUDA).
void write_traced_models(const c10::Device& device, const std::string& folder) {
  const std::string indices = R"JIT(
def forward(self, x):
    idx = torch.remainder(torch.arange(x.numel(), device=x.device) * 7919, 64)
)JIT";
  torch::jit::Module forward("SelfTestForward");
  forward.define(
      indices +
      (device.is_cuda()
           ? "    return torch.zeros([64], dtype=x.dtype, device=x.device).index_add_(0, idx, x)\n"
           : "    return torch.zeros([64], dtype=x.dtype, device=x.device).index_put_([idx], x, accumulate=True)\n"));
  forward.save(folder + "/forward.pt");
  torch::jit::Module backward("SelfTestBackward");
  auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
  backward.register_parameter("w", at::randn({64}, gen) * 0.1, false);
  backward.define(indices +
                  (device.is_cuda() ? "    return self.w.index_select(0, idx) * x\n" : "    return self.w[idx] * x\n"));
  backward.save(folder + "/backward.pt");
}

// The self-test's real positive for batch invariance, measured here before the probes are trusted
// with it: a Linear layer (64 -> 48 features, seeded) applied to the first M rows of one batch, for
// every size the batch-invariance probes try; row 0 of each result is compared with row 0 computed
// alone. Written to FOLDER/invariance.json as {"linear_differs_at": [sizes], "sizes": [sizes]}; the
// front (audit/selftest/selftest_invariance.h) then expects the probe batch.linear to be variant
// exactly when this list is not empty.
void measure_linear_rows(const c10::Device& device, const std::string& folder) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(20261126);
  torch::nn::Linear linear(64, 48);
  {
    torch::NoGradGuard no_grad;
    linear->weight.copy_(at::randn({48, 64}, gen));
    linear->bias.copy_(at::randn({48}, gen));
  }
  linear->to(device);
  const std::vector<int64_t> sizes = probes::batch_invariance_sizes(device.is_cuda());
  const at::Tensor x = at::randn({sizes.back(), 64}, gen).to(device);
  torch::NoGradGuard no_grad;
  const at::Tensor alone = linear->forward(x.narrow(0, 0, 1));
  nlohmann::json out = {{"sizes", sizes}, {"linear_differs_at", nlohmann::json::array()}};
  for (const int64_t m : sizes)
    if (!at::equal(linear->forward(x.narrow(0, 0, m)).narrow(0, 0, 1), alone)) out["linear_differs_at"].push_back(m);
  write_file_atomic(folder + "/invariance.json", out.dump());
}

}  // namespace

std::vector<report::SelfCheck> worker_selftest(const Device& asked, const std::string& model_folder) {
  c10::Device device(c10::kCPU);
  try {
    device = checked_device(asked);
  } catch (const TrialInputError& e) {
    if (e.kind == "usage") throw UsageError(e.what());
    throw InputError(e.what());
  }
  std::vector<report::SelfCheck> checks;
  std::string implementation;
  const std::string failure = digest_failure(device, implementation);
  std::string evidence =
      failure.empty()
          ? fmt::format(
                "6 dtypes of 2^20 elements digest alike with 1 and {} threads, in ATen's arithmetic{}, and as "
                "transposed views; a swap of two elements and -0.0 for +0.0 change the digest",
                at::get_num_threads(), device.is_cuda() ? fmt::format(" and on {}", device.str()) : "")
          : failure;
  if (!implementation.empty()) evidence += fmt::format(" (CUDA digests: {})", implementation);
  checks.push_back({"digests", failure.empty(), evidence});
  write_traced_models(device, model_folder);
  measure_linear_rows(device, model_folder);
  return checks;
}

}  // namespace ra
