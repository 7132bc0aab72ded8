// SPDX-License-Identifier: Apache-2.0
// Resampling backward: interpolate (linear, bilinear, bicubic, trilinear; nearest as a control),
// reflection and replication padding (1d to 3d), and grid_sample.
//
// All of these are many-outputs-to-one-input maps whose CUDA backward kernels run one thread per
// output element and atomicAdd its gradient into the input cells it read. A reordering is visible
// only where a cell receives three or more adds from different warps (two adds into a zeroed cell
// commute exactly), so each probe is shaped to pile many adds on each cell:
//   * interpolate upsamples by 8 to 64 per dimension: every input cell feeds dozens to hundreds of
//     outputs (bicubic: 4 taps per dimension);
//   * reflection padding uses the largest legal pad (size - 1 on both sides): every cell is read
//     by itself and by both mirror images, 3 adds per dimension (9 in 2d, 27 in 3d);
//   * replication padding uses a pad as wide as the input: each edge cell receives pad + 1 adds
//     per dimension, and a corner (pad + 1)^d;
//   * grid_sample draws a 256x256 grid of random points over a 16x16 map: about 1000 bilinear
//     samples (4 adds each) land on every input pixel.
// Nearest upsampling's backward gathers each input cell's outputs in a fixed order: a control.
#include "probes/registry.h"

#include <ATen/Functions.h>

