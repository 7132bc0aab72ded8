// SPDX-License-Identifier: Apache-2.0
// To add a probe, implement this interface: give it a ProbeInfo and a run() that builds seeded inputs
// through the context, calls the op once, and records the tensors whose bits must be reproducible.
// Most probes are a function handed to `make_probe` inside their family's file (one file per
// family, `probes/<family>.cpp`), registered by that file's `register_<family>` function, which
// `registry.cpp` calls in a fixed order.
//
// A probe knows nothing about processes, configurations or reports: the trial child calls run()
// under a configuration, the parent compares the recorded digests across fresh processes. Device
// and randomness sit behind ProbeContext, so unit tests can run a probe on the CPU with a fake
// context, and no probe needs a GPU to be listed or described.
//
// Rules for probes (they are what makes a measured "reproducible" mean something):
//   * Inputs come from the context's generator (CPU, seeded per probe) and are moved to the
//     device, so they are identical across processes, devices and probe selections.
//   * Backward probes use ctx.backward(), which draws a seeded random upstream gradient: an
//     all-ones gradient hides a reordered sum in many backward kernels.
//   * Sizes and duplicate-index densities are chosen so that an op that can diverge does so in
//     practically every run on a GPU (many colliding atomic adds), and stay small enough on the
//     CPU for the suite to finish in seconds. Use ctx.cuda() to pick between the two.
//   * A probe that cannot run here (no cuDNN, an SDPA backend this GPU lacks) throws ProbeSkip.
#pragma once

#include "audit/probes/probe_info.h"

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ra::probes {

// Thrown by a probe that cannot run on this machine; the reason becomes a `skipped` verdict.
struct ProbeSkip : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a probe sees of the trial. The child implements it; tests may fake it.
class ProbeContext {
 public:
  virtual ~ProbeContext() = default;
  virtual c10::Device device() const = 0;
  // The probe's own CPU generator, seeded from the trial seed and the probe's name.
  virtual at::Generator& generator() = 0;
  // Records a tensor whose bits are compared across runs (names are unique within a probe).
  virtual void record(const std::string& name, const at::Tensor& t) = 0;

  bool cuda() const { return device().is_cuda(); }
  // Seeded inputs: generated on the CPU, then moved to the device.
  at::Tensor randn(at::IntArrayRef sizes, at::ScalarType type = at::kFloat);
  at::Tensor rand(at::IntArrayRef sizes, at::ScalarType type = at::kFloat);  // uniform [0, 1)
  at::Tensor randint(int64_t low, int64_t high, at::IntArrayRef sizes);      // int64
  at::Tensor randperm(int64_t n);                                            // int64, no duplicates
  // Same as randn, with requires_grad set: a leaf for backward probes.
  at::Tensor leaf(at::IntArrayRef sizes, at::ScalarType type = at::kFloat);
  // output.backward(g) with a seeded random g of output's shape (never ones), then records the
  // gradient of each named leaf as "grad/<name>".
  void backward(const at::Tensor& output, const std::vector<std::pair<std::string, at::Tensor>>& leaves);
};

class Probe {
 public:
  virtual ~Probe() = default;
  virtual const ProbeInfo& info() const = 0;
  virtual void run(ProbeContext& ctx) const = 0;
};

using ProbeFn = std::function<void(ProbeContext&)>;
std::unique_ptr<Probe> make_probe(ProbeInfo info, ProbeFn fn);

// An input shape for each device: small on the CPU, large enough to trigger on a GPU.
struct Sizes {
  std::vector<int64_t> cpu, cuda;
  const std::vector<int64_t>& on(const ProbeContext& ctx) const { return ctx.cuda() ? cuda : cpu; }
};

// The common backward probe of a one-input op: y = op(ctx, x) for a leaf x of `input`'s shape;
// records "output" and "grad/input" (from a random upstream gradient).
using UnaryOp = std::function<at::Tensor(ProbeContext&, const at::Tensor&)>;
std::unique_ptr<Probe> make_unary_backward_probe(ProbeInfo info, Sizes input, UnaryOp op);

}  // namespace ra::probes
