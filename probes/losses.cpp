// SPDX-License-Identifier: Apache-2.0
// Losses: NLLLoss in its spatial form (nll_loss2d, what F.nll_loss and F.cross_entropy run for
// N x C x H x W inputs) and CTC loss, with a 1-D nll_loss control.
//
// nll_loss2d's CUDA forward reduces (reduction "mean" or "sum") block by block and atomicAdds each
// block's partial sum into the scalar loss, so the loss itself, not only a gradient, changes with
// block timing: a 16 x 256 x 256 target map spreads the sum over hundreds of blocks. Its backward
// is elementwise; the backward probe records the loss too, and raises under deterministic mode for
// the same reason as the forward one. The 1-D nll_loss reduces inside a single block: a control.
//
// CTC's CUDA backward has two paths. For "large" problems (2T + 2.4N + 0.2C > 450) the gradient of
// the non-blank labels is collected with one thread per target position, atomicAdding into
// grad[t, n, label]: a label that occurs k times in a target makes k adds per time step. A long
// target (150) over a small alphabet (19 labels) repeats each label about 8 times, in threads of
// different warps. The cuDNN path (taken for int32 concatenated targets on the CPU, equal input
// lengths, targets of at most 256 labels) computes the gradient inside cuDNN, and ATen always asks
// for cuDNN's deterministic CTC algorithm: with the same sizes it is the control.
#include "probes/registry.h"

#include <ATen/Context.h>

#include <ATen/Functions.h>

namespace ra::probes {
namespace {

ProbeInfo info(std::string name, std::string op, bool cpu, Direction direction, std::string kb, Role role,
               std::string form) {
  return {.name = std::move(name),
          .family = "losses",
          .op = std::move(op),
          .cpu = cpu,
          .direction = direction,
          .kb = std::move(kb),
          .role = role,
          .form = std::move(form)};
}

// N x C x H x W log-probabilities over a random class map.
struct SpatialShape {
  int64_t n, c, h, w;
};
SpatialShape spatial_shape(const ProbeContext& ctx) {
  return ctx.cuda() ? SpatialShape{16, 8, 256, 256} : SpatialShape{2, 4, 16, 16};
}

void add_nll_loss(ProbeList& out) {
  out.push_back(
      make_probe(info("nll_loss2d.forward", "aten::nll_loss2d", true, Direction::Forward, "nll_loss.cuda", Role::Probe,
                      "float32 log_softmax of N x C x H x W (CUDA 16x8x256x256), reduction mean: the loss"),
                 [](ProbeContext& ctx) {
                   const auto s = spatial_shape(ctx);
                   const at::Tensor logp = at::log_softmax(ctx.randn({s.n, s.c, s.h, s.w}), 1);
                   const at::Tensor target = ctx.randint(0, s.c, {s.n, s.h, s.w});
                   ctx.record("loss", at::nll_loss2d(logp, target));
                 }));
  out.push_back(make_probe(info("nll_loss2d.backward", "aten::nll_loss2d", true, Direction::Backward, "nll_loss.cuda",
                                Role::Probe, "as nll_loss2d.forward; records the loss and the gradient of the logits"),
                           [](ProbeContext& ctx) {
                             const auto s = spatial_shape(ctx);
                             const at::Tensor logits = ctx.leaf({s.n, s.c, s.h, s.w});
                             const at::Tensor target = ctx.randint(0, s.c, {s.n, s.h, s.w});
                             const at::Tensor loss = at::nll_loss2d(at::log_softmax(logits, 1), target);
                             ctx.record("loss", loss);
                             ctx.backward(loss, {{"logits", logits}});
                           }));
  out.push_back(make_probe(info("nll_loss.1d", "aten::nll_loss", true, Direction::Backward, "", Role::Control,
                                "float32 log_softmax of N x C (CUDA 65536x32), reduction mean: one-block reduction"),
                           [](ProbeContext& ctx) {
                             const int64_t n = ctx.cuda() ? 65536 : 64, c = 32;
                             const at::Tensor logits = ctx.leaf({n, c});
                             const at::Tensor target = ctx.randint(0, c, {n});
                             const at::Tensor loss = at::nll_loss(at::log_softmax(logits, 1), target);
                             ctx.record("loss", loss);
                             ctx.backward(loss, {{"logits", logits}});
                           }));
}

// T x N x C logits; targets of length up to S over labels 1..C-1 (0 is the blank).
struct CtcShape {
  int64_t t, n, c, s;
};
CtcShape ctc_shape(const ProbeContext& ctx) { return ctx.cuda() ? CtcShape{400, 32, 20, 150} : CtcShape{30, 2, 6, 10}; }

void add_ctc_loss(ProbeList& out) {
  out.push_back(make_probe(
      info("ctc_loss.backward", "aten::ctc_loss", true, Direction::Backward, "ctc_loss.backward.cuda", Role::Probe,
           "float32 log_softmax, CUDA T=400 N=32 C=20, padded int64 targets of length 143..150 on the device "
           "(native kernels), reduction mean"),
      [](ProbeContext& ctx) {
        const auto s = ctc_shape(ctx);
        const at::Tensor logits = ctx.leaf({s.t, s.n, s.c});
        const at::Tensor targets = ctx.randint(1, s.c, {s.n, s.s});
        std::vector<int64_t> input_lengths(s.n, s.t), target_lengths;
        for (int64_t i = 0; i < s.n; ++i) target_lengths.push_back(s.s - i % 8);
        const at::Tensor loss =
            at::ctc_loss(at::log_softmax(logits, 2), targets, input_lengths, target_lengths, 0, at::Reduction::Mean);
        ctx.record("loss", loss);
        ctx.backward(loss, {{"logits", logits}});
      }));
  out.push_back(make_probe(
      info("ctc_loss.cudnn.backward", "aten::ctc_loss", false, Direction::Backward, "", Role::Control,
           "as ctc_loss.backward with cuDNN's inputs (int32 concatenated targets on the CPU, all lengths equal): "
           "cuDNN's deterministic CTC; skipped when cuDNN is off"),
      [](ProbeContext& ctx) {
        // With cuDNN off the same call runs the native kernels, which are what ctc_loss.backward
        // probes: this would stop being a control and be filed as a finding.
        if (!at::globalContext().userEnabledCuDNN())
          throw ProbeSkip("cuDNN is off in this configuration, so the native CTC kernels would run: not a control");
        const auto s = ctc_shape(ctx);
        const at::Tensor logits = ctx.leaf({s.t, s.n, s.c});
        const at::Tensor targets = ctx.randint(1, s.c, {s.n * s.s}).to(at::kCPU, at::kInt);
        const std::vector<int64_t> input_lengths(s.n, s.t), target_lengths(s.n, s.s);
        const at::Tensor loss =
            at::ctc_loss(at::log_softmax(logits, 2), targets, input_lengths, target_lengths, 0, at::Reduction::Mean);
        ctx.record("loss", loss);
        ctx.backward(loss, {{"logits", logits}});
      }));
}

}  // namespace

void register_losses(ProbeList& out) {
  add_nll_loss(out);
  add_ctc_loss(out);
}

}  // namespace ra::probes
