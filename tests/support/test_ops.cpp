// SPDX-License-Identifier: Apache-2.0
// Test-only operators, built only with the tests and loaded by the binary under test through
// --load-library (and linked into the test programs so that models using them can be defined):
//   ra_test::nondet_sum(x) -> per-row sums taken in an order drawn from std::random_device, an
//       unseeded source: float rounding makes the result differ between processes. The positive
//       control that proves the pipeline catches divergence without a GPU.
//   ra_test::nondet_grad(x) -> 2x, deterministically; its backward adds to 2*grad a thousandth of
//       the per-row nondet_sum of grad, dispatched (so a trace sees it inside the backward node):
//       nondeterminism only in a backward node.
//   ra_test::nondet_alert(x) -> nondet_sum(x), after raising the determinism alert
//       'ra_test_nondet_alert': an op without a deterministic implementation.
//   ra_test::fault(x) -> x, except that it raises SIGSEGV when intra-op threads == 1 and hangs
//       when intra-op threads == 3: the crash/timeout control, selected by configuration.
//   ra_test::bf16_when_deterministic(x) -> x, except that a float32 x is rounded to bfloat16 and back
//       while deterministic algorithms are on (at::globalContext().deterministicAlgorithms()): a
//       kernel whose deterministic path is less accurate, as a TF32 or bfloat16 "invariant" kernel is.
//       Like TF32, the lower precision touches float32 only, so a float64 run (the referee's) is exact.
//   ra_test::killed(x) -> never returns: the process gets SIGKILL, as from the out-of-memory killer
//       or a scheduler (a signal from outside, not a crash).
// It is also a probe plugin (ra_probe_plugin_v1, see probes/registry.h) adding test-only probes to
// `repro-audit probes`: test.nondet-sum, test.fault and test.alert use the ops above and an alert
// of their own; test.stable is a deterministic neighbour that must keep running after a crash.
// The plugin uses only the virtual members of ProbeContext and inline code: the executable does
// not export its symbols.
#include "probes/registry.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <numeric>
#include <random>
#include <thread>

namespace {

at::Tensor nondet_sum(const at::Tensor& x) {
  const at::Tensor in = x.to(at::kFloat).contiguous().reshape({x.size(0), -1});
  at::Tensor out = at::empty({in.size(0)}, in.options());
  const int64_t cols = in.size(1);
  std::vector<int64_t> order(static_cast<size_t>(cols));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(std::random_device{}());
  const float* src = in.const_data_ptr<float>();
  float* dst = out.mutable_data_ptr<float>();
  for (int64_t r = 0; r < in.size(0); ++r) {
    std::shuffle(order.begin(), order.end(), rng);
    float acc = 0.f;
    for (int64_t c : order) acc += src[r * cols + c];
    dst[r] = acc;
  }
  return out;
}

at::Tensor nondet_alert(const at::Tensor& x) {
  at::globalContext().alertNotDeterministic("ra_test_nondet_alert");
  return nondet_sum(x);
}

at::Tensor nondet_grad_cpu(const at::Tensor& x) { return x * 2; }

class NondetGrad : public torch::autograd::Function<NondetGrad> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext*, const at::Tensor& x) {
    at::AutoDispatchBelowADInplaceOrView below;
    return nondet_grad_cpu(x);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list grads) {
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("ra_test::nondet_sum", "")
                               .typed<at::Tensor(const at::Tensor&)>();
    const at::Tensor& g = grads[0];
    const at::Tensor rows = g.reshape({g.size(0), -1});
    const at::Tensor noise = op.call(rows.repeat({1, 64})) * 1e-3;
    return {g * 2 + noise.reshape({-1, 1}).expand_as(rows).reshape(g.sizes())};
  }
};

at::Tensor nondet_grad(const at::Tensor& x) { return NondetGrad::apply(x); }

at::Tensor fault(const at::Tensor& x) {
  const int threads = at::get_num_threads();
  if (threads == 1) std::raise(SIGSEGV);
  if (threads == 3)
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  return x.clone();
}

at::Tensor bf16_when_deterministic(const at::Tensor& x) {
  if (at::globalContext().deterministicAlgorithms() && x.scalar_type() == at::kFloat)
    return x.to(at::kBFloat16).to(at::kFloat);
  return x.clone();
}

at::Tensor killed(const at::Tensor&) {
  std::raise(SIGKILL);
  std::abort();  // not reached
}

bool g_poisoned = false;  // set by test.device-error-sticky
int g_runs = 0;           // test probe runs in this process

