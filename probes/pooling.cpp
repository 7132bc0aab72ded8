// SPDX-License-Identifier: Apache-2.0
// Pooling backward (average, max, adaptive and fractional max, 2d and 3d) and MaxUnpool forward.
//
// The CUDA backward kernels that PyTorch lists as nondeterministic scatter each output's gradient
// into the input with atomicAdd. Two adds into a zeroed cell commute exactly (0+a+b == 0+b+a), so
// a reordering only shows when one input cell receives three or more contributions from
// different warps. The sizes are chosen for that:
//   * fixed windows overlap (kernel 3, stride 1): an input cell lies in 3^d windows, and a local
//     maximum of its neighbourhood is the argmax of all of them;
//   * adaptive pooling upsamples (output larger than input, sizes not multiples of each other):
//     every input cell lies in about (out/in + 1)^d windows, and for max pooling it is the only
//     element of most of them;
//   * fractional max pooling uses an output just below the input, so the pseudo-random windows
//     advance by about one cell and overlap like the fixed ones;
//   * the outputs that share an input cell lie in different rows (or planes), which run in
//     different warps, and N x C is large, so thousands of blocks race.
// avg_pool3d keeps padding 1: with stride 1 and no padding its CUDA backward takes a gather path.
// The 2d average and max pooling backward kernels gather (each input cell sums its windows in a
// fixed order): they are controls with the same overlap, proving the 3d divergence is the kernel.
//
// MaxUnpool writes (not adds) each value at its index; duplicate indices make the surviving value
// depend on which thread stores last. Duplicates need overlapping max-pool windows, and visible
// divergence needs different values at the duplicates: the unpooled tensor is a fresh map of the
// pooled shape (as in a decoder, where features change between pool and unpool), not the pooled
// maxima themselves, which are equal at every duplicate.
#include "probes/registry.h"

#include <ATen/Functions.h>

