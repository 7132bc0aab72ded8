// SPDX-License-Identifier: Apache-2.0
// Reductions, counts, selections and scans whose result depends on an order the kernel does not
// fix: histc and weighted bincount (atomic adds into a few bins), median and kthvalue along a dim
// (which of several tied elements' index is returned), cumsum (a parallel scan), and on the CPU
// the full float sum and dot, whose partial sums follow the intra-op thread count.
//
// Why these forms trigger. Bins: on CUDA 4Mi elements fall into 64 bins, so each bin takes
// partial counts from thousands of blocks through global atomics; weighted counts are float sums
// in that arrival order (plain counts are integers, exact in any order: a control; histc counts
// are float but integer-valued, so they are exact too below 2^24, and the probe mostly shows
// that histc raises under the deterministic setting). Ties: median and kthvalue run over rows of
// values drawn from {0, 1, 2, 3}, so the selected value occurs about 256 times per row of 1Ki,
// and the CUDA kernel lets every thread that finds a tie store its index: the last store wins,
// 8Ki rows make a different winner in at least one row practically certain. Scans: a 1-D cumsum
// of 16Mi floats is one device-wide scan whose tiles combine predecessors' partial sums in
// whatever state the look-back finds them. Threads: a CPU full reduction splits its input into
// one chunk per thread (grain 32Ki elements), each summed in its own cascade, then combined, so
// the rounding follows the thread count; measured here, 16 rows of 64Ki floats give 12 to 14
// differing row sums of 16 between 1 and 2..16 threads, and 14 to 16 of 16 row dots differ (BLAS
// splits too), while sum along a dim (one output per thread) did not change: the control.
#include "probes/registry.h"

#include <ATen/Functions.h>

#include <vector>