using ra::probes::ProbeContext;
using ra::probes::ProbeInfo;

class TestProbe final : public ra::probes::Probe {
 public:
  TestProbe(ProbeInfo info, at::Tensor (*op)(ProbeContext&)) : info_(std::move(info)), op_(op) {}
  const ProbeInfo& info() const override { return info_; }
  void run(ProbeContext& ctx) const override {
    ++g_runs;
    ctx.record("output", op_(ctx));
  }

 private:
  ProbeInfo info_;
  at::Tensor (*op_)(ProbeContext&);
};

at::Tensor input(ProbeContext& ctx) { return at::randn({64, 4096}, ctx.generator()).to(ctx.device()); }

ProbeInfo test_info(std::string name, std::string op, std::string form) {
  ProbeInfo info;
  info.name = std::move(name);
  info.family = "test";
  info.op = std::move(op);
  info.cuda = false;
  info.form = std::move(form);
  return info;
}

}  // namespace

extern "C" void ra_probe_plugin_v1(ra::probes::ProbeList& out) {
  out.push_back(std::make_unique<TestProbe>(
      test_info("test.nondet-sum", "ra_test::nondet_sum", "per-row sums in a random order (positive control)"),
      [](ProbeContext& ctx) { return nondet_sum(input(ctx)); }));
  out.push_back(std::make_unique<TestProbe>(
      test_info("test.fault", "ra_test::fault", "segfaults with 1 intra-op thread, hangs with 3"),
      [](ProbeContext& ctx) { return fault(input(ctx)); }));
  out.push_back(std::make_unique<TestProbe>(
      test_info("test.alert", "ra_test::alert", "raises the determinism alert 'ra_test_alert', then doubles"),
      [](ProbeContext& ctx) {
        at::globalContext().alertNotDeterministic("ra_test_alert");
        return input(ctx) * 2;
      }));
  out.push_back(std::make_unique<TestProbe>(test_info("test.stable", "aten::mul", "doubles its input"),
                                            [](ProbeContext& ctx) { return input(ctx) * 2; }));
  // A sticky device error, simulated: it poisons this process (as an illegal address poisons a
  // CUDA context), and the probe after it fails in a poisoned process.
  out.push_back(std::make_unique<TestProbe>(test_info("test.device-error-sticky", "ra_test::sticky",
                                                      "raises a c10::AcceleratorError and poisons its process"),
                                            [](ProbeContext&) -> at::Tensor {
                                              g_poisoned = true;
                                              throw c10::AcceleratorError(
                                                  {__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, 700,
                                                  "CUDA error: an illegal memory access was encountered (simulated)");
                                            }));
  out.push_back(std::make_unique<TestProbe>(
      test_info("test.device-error-then", "aten::mul", "doubles its input; fails in a poisoned process"),
      [](ProbeContext& ctx) {
        if (g_poisoned) throw std::runtime_error("this process was poisoned by an earlier probe");
        return input(ctx) * 2;
      }));
  // An isolated probe (ProbeInfo::isolated) must be the only probe its process runs.
  ProbeInfo alone = test_info("test.isolated", "aten::mul", "doubles its input; fails unless alone in its process");
  alone.isolated = true;
  out.push_back(std::make_unique<TestProbe>(std::move(alone), [](ProbeContext& ctx) {
    if (g_runs != 1) throw std::runtime_error("an isolated probe shares its process with another probe");
    return input(ctx) * 2;
  }));
}

TORCH_LIBRARY(ra_test, m) {
  m.def("nondet_sum(Tensor x) -> Tensor");
  m.def("fault(Tensor x) -> Tensor");
  m.def("nondet_grad(Tensor x) -> Tensor");
  m.def("nondet_alert(Tensor x) -> Tensor");
  m.def("killed(Tensor x) -> Tensor");
  m.def("bf16_when_deterministic(Tensor x) -> Tensor");
}

TORCH_LIBRARY_IMPL(ra_test, Autograd, m) { m.impl("nondet_grad", nondet_grad); }

TORCH_LIBRARY_IMPL(ra_test, CPU, m) {
  m.impl("nondet_sum", nondet_sum);
  m.impl("fault", fault);
  m.impl("nondet_grad", nondet_grad_cpu);
  m.impl("nondet_alert", nondet_alert);
  m.impl("killed", killed);
  m.impl("bf16_when_deterministic", bf16_when_deterministic);
}

// Referenced by the test programs so that the linker keeps this library (and its registrations).
extern "C" int ra_test_ops_anchor() { return 1; }