namespace ra::probes {
namespace {

using MapFn = UnaryOp;

ProbeInfo info(std::string name, std::string op, std::string kb, Role role, std::string form) {
  return {.name = std::move(name),
          .family = "resampling",
          .op = std::move(op),
          .direction = Direction::Backward,
          .kb = std::move(kb),
          .role = role,
          .form = std::move(form)};
}

// The spatial sizes of x times `factor`.
std::vector<int64_t> scaled(const at::Tensor& x, int64_t factor) {
  std::vector<int64_t> s = x.sizes().slice(2).vec();
  for (auto& v : s) v *= factor;
  return s;
}

void add_interpolate(ProbeList& out) {
  out.push_back(make_unary_backward_probe(
      info("interpolate.linear.backward", "aten::upsample_linear1d", "upsample_linear1d.backward.cuda", Role::Probe,
           "float32 NCL, x64 upsampling on CUDA (64 -> 4096), x8 on the CPU, align_corners=false"),
      {{2, 4, 16}, {64, 64, 64}}, [](ProbeContext& ctx, const at::Tensor& x) {
        return at::upsample_linear1d(x, scaled(x, ctx.cuda() ? 64 : 8), false);
      }));
  out.push_back(make_unary_backward_probe(
      info("interpolate.bilinear.backward", "aten::upsample_bilinear2d", "upsample_bilinear2d.backward.cuda",
           Role::Probe, "float32 NCHW, x8 upsampling (CUDA: 32x32 -> 256x256), align_corners=false"),
      {{2, 4, 8, 8}, {16, 32, 32, 32}},
      [](ProbeContext&, const at::Tensor& x) { return at::upsample_bilinear2d(x, scaled(x, 8), false); }));
  out.push_back(make_unary_backward_probe(
      info("interpolate.bicubic.backward", "aten::upsample_bicubic2d", "upsample_bicubic2d.backward.cuda", Role::Probe,
           "float32 NCHW, x8 upsampling (CUDA: 32x32 -> 256x256), 16 taps per output"),
      {{2, 4, 8, 8}, {8, 32, 32, 32}},
      [](ProbeContext&, const at::Tensor& x) { return at::upsample_bicubic2d(x, scaled(x, 8), false); }));
  out.push_back(make_unary_backward_probe(
      info("interpolate.trilinear.backward", "aten::upsample_trilinear3d", "upsample_trilinear3d.backward.cuda",
           Role::Probe, "float32 NCDHW, x8 upsampling (CUDA: 8^3 -> 64^3), align_corners=false"),
      {{1, 2, 4, 4, 4}, {4, 8, 8, 8, 8}},
      [](ProbeContext&, const at::Tensor& x) { return at::upsample_trilinear3d(x, scaled(x, 8), false); }));
  out.push_back(make_unary_backward_probe(
      info("interpolate.nearest.backward", "aten::upsample_nearest2d", "", Role::Control,
           "float32 NCHW, x8 upsampling (CUDA: 32x32 -> 256x256); the backward gathers"),
      {{2, 4, 8, 8}, {16, 32, 32, 32}},
      [](ProbeContext&, const at::Tensor& x) { return at::upsample_nearest2d(x, scaled(x, 8)); }));
}

// A pad of `p` on both sides of every spatial dimension of x, in ATen's (last dim first) order.
std::vector<int64_t> pads(const at::Tensor& x, int64_t p) { return std::vector<int64_t>(2 * (x.dim() - 2), p); }

void add_padding(ProbeList& out) {
  // Reflection: pad = size - 1, the largest legal one (3 reads of every cell per dimension).
  auto reflect = [](ProbeContext&, const at::Tensor& x) {
    const int64_t p = x.size(-1) - 1;
    switch (x.dim()) {
      case 3:
        return at::reflection_pad1d(x, pads(x, p));
      case 4:
        return at::reflection_pad2d(x, pads(x, p));
      default:
        return at::reflection_pad3d(x, pads(x, p));
    }
  };
  // Replication: pad = size (an edge cell is read pad + 1 times per dimension).
  auto replicate = [](ProbeContext&, const at::Tensor& x) {
    const int64_t p = x.size(-1);
    switch (x.dim()) {
      case 3:
        return at::replication_pad1d(x, pads(x, p));
      case 4:
        return at::replication_pad2d(x, pads(x, p));
      default:
        return at::replication_pad3d(x, pads(x, p));
    }
  };
  const Sizes maps1d{{2, 4, 16}, {64, 64, 256}};
  const Sizes maps2d{{2, 4, 8, 8}, {16, 32, 64, 64}};
  const Sizes maps3d{{1, 2, 6, 6, 6}, {4, 16, 16, 16, 16}};
  out.push_back(make_unary_backward_probe(
      info("reflection_pad1d.backward", "aten::reflection_pad1d", "reflection_pad1d.backward.cuda", Role::Probe,
           "float32 NCL (CUDA L=256), pad L-1 on both sides: 3 adds per input cell"),
      maps1d, reflect));
  out.push_back(make_unary_backward_probe(
      info("reflection_pad2d.backward", "aten::reflection_pad2d", "reflection_pad2d.backward.cuda", Role::Probe,
           "float32 NCHW (CUDA 64x64), pad size-1 on every side: 9 adds per input cell"),
      maps2d, reflect));
  out.push_back(make_unary_backward_probe(
      info("reflection_pad3d.backward", "aten::reflection_pad3d", "reflection_pad3d.backward.cuda", Role::Probe,
           "float32 NCDHW (CUDA 16^3), pad size-1 on every side: 27 adds per input cell"),
      maps3d, reflect));
  out.push_back(make_unary_backward_probe(
      info("replication_pad1d.backward", "aten::replication_pad1d", "replication_pad1d.backward.cuda", Role::Probe,
           "float32 NCL (CUDA L=256), pad L on both sides: 257 adds into each edge cell"),
      maps1d, replicate));
  out.push_back(make_unary_backward_probe(
      info("replication_pad2d.backward", "aten::replication_pad2d", "replication_pad2d.backward.cuda", Role::Probe,
           "float32 NCHW (CUDA 64x64), pad 64 on every side: 65^2 adds into each corner"),
      maps2d, replicate));
  out.push_back(make_unary_backward_probe(
      info("replication_pad3d.backward", "aten::replication_pad3d", "replication_pad3d.backward.cuda", Role::Probe,
           "float32 NCDHW (CUDA 16^3), pad 16 on every side: 17^3 adds into each corner"),
      maps3d, replicate));
}

void add_grid_sample(ProbeList& out) {
  out.push_back(make_probe(
      info("grid_sample.backward", "aten::grid_sampler_2d", "grid_sample.backward.cuda", Role::Probe,
           "float32, bilinear, zeros padding, align_corners=false; CUDA: 256x256 random points on a 16x16 map "
           "(~1000 samples per pixel); gradients of input and grid"),
      [](ProbeContext& ctx) {
        const int64_t n = ctx.cuda() ? 16 : 2, c = ctx.cuda() ? 16 : 4, hw = ctx.cuda() ? 16 : 8;
        const int64_t g = ctx.cuda() ? 256 : 16;
        const at::Tensor x = ctx.leaf({n, c, hw, hw});
        const at::Tensor grid = ctx.rand({n, g, g, 2}).mul_(2).sub_(1).requires_grad_(true);  // in [-1, 1)
        // at::grid_sampler is what F.grid_sample calls; align_corners=false keeps it off cuDNN.
        const at::Tensor y = at::grid_sampler(x, grid, /*interpolation_mode=*/0, /*padding_mode=*/0, false);
        ctx.record("output", y);
        ctx.backward(y, {{"input", x}, {"grid", grid}});
      }));
}

}  // namespace

void register_resampling(ProbeList& out) {
  add_interpolate(out);
  add_padding(out);
  add_grid_sample(out);
}

}  // namespace ra::probes