namespace ra::probes {
namespace {

constexpr const char* kReductionsFamily = "reductions";

int64_t pick(const ProbeContext& ctx, int64_t cpu, int64_t cuda) { return ctx.cuda() ? cuda : cpu; }
int64_t bin_inputs(const ProbeContext& ctx) { return pick(ctx, 1 << 16, 1 << 22); }
int64_t scan_length(const ProbeContext& ctx) { return pick(ctx, 1 << 16, 1 << 24); }

void histc(ProbeContext& ctx) { ctx.record("output", at::histc(ctx.randn({bin_inputs(ctx)}), 64, -3, 3)); }

void bincount_weights(ProbeContext& ctx) {
  const at::Tensor values = ctx.randint(0, 64, {bin_inputs(ctx)});
  ctx.record("output", at::bincount(values, ctx.randn({bin_inputs(ctx)})));
}

void bincount_unweighted(ProbeContext& ctx) {
  ctx.record("output", at::bincount(ctx.randint(0, 64, {bin_inputs(ctx)})));
}

// Rows of 1Ki small integers stored as float32: the selected value has hundreds of ties per row.
at::Tensor tied_rows(ProbeContext& ctx) { return ctx.randint(0, 4, {pick(ctx, 64, 8192), 1024}).to(at::kFloat); }

void median_indices(ProbeContext& ctx) {
  const auto [values, indices] = at::median(tied_rows(ctx), 1);
  ctx.record("values", values);
  ctx.record("indices", indices);
}

void kthvalue_indices(ProbeContext& ctx) {
  const auto [values, indices] = at::kthvalue(tied_rows(ctx), 300, 1);
  ctx.record("values", values);
  ctx.record("indices", indices);
}

void cumsum_float(ProbeContext& ctx) { ctx.record("output", at::cumsum(ctx.randn({scan_length(ctx)}), 0)); }

void cumsum_int(ProbeContext& ctx) {
  ctx.record("output", at::cumsum(ctx.randint(-1000, 1000, {scan_length(ctx)}), 0));
}

// Independent full reductions, one per row: a row sum split between threads differs with
// probability about 3/4 and a row dot almost always, so 16 sums or 8 dots change between thread
// counts practically surely (the random inputs are most of the probe's few milliseconds).
constexpr int64_t kSumRows = 16, kDotRows = 8, kRowLength = 1 << 16;

void sum_rows_whole(ProbeContext& ctx) {
  const at::Tensor x = ctx.randn({kSumRows, kRowLength});
  std::vector<at::Tensor> sums;
  for (int64_t r = 0; r < kSumRows; ++r) sums.push_back(at::sum(x[r]));
  ctx.record("sums", at::stack(sums));
}

void dot_rows(ProbeContext& ctx) {
  const at::Tensor x = ctx.randn({kDotRows, kRowLength}), y = ctx.randn({kDotRows, kRowLength});
  std::vector<at::Tensor> dots;
  for (int64_t r = 0; r < kDotRows; ++r) dots.push_back(at::dot(x[r], y[r]));
  ctx.record("dots", at::stack(dots));
}

// LayerNorm's backward on the CPU sums the weight and bias gradients over rows in per-thread
// buffers, then adds the buffers: the rounding follows the thread count (a transformer layer's
// gradients part there first between 1 and 2 threads). Measured with torch 2.11 on 2 cores: 60 of
// 64 weight and 63 of 64 bias gradients differ between 1 and 2 threads.
void layer_norm_backward(ProbeContext& ctx) {
  const at::Tensor x = ctx.leaf({1024, 64});
  const at::Tensor w = ctx.leaf({64}), b = ctx.leaf({64});
  ctx.backward(at::layer_norm(x, {64}, w, b), {{"input", x}, {"weight", w}, {"bias", b}});
}
void sum_along_dims(ProbeContext& ctx) {
  const at::Tensor x = ctx.randn({kSumRows, kRowLength});
  ctx.record("sum_dim1", at::sum(x, 1));
  ctx.record("sum_dim0", at::sum(x, 0));
}

}  // namespace

void register_reductions(ProbeList& out) {
  const auto add = [&out](ProbeInfo info, ProbeFn fn) { out.push_back(make_probe(std::move(info), std::move(fn))); };
  add({.name = "histc",
       .family = kReductionsFamily,
       .op = "aten::histc",
       .kb = "histc.cuda",
       .form = "float32 N(0,1), 4Mi (CPU 64Ki) elements into 64 bins over [-3, 3]"},
      histc);
  add({.name = "bincount.weights",
       .family = kReductionsFamily,
       .op = "aten::bincount",
       .kb = "bincount.weights.cuda",
       .form = "4Mi (CPU 64Ki) int64 values in [0, 64) with float32 N(0,1) weights"},
      bincount_weights);
  add({.name = "bincount.unweighted-control",
       .family = kReductionsFamily,
       .op = "aten::bincount",
       .kb = "",
       .role = Role::Control,
       .form = "4Mi (CPU 64Ki) int64 values in [0, 64), no weights: integer counts"},
      bincount_unweighted);
  add({.name = "median.indices",
       .family = kReductionsFamily,
       .op = "aten::median",
       .kb = "median.indices.cuda",
       .form = "float32 8Ki (CPU 64) rows of 1Ki values in {0..3}, median along dim 1 with indices"},
      median_indices);
  add({.name = "kthvalue.indices",
       .family = kReductionsFamily,
       .op = "aten::kthvalue",
       .kb = "",
       .form = "float32 8Ki (CPU 64) rows of 1Ki values in {0..3}, k = 300 along dim 1 with indices"},
      kthvalue_indices);
  add({.name = "cumsum",
       .family = kReductionsFamily,
       .op = "aten::cumsum",
       .kb = "cumsum.cuda",
       .form = "float32 N(0,1), 1-D, 16Mi (CPU 64Ki) elements: one device-wide scan"},
      cumsum_float);
  add({.name = "cumsum.int-control",
       .family = kReductionsFamily,
       .op = "aten::cumsum",
       .kb = "",
       .role = Role::Control,
       .form = "int64 in [-1000, 1000), 1-D, 16Mi (CPU 64Ki) elements: exact in any order"},
      cumsum_int);
  // On the CPU only: a CUDA reduction's tree does not depend on the host's thread count.
  add({.name = "sum.threads",
       .family = kReductionsFamily,
       .op = "aten::sum",
       .cuda = false,
       .kb = "cpu.reduction.threads",
       .form = "float32 N(0,1), 16 full sums of 64Ki contiguous elements each"},
      sum_rows_whole);
  add({.name = "dot.threads",
       .family = kReductionsFamily,
       .op = "aten::dot",
       .cuda = false,
       .kb = "cpu.reduction.threads",
       .form = "float32 N(0,1), 8 dot products of 64Ki-element vectors"},
      dot_rows);
  add({.name = "layer_norm.backward.threads",
       .family = kReductionsFamily,
       .op = "aten::layer_norm",
       .cuda = false,
       .direction = Direction::Backward,
       .kb = "layer_norm.backward.threads.cpu",
       .form = "float32 N(0,1) 1024x64 normalised over 64 features; gradients of input, weight and bias"},
      layer_norm_backward);
  add({.name = "sum.dim.threads-control",
       .family = kReductionsFamily,
       .op = "aten::sum",
       .cuda = false,
       .kb = "",
       .role = Role::Control,
       .form = "float32 N(0,1) 16x64Ki, sum along dim 1 and along dim 0"},
      sum_along_dims);
}

}  // namespace ra::probes
