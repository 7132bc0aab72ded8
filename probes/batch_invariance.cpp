// SPDX-License-Identifier: Apache-2.0
// Batch invariance: does a row's result depend on the batch it shares? Not run-to-run noise: the
// same input row gives other bits alone than inside a batch of M, because the library picks its
// kernel (blocking, split of the reduction, vector path) by the problem's size, and M is part of
// it. A user comparing a single request with a batched one, or batches of two sizes, sees it.
//
// Each probe draws one batch of the largest size tried (seeded, like every probe's inputs), then
// runs the op on its prefix of M rows for every M of a fixed list, in one process, and records
// the anchor row's slice of each result as "row@M=<M>" (row 0: the first matrix of a bmm, the
// first image of a conv2d). The rows are tiny, so recording costs nothing beside the ops. The
// front (audit/probes/batch_classes.h) groups the sizes whose rows have the same digest into
// classes, "{1,2,3} | {4…257}": one class means invariant over every size tried. Run to run,
// every recorded row is compared as for any probe.
//
// The sizes cross the usual kernel thresholds: 1…9 (vector tails, small-M paths), then powers of
// two and their neighbours; on CUDA up to 1025, where cuBLAS's and cuDNN's heuristics change
// kernels. `batch.detect-control` adds one ulp to the row at every M ≥ 2 and so must split into
// {1} | {2…}: it shows that the comparison sees a difference of one ulp on this device.
//
// Measured here (CPU, torch 2.11, the wheel's MKL and oneDNN): mm, addmm and linear split at
// M = 4 (linear also at 2), conv2d at 2; layer_norm, rms_norm, softmax, log_softmax, sum, mean,
// bmm and SDPA stay one class up to 257. This depends on the CPU and the library: the tests
// measure it again in Python instead of trusting these lines.
#include "probes/batch_invariance.h"

#include "probes/registry.h"

#include <ATen/Functions.h>
#include <fmt/format.h>

#include <limits>

namespace ra::probes {

std::vector<int64_t> batch_invariance_sizes(bool cuda) {
  std::vector<int64_t> sizes = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 31, 32, 33, 63, 64, 65, 128, 257};
  if (cuda) sizes.insert(sizes.end(), {511, 512, 513, 1024, 1025});
  return sizes;
}

std::string batch_row_name(int64_t m) { return fmt::format("row@M={}", m); }

// Named, not anonymous: the family files are compiled as one unity source (ra_unity).
namespace batch_detail {

constexpr const char* kFamily = "batch-invariance";

// Features: small on the CPU (the tests repeat these shapes in Python), wider on CUDA where the
// libraries' size heuristics only start to matter at hundreds of columns.
struct Dims {
  int64_t k, n;
};
Dims dims(const ProbeContext& ctx) { return ctx.cuda() ? Dims{1024, 1024} : Dims{64, 48}; }

int64_t largest(const ProbeContext& ctx) { return batch_invariance_sizes(ctx.cuda()).back(); }

// Runs op on the first M rows of the batch for every size and records row 0 of each result.
using BatchOp = std::function<at::Tensor(int64_t m)>;
void sweep(ProbeContext& ctx, const BatchOp& op) {
  for (const int64_t m : batch_invariance_sizes(ctx.cuda())) ctx.record(batch_row_name(m), op(m).narrow(0, 0, 1));
}

void mm(ProbeContext& ctx) {
  const Dims d = dims(ctx);
  const at::Tensor a = ctx.randn({largest(ctx), d.k}), b = ctx.randn({d.k, d.n});
  sweep(ctx, [&](int64_t m) { return at::mm(a.narrow(0, 0, m), b); });
}

void addmm(ProbeContext& ctx) {
  const Dims d = dims(ctx);
  const at::Tensor a = ctx.randn({largest(ctx), d.k}), b = ctx.randn({d.k, d.n}), bias = ctx.randn({d.n});
  sweep(ctx, [&](int64_t m) { return at::addmm(bias, a.narrow(0, 0, m), b); });
}

void linear(ProbeContext& ctx) {
  const Dims d = dims(ctx);
  const at::Tensor x = ctx.randn({largest(ctx), d.k}), w = ctx.randn({d.n, d.k}), bias = ctx.randn({d.n});
  sweep(ctx, [&](int64_t m) { return at::linear(x.narrow(0, 0, m), w, bias); });
}

void bmm(ProbeContext& ctx) {
  const int64_t s = ctx.cuda() ? 64 : 8;
  const at::Tensor x = ctx.randn({largest(ctx), s, 2 * s}), y = ctx.randn({largest(ctx), 2 * s, s + 4});
  sweep(ctx, [&](int64_t m) { return at::bmm(x.narrow(0, 0, m), y.narrow(0, 0, m)); });
}

void conv2d(ProbeContext& ctx) {
  const int64_t c = ctx.cuda() ? 16 : 3, side = ctx.cuda() ? 32 : 8, out = ctx.cuda() ? 32 : 8;
  const at::Tensor x = ctx.randn({largest(ctx), c, side, side}), w = ctx.randn({out, c, 3, 3});
  sweep(ctx, [&](int64_t m) { return at::conv2d(x.narrow(0, 0, m), w); });
}

// The row-wise ops: one (M x k) batch, reduced or normalised along the features.
using RowOp = std::function<at::Tensor(const at::Tensor&)>;
ProbeFn rowwise(RowOp op) {
  return [op = std::move(op)](ProbeContext& ctx) {
    const at::Tensor x = ctx.randn({largest(ctx), dims(ctx).k});
    sweep(ctx, [&](int64_t m) { return op(x.narrow(0, 0, m)); });
  };
}

void sdpa(ProbeContext& ctx) {
  const int64_t heads = ctx.cuda() ? 4 : 2, length = ctx.cuda() ? 64 : 16, width = ctx.cuda() ? 32 : 8;
  const at::Tensor q = ctx.randn({largest(ctx), heads, length, width});
  const at::Tensor k = ctx.randn({largest(ctx), heads, length, width}),
                   v = ctx.randn({largest(ctx), heads, length, width});
  sweep(ctx, [&](int64_t m) {
    return at::scaled_dot_product_attention(q.narrow(0, 0, m), k.narrow(0, 0, m), v.narrow(0, 0, m));
  });
}

// One ulp more at every M >= 2: the comparison must see it ({1} | {2…}).
void detect_control(ProbeContext& ctx) {
  const at::Tensor x = ctx.randn({largest(ctx), dims(ctx).k});
  sweep(ctx, [&](int64_t m) {
    const at::Tensor rows = x.narrow(0, 0, m).clone();
    return m == 1 ? rows : at::nextafter(rows, at::full_like(rows, std::numeric_limits<float>::infinity()));
  });
}

}  // namespace batch_detail