namespace ra::probes {
namespace {

// Input sizes for each device: small on the CPU (the suite must stay fast), large on CUDA.
using PoolFn = UnaryOp;

ProbeInfo info(std::string name, std::string op, Direction direction, std::string kb, Role role, std::string form) {
  return {.name = std::move(name),
          .family = "pooling",
          .op = std::move(op),
          .direction = direction,
          .kb = std::move(kb),
          .role = role,
          .form = std::move(form)};
}

// Spatial sizes of an NC... input.
std::vector<int64_t> spatial(const at::Tensor& x) { return x.sizes().slice(2).vec(); }

void add_fixed_window(ProbeList& out) {
  const Sizes maps2d{{2, 4, 16, 16}, {32, 32, 64, 64}};
  const Sizes maps3d{{2, 2, 8, 8, 8}, {8, 16, 32, 32, 32}};
  out.push_back(make_unary_backward_probe(
      info("avg_pool2d.backward", "aten::avg_pool2d", Direction::Backward, "", Role::Control,
           "float32 NCHW, kernel 3 stride 1 padding 1 (9 windows per cell); CUDA backward gathers"),
      maps2d, [](ProbeContext&, const at::Tensor& x) {
        return at::avg_pool2d(x, {3, 3}, {1, 1}, {1, 1});
      }));
  out.push_back(make_unary_backward_probe(
      info("avg_pool3d.backward", "aten::avg_pool3d", Direction::Backward, "avg_pool3d.backward.cuda", Role::Probe,
           "float32 NCDHW, kernel 3 stride 1 padding 1: 27 atomic adds per input cell"),
      maps3d, [](ProbeContext&, const at::Tensor& x) {
        return at::avg_pool3d(x, {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
      }));
  out.push_back(make_unary_backward_probe(
      info("max_pool2d.backward", "aten::max_pool2d_with_indices", Direction::Backward, "", Role::Control,
           "float32 NCHW, kernel 3 stride 1 padding 1 (a local maximum wins 9 windows); CUDA backward "
           "gathers"),
      maps2d, [](ProbeContext&, const at::Tensor& x) {
        return std::get<0>(at::max_pool2d_with_indices(x, {3, 3}, {1, 1}, {1, 1}));
      }));
  out.push_back(make_unary_backward_probe(
      info("max_pool3d.backward", "aten::max_pool3d_with_indices", Direction::Backward, "max_pool3d.backward.cuda",
           Role::Probe, "float32 NCDHW, kernel 3 stride 1 padding 1: a local maximum receives up to 27 atomic adds"),
      maps3d, [](ProbeContext&, const at::Tensor& x) {
        return std::get<0>(at::max_pool3d_with_indices(x, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}));
      }));
}

void add_adaptive(ProbeList& out) {
  // Upsampling: 16 -> 61 (CUDA) puts each input cell in ~5 windows per dimension.
  const Sizes maps2d{{2, 4, 6, 6}, {32, 32, 16, 16}};
  const Sizes maps3d{{1, 2, 4, 4, 4}, {4, 16, 8, 8, 8}};
  auto out2d = [](ProbeContext& ctx) {
    return ctx.cuda() ? std::vector<int64_t>{61, 61} : std::vector<int64_t>{13, 13};
  };
  auto out3d = [](ProbeContext& ctx) {
    return ctx.cuda() ? std::vector<int64_t>{29, 29, 29} : std::vector<int64_t>{9, 9, 9};
  };
  out.push_back(make_unary_backward_probe(
      info("adaptive_avg_pool2d.backward", "aten::_adaptive_avg_pool2d", Direction::Backward,
           "adaptive_avg_pool2d.backward.cuda", Role::Probe,
           "float32, 16x16 -> 61x61 (CUDA): ~25 overlapping windows add into each input cell"),
      maps2d, [out2d](ProbeContext& ctx, const at::Tensor& x) { return at::adaptive_avg_pool2d(x, out2d(ctx)); }));
  out.push_back(make_unary_backward_probe(
      info("adaptive_avg_pool3d.backward", "aten::_adaptive_avg_pool3d", Direction::Backward,
           "adaptive_avg_pool3d.backward.cuda", Role::Probe,
           "float32, 8^3 -> 29^3 (CUDA): ~100 overlapping windows add into each input cell"),
      maps3d, [out3d](ProbeContext& ctx, const at::Tensor& x) { return at::adaptive_avg_pool3d(x, out3d(ctx)); }));
  out.push_back(make_unary_backward_probe(
      info("adaptive_max_pool2d.backward", "aten::adaptive_max_pool2d", Direction::Backward,
           "adaptive_max_pool2d.backward.cuda", Role::Probe,
           "float32, 16x16 -> 61x61 (CUDA): each input cell is the argmax of up to ~25 windows"),
      maps2d,
      [out2d](ProbeContext& ctx, const at::Tensor& x) { return std::get<0>(at::adaptive_max_pool2d(x, out2d(ctx))); }));
  // Not in PyTorch's list: the 3d kernel also takes an atomicAdd path when the sizes do not divide.
  out.push_back(make_unary_backward_probe(
      info("adaptive_max_pool3d.backward", "aten::adaptive_max_pool3d", Direction::Backward,
           "adaptive_max_pool3d.backward.cuda", Role::Probe,
           "float32, 8^3 -> 29^3 (CUDA): each input cell is the argmax of up to ~100 windows (atomic "
           "path, undocumented)"),
      maps3d,
      [out3d](ProbeContext& ctx, const at::Tensor& x) { return std::get<0>(at::adaptive_max_pool3d(x, out3d(ctx))); }));
}

void add_fractional(ProbeList& out) {
  out.push_back(
      make_unary_backward_probe(info("fractional_max_pool2d.backward", "aten::fractional_max_pool2d",
                                     Direction::Backward, "fractional_max_pool2d.backward.cuda", Role::Probe,
                                     "float32, kernel 3, 64x64 -> 62x62 (CUDA): windows advance ~1 cell and overlap"),
                                {{2, 4, 16, 16}, {32, 32, 64, 64}}, [](ProbeContext& ctx, const at::Tensor& x) {
                                  const int64_t o = x.size(2) - 2;
                                  const at::Tensor samples = ctx.rand({x.size(0), x.size(1), 2});
                                  return std::get<0>(at::fractional_max_pool2d(x, {3, 3}, {o, o}, samples));
                                }));
  out.push_back(
      make_unary_backward_probe(info("fractional_max_pool3d.backward", "aten::fractional_max_pool3d",
                                     Direction::Backward, "fractional_max_pool3d.backward.cuda", Role::Probe,
                                     "float32, kernel 3, 24^3 -> 21^3 (CUDA): windows advance ~1 cell and overlap"),
                                {{1, 2, 8, 8, 8}, {4, 16, 24, 24, 24}}, [](ProbeContext& ctx, const at::Tensor& x) {
                                  const int64_t o = x.size(2) - 3;  // the 3d op wants output + kernel - 1 < input
                                  const at::Tensor samples = ctx.rand({x.size(0), x.size(1), 3});
                                  return std::get<0>(at::fractional_max_pool3d(x, {3, 3, 3}, {o, o, o}, samples));
                                }));
}

// max_pool -> (pooled, indices); unpool(fresh values of the pooled shape, indices).
using UnpoolFn = std::function<at::Tensor(ProbeContext&, const at::Tensor&)>;

void add_unpool(ProbeList& out, ProbeInfo i, Sizes input, UnpoolFn run) {
  out.push_back(make_probe(std::move(i), [input = std::move(input), run = std::move(run)](ProbeContext& ctx) {
    ctx.record("output", run(ctx, ctx.randn(input.on(ctx))));
  }));
}

void add_max_unpool(ProbeList& out) {
  // 1d: kernel 33, stride 1: a local maximum is the argmax of up to 33 windows, spread over warps.
  add_unpool(out,
             info("max_unpool1d", "aten::max_unpool2d", Direction::Forward, "max_unpool1d", Role::Probe,
                  "float32 NCL, indices of max_pool1d kernel 33 stride 1 (duplicates), fresh values; as "
                  "F.max_unpool1d (max_unpool2d on NCL1)"),
             {{2, 4, 64}, {64, 64, 4096}}, [](ProbeContext& ctx, const at::Tensor& x) {
               const at::Tensor idx = std::get<1>(at::max_pool1d_with_indices(x, {33}, {1}, {16}));
               const at::Tensor values = ctx.randn(idx.sizes());
               return at::max_unpool2d(values.unsqueeze(-1), idx.unsqueeze(-1), {x.size(2), 1}).squeeze(-1);
             });
  add_unpool(out,
             info("max_unpool2d", "aten::max_unpool2d", Direction::Forward, "max_unpool2d", Role::Probe,
                  "float32 NCHW, indices of max_pool2d kernel 3 stride 1 padding 1 (up to 9 duplicates), fresh "
                  "values"),
             {{2, 4, 16, 16}, {32, 32, 64, 64}}, [](ProbeContext& ctx, const at::Tensor& x) {
               const at::Tensor idx = std::get<1>(at::max_pool2d_with_indices(x, {3, 3}, {1, 1}, {1, 1}));
               return at::max_unpool2d(ctx.randn(idx.sizes()), idx, spatial(x));
             });
  add_unpool(out,
             info("max_unpool3d", "aten::max_unpool3d", Direction::Forward, "max_unpool3d", Role::Probe,
                  "float32 NCDHW, indices of max_pool3d kernel 3 stride 1 padding 1 (up to 27 duplicates), fresh "
                  "values"),
             {{1, 2, 8, 8, 8}, {8, 8, 32, 32, 32}}, [](ProbeContext& ctx, const at::Tensor& x) {
               const at::Tensor idx = std::get<1>(at::max_pool3d_with_indices(x, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}));
               return at::max_unpool3d(ctx.randn(idx.sizes()), idx, spatial(x), {1, 1, 1}, {1, 1, 1});
             });
  add_unpool(
      out,
      info("max_unpool2d.unique-indices", "aten::max_unpool2d", Direction::Forward, "max_unpool2d", Role::Control,
           "float32 NCHW, indices of max_pool2d kernel 2 stride 2 (disjoint windows: no duplicates)"),
      {{2, 4, 16, 16}, {32, 32, 64, 64}}, [](ProbeContext& ctx, const at::Tensor& x) {
        const at::Tensor idx = std::get<1>(at::max_pool2d_with_indices(x, {2, 2}, {2, 2}));
        return at::max_unpool2d(ctx.randn(idx.sizes()), idx, spatial(x));
      });
}

}  // namespace

void register_pooling(ProbeList& out) {
  add_fixed_window(out);
  add_adaptive(out);
  add_fractional(out);
  add_max_unpool(out);
}

}  // namespace ra::probes
