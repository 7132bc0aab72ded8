// SPDX-License-Identifier: Apache-2.0
// Convolutions and transposed convolutions, 1d to 3d, forward and backward (input and weight
// gradients), plus the two cuDNN sources that use_deterministic_algorithms does not cover: the
// algorithm picked by cudnn.benchmark in each fresh process, and TF32.
//
// On CUDA the nondeterminism lives in cuDNN's backward-weight (and some backward-data) algorithms,
// which accumulate partial sums with atomics: a large batch over a small filter means many
// partial sums per weight element, so a reordering shows in the low bits of nearly every run.
#include "probes/registry.h"

#include <ATen/Functions.h>

namespace ra::probes {
namespace {

struct ConvShape {
  int dims;  // 1, 2 or 3
  bool transposed;
  std::vector<int64_t> cpu_input, cuda_input;  // N, C, spatial...
  int64_t out_channels;
  int64_t kernel;
};

std::string conv_name(const ConvShape& s) {
  return std::string(s.transposed ? "conv_transpose" : "conv") + std::to_string(s.dims) + "d";
}

at::Tensor convolve(const ConvShape& s, const at::Tensor& x, const at::Tensor& w) {
  switch (s.dims) {
    case 1:
      return s.transposed ? at::conv_transpose1d(x, w) : at::conv1d(x, w);
    case 2:
      return s.transposed ? at::conv_transpose2d(x, w) : at::conv2d(x, w);
    default:
      return s.transposed ? at::conv_transpose3d(x, w) : at::conv3d(x, w);
  }
}

std::vector<int64_t> weight_shape(const ConvShape& s, int64_t in_channels) {
  // conv: out, in, k...; transposed conv: in, out, k...
  std::vector<int64_t> w = s.transposed ? std::vector<int64_t>{in_channels, s.out_channels}
                                        : std::vector<int64_t>{s.out_channels, in_channels};
  for (int i = 0; i < s.dims; ++i) w.push_back(s.kernel);
  return w;
}

void add_conv_probes(ProbeList& out, const ConvShape& s) {
  const std::string name = conv_name(s);
  const std::string kb = name + ".cuda";
  const std::string op = "aten::" + name;
  auto run = [s](ProbeContext& ctx, bool backward) {
    const auto& input = ctx.cuda() ? s.cuda_input : s.cpu_input;
    at::Tensor x = backward ? ctx.leaf(input) : ctx.randn(input);
    at::Tensor w = ctx.randn(weight_shape(s, input[1])).mul_(0.1);
    if (backward) w.requires_grad_(true);
    const at::Tensor y = convolve(s, x, w);
    ctx.record("output", y);
    if (backward) ctx.backward(y, {{"input", x}, {"weight", w}});
  };
  out.push_back(make_probe({name + ".forward", "convolution", op, true, true, Direction::Forward, kb, Role::Probe,
                            "float32, batch of many small maps, no bias"},
                           [run](ProbeContext& ctx) { run(ctx, false); }));
  out.push_back(make_probe({name + ".backward", "convolution", op, true, true, Direction::Backward, kb, Role::Probe,
                            "float32; gradients of input and weight from a random upstream gradient"},
                           [run](ProbeContext& ctx) { run(ctx, true); }));
}

}  // namespace

void register_convolution(ProbeList& out) {
  add_conv_probes(out, {1, false, {16, 8, 256}, {256, 32, 4096}, 16, 5});
  add_conv_probes(out, {2, false, {8, 8, 32, 32}, {128, 32, 64, 64}, 32, 3});
  add_conv_probes(out, {3, false, {4, 4, 8, 16, 16}, {32, 16, 16, 32, 32}, 16, 3});
  add_conv_probes(out, {1, true, {16, 8, 256}, {256, 32, 4096}, 16, 5});
  add_conv_probes(out, {2, true, {8, 8, 32, 32}, {128, 32, 64, 64}, 32, 3});
  add_conv_probes(out, {3, true, {4, 4, 8, 16, 16}, {32, 16, 16, 32, 32}, 16, 3});

  // cudnn.benchmark: each fresh process times the candidate algorithms and keeps the fastest; two
  // processes may keep different ones, whose float sums differ. A shape with many candidates.
  out.push_back(make_probe({"conv2d.algorithm-choice", "convolution", "aten::conv2d", false, true, Direction::Backward,
                            "cudnn.benchmark.cuda", Role::Probe,
                            "float32 64x64x56x56 3x3, forward and backward under cuDNN's chosen algorithms"},
                           [](ProbeContext& ctx) {
                             at::Tensor x = ctx.leaf({64, 64, 56, 56});
                             at::Tensor w = ctx.randn({64, 64, 3, 3}).mul_(0.05).requires_grad_(true);
                             const at::Tensor y = at::conv2d(x, w, {}, 1, 1);
                             ctx.record("output", y);
                             ctx.backward(y, {{"input", x}, {"weight", w}});
                           }));
  // On the CPU only: a convolution over maps of a pixel or a few (a squeeze-excitation block's 1x1
  // convolutions on pooled features, as in MobileNetV3) takes ATen's im2col + GEMM path, whose sums
  // follow the intra-op thread count; measured with torch 2.11 on 2 threads against 1, 108 of the
  // 128 outputs differ (the 8x8x32x32 3x3 maps of conv2d.forward do not change: MKL-DNN's path).
  out.push_back(make_probe({"conv2d.threads", "convolution", "aten::conv2d", true, false, Direction::Forward,
                            "conv2d.threads.cpu", Role::Probe, "float32 8x64x1x1, 1x1 kernel to 16 channels with bias"},
                           [](ProbeContext& ctx) {
                             const at::Tensor x = ctx.randn({8, 64, 1, 1});
                             const at::Tensor w = ctx.randn({16, 64, 1, 1});
                             ctx.record("output", at::conv2d(x, w, ctx.randn({16})));
                           }));
  // TF32: cuDNN may use TF32 tensor cores for float32 convolutions (on by default in PyTorch);
  // results are stable per setting but differ between settings: a configuration dependence.
  out.push_back(make_probe({"conv2d.tf32", "convolution", "aten::conv2d", false, true, Direction::Forward, "tf32.cuda",
                            Role::Probe, "float32 32x64x32x32 3x3 forward; compare tf32.cudnn on and off"},
                           [](ProbeContext& ctx) {
                             const at::Tensor x = ctx.randn({32, 64, 32, 32});
                             const at::Tensor w = ctx.randn({64, 64, 3, 3});
                             ctx.record("output", at::conv2d(x, w, {}, 1, 1));
                           }));
}

}  // namespace ra::probes