void register_batch_invariance(ProbeList& out) {
  namespace bd = batch_detail;
  const auto add = [&out](std::string name, std::string op, std::string kb, std::string form, ProbeFn fn,
                          Role role = Role::Probe) {
    out.push_back(make_probe({.name = std::move(name),
                              .family = bd::kFamily,
                              .op = std::move(op),
                              .kb = std::move(kb),
                              .role = role,
                              .form = std::move(form)},
                             std::move(fn)));
  };
  const std::string sizes = "M in 1..9, 16, 17, 31..33, 63..65, 128, 257 (CUDA also 511..513, 1024, 1025)";
  const std::string rows = "float32 rows of 64 (CUDA 1024) features; row 0 of each M: " + sizes;
  add("batch.mm", "aten::mm", "mm.batch.cpu",
      "(M x 64) @ (64 x 48), CUDA (M x 1024) @ (1024 x 1024); row 0 of each " + sizes, bd::mm);
  add("batch.addmm", "aten::addmm", "addmm.batch.cpu",
      "bias + (M x 64) @ (64 x 48), CUDA 1024 wide; row 0 of each " + sizes, bd::addmm);
  add("batch.linear", "aten::linear", "linear.batch.cpu",
      "linear 64 -> 48 features with bias, CUDA 1024 -> 1024; row 0 of each " + sizes, bd::linear);
  add("batch.bmm", "aten::bmm", "", "(M x 8 x 16) @ (M x 16 x 12), CUDA 64 wide; matrix 0 of each " + sizes, bd::bmm);
  add("batch.conv2d", "aten::conv2d", "conv2d.batch.cpu",
      "3 -> 8 channels, 3x3, 8x8 images (CUDA 16 -> 32 channels, 32x32); image 0 of each " + sizes, bd::conv2d);
  add("batch.layer_norm", "aten::layer_norm", "", "layer_norm over the features, " + rows,
      bd::rowwise([](const at::Tensor& x) { return at::layer_norm(x, {x.size(1)}); }));
  add("batch.rms_norm", "aten::rms_norm", "", "rms_norm over the features, " + rows,
      bd::rowwise([](const at::Tensor& x) { return at::rms_norm(x, {x.size(1)}); }));
  add("batch.softmax", "aten::softmax", "", "softmax over the features, " + rows,
      bd::rowwise([](const at::Tensor& x) { return at::softmax(x, -1); }));
  add("batch.log_softmax", "aten::log_softmax", "", "log_softmax over the features, " + rows,
      bd::rowwise([](const at::Tensor& x) { return at::log_softmax(x, -1); }));
  add("batch.sum", "aten::sum", "", "sum over the features, " + rows,
      bd::rowwise([](const at::Tensor& x) { return at::sum(x, -1); }));
  add("batch.mean", "aten::mean", "", "mean over the features, " + rows,
      bd::rowwise([](const at::Tensor& x) { return at::mean(x, -1); }));
  add("batch.sdpa", "aten::scaled_dot_product_attention", "",
      "(M x 2 heads x 16 x 8) q, k, v, CUDA (M x 4 x 64 x 32); batch element 0 of each " + sizes, bd::sdpa);
  add("batch.detect-control", "aten::nextafter", "",
      "the rows themselves, one ulp up at every M >= 2: must split {1} | {2...}, " + rows, bd::detect_control,
      Role::Control);
}

}  // namespace ra::probes
