// SPDX-License-Identifier: Apache-2.0
#include "probes/probe.h"

#include <ATen/Functions.h>

namespace ra::probes {
namespace {

class FunctionProbe final : public Probe {
 public:
  FunctionProbe(ProbeInfo info, ProbeFn fn) : info_(std::move(info)), fn_(std::move(fn)) {}
  const ProbeInfo& info() const override { return info_; }
  void run(ProbeContext& ctx) const override { fn_(ctx); }

 private:
  ProbeInfo info_;
  ProbeFn fn_;
};

}  // namespace

std::unique_ptr<Probe> make_probe(ProbeInfo info, ProbeFn fn) {
  return std::make_unique<FunctionProbe>(std::move(info), std::move(fn));
}

std::unique_ptr<Probe> make_unary_backward_probe(ProbeInfo info, Sizes input, UnaryOp op) {
  return make_probe(std::move(info), [input = std::move(input), op = std::move(op)](ProbeContext& ctx) {
    const at::Tensor x = ctx.leaf(input.on(ctx));
    const at::Tensor y = op(ctx, x);
    ctx.record("output", y);
    ctx.backward(y, {{"input", x}});
  });
}

at::Tensor ProbeContext::randn(at::IntArrayRef sizes, at::ScalarType type) {
  return at::randn(sizes, generator(), at::TensorOptions().dtype(at::kFloat)).to(device(), type);
}

at::Tensor ProbeContext::rand(at::IntArrayRef sizes, at::ScalarType type) {
  return at::rand(sizes, generator(), at::TensorOptions().dtype(at::kFloat)).to(device(), type);
}

at::Tensor ProbeContext::randint(int64_t low, int64_t high, at::IntArrayRef sizes) {
  return at::randint(low, high, sizes, generator(), at::TensorOptions().dtype(at::kLong)).to(device());
}

at::Tensor ProbeContext::randperm(int64_t n) {
  return at::randperm(n, generator(), at::TensorOptions().dtype(at::kLong)).to(device());
}

at::Tensor ProbeContext::leaf(at::IntArrayRef sizes, at::ScalarType type) {
  return randn(sizes, type).requires_grad_(true);
}

void ProbeContext::backward(const at::Tensor& output, const std::vector<std::pair<std::string, at::Tensor>>& leaves) {
  const at::Tensor upstream = randn(output.sizes(), output.scalar_type());
  output.backward(upstream);
  for (const auto& [name, t] : leaves) {
    if (!t.grad().defined()) throw std::logic_error("probe leaf '" + name + "' has no gradient after backward");
    record("grad/" + name, t.grad());
  }
}

}  // namespace ra::probes
