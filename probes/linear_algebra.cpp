// SPDX-License-Identifier: Apache-2.0
// Linear algebra: dense float32 matrix products under the library settings that change their
// results (cuBLAS workspace, TF32, MKL's conditional numerical reproducibility) and the sparse-dense
// batched product, forward and backward.
//
// Dense GEMMs are reproducible run to run for a fixed library, GPU and setting; what moves them is
// the algorithm the library picks, and that depends on the settings the audit varies:
//   * cuBLAS chooses split-K kernels (partial sums over slices of K, then a reduction) for a long K
//     and a small M x N, and which split it can use depends on the workspace CUBLAS_WORKSPACE_CONFIG
//     grants: 32 x 262144 x 32 is such a shape;
//   * with tf32.cublas on, float32 GEMMs round their inputs to 10-bit mantissas on tensor cores: a
//     1024-cubed product changes in nearly every element;
//   * MKL picks a code path for the CPU it runs on (SSE, AVX2, AVX-512) unless MKL_CBWR pins one:
//     odd sizes (129 x 511 x 131) exercise the vector tails, in float32 and float64.
// The sparse (COO) x dense bmm on CUDA runs cuSPARSE's SpMM, whose default COO algorithm is
// nondeterministic (deterministic mode selects another); its backward for the dense operand is the
// transposed sparse product. 5% density over a 1024-wide K gives ~50 products per output element.
#include "probes/registry.h"

#include <ATen/Functions.h>

namespace ra::probes {
namespace {

ProbeInfo info(std::string name, std::string op, bool cpu, bool cuda, Direction direction, std::string kb,
               std::string form) {
  return {.name = std::move(name),
          .family = "linear-algebra",
          .op = std::move(op),
          .cpu = cpu,
          .cuda = cuda,
          .direction = direction,
          .kb = std::move(kb),
          .form = std::move(form)};
}

void add_dense(ProbeList& out) {
  out.push_back(
      make_probe(info("matmul.split-k", "aten::mm", false, true, Direction::Forward, "matmul.cublas_workspace.cuda",
                      "float32 (32 x 262144) @ (262144 x 32): long K, small output, split-K candidates"),
                 [](ProbeContext& ctx) {
                   const int64_t k = int64_t{1} << 18;
                   const at::Tensor a = ctx.randn({32, k});
                   const at::Tensor b = ctx.randn({k, 32});
                   ctx.record("output", at::mm(a, b));
                 }));
  out.push_back(make_probe(info("matmul.tf32", "aten::mm", false, true, Direction::Forward, "tf32.cuda",
                                "float32 (1024 x 1024) @ (1024 x 1024); compare tf32.cublas on and off"),
                           [](ProbeContext& ctx) {
                             const at::Tensor a = ctx.randn({1024, 1024});
                             const at::Tensor b = ctx.randn({1024, 1024});
                             ctx.record("output", at::mm(a, b));
                           }));
  out.push_back(make_probe(info("matmul.mkl", "aten::mm", true, false, Direction::Forward, "mkl.cbwr.cpu",
                                "(129 x 511) @ (511 x 131) in float32 and in float64 on the CPU; compare MKL_CBWR"),
                           [](ProbeContext& ctx) {
                             const at::Tensor a = ctx.randn({129, 511});
                             const at::Tensor b = ctx.randn({511, 131});
                             ctx.record("float32", at::mm(a, b));
                             ctx.record("float64", at::mm(a.to(at::kDouble), b.to(at::kDouble)));
                           }));
}

// B x M x K sparse COO (density 5%) and B x K x N dense.
struct BmmShape {
  int64_t b, m, k, n;
};
BmmShape bmm_shape(const ProbeContext& ctx) { return ctx.cuda() ? BmmShape{8, 512, 1024, 64} : BmmShape{2, 16, 32, 8}; }

at::Tensor sparse_operand(ProbeContext& ctx, const BmmShape& s) {
  const at::Tensor values = ctx.randn({s.b, s.m, s.k});
  const at::Tensor keep = at::lt(ctx.rand({s.b, s.m, s.k}), 0.05);
  return values.mul(keep).to_sparse();
}

void add_sparse(ProbeList& out) {
  out.push_back(
      make_probe(info("bmm.sparse-dense", "aten::bmm", true, true, Direction::Forward, "bmm.sparse_dense.cuda",
                      "float32 sparse COO (8 x 512 x 1024, 5% dense) @ dense (8 x 1024 x 64) on CUDA"),
                 [](ProbeContext& ctx) {
                   const BmmShape s = bmm_shape(ctx);
                   const at::Tensor sparse = sparse_operand(ctx, s);
                   ctx.record("output", at::bmm(sparse, ctx.randn({s.b, s.k, s.n})));
                 }));
  out.push_back(make_probe(
      info("bmm.sparse-dense.backward", "aten::bmm", true, true, Direction::Backward, "bmm.sparse_dense.cuda",
           "as bmm.sparse-dense; gradient of the dense operand (a transposed sparse bmm)"),
      [](ProbeContext& ctx) {
        const BmmShape s = bmm_shape(ctx);
        const at::Tensor sparse = sparse_operand(ctx, s);
        const at::Tensor dense = ctx.leaf({s.b, s.k, s.n});
        const at::Tensor y = at::bmm(sparse, dense);
        ctx.record("output", y);
        ctx.backward(y, {{"dense", dense}});
      }));
}

}  // namespace

void register_linear_algebra(ProbeList& out) {
  add_dense(out);
  add_sparse(out);
}

}  // namespace ra::probes
