// SPDX-License-Identifier: Apache-2.0
// Embedding lookups and bags, backward: the gradient of the weight table is a scatter-add of the
// upstream gradient rows into the rows that were looked up, so a token that appears many times
// collects many contributions, the classic place for order-dependent float sums.
//
// What each form exercises on CUDA. The dense embedding backward sorts the indices and sums each
// run of equal indices in segments (a fixed order), except for small batches (at most 3072
// indices), which take a warp-per-feature kernel instead; neither is listed as nondeterministic,
// so both are measured here (a long and a short index list) rather than assumed. embedding_bag in
// sum and mean modes reuses the sorted path. In max mode the backward adds each bag's gradient to
// the row that was the maximum, per feature, with atomics: a small vocabulary (32 rows, 16 per
// bag) makes the same few rows win in thousands of bags, so every weight element that wins
// collects thousands of colliding atomic adds and the order shows in practically every run.
//
// Vocabularies stay small (32 to 64 rows) for the same reason on every form: duplicates are what
// a reordering needs. CPU sizes are 16 to 32 times smaller and run in about a millisecond.
#include "probes/registry.h"

#include <ATen/Functions.h>

namespace ra::probes {
namespace {

constexpr const char* kEmbeddingFamily = "embedding";

// A lookup of `n` indices (CPU: `n / 16`) from a 64-row table, as [n / 64, 64] token ids.
ProbeFn embedding(int64_t n) {
  return [n](ProbeContext& ctx) {
    const int64_t vocab = 64, dim = ctx.cuda() ? 64 : 16, count = ctx.cuda() ? n : n / 16;
    const at::Tensor weight = ctx.leaf({vocab, dim});
    const at::Tensor y = at::embedding(weight, ctx.randint(0, vocab, {count / 64, 64}));
    ctx.record("output", y);
    ctx.backward(y, {{"weight", weight}});
  };
}

// Bags of 16 indices from a `vocab`-row table; embedding_bag's mode: 0 sum, 1 mean, 2 max.
ProbeFn embedding_bag(int64_t mode, int64_t vocab) {
  return [mode, vocab](ProbeContext& ctx) {
    const int64_t bags = ctx.cuda() ? 8192 : 256, per_bag = 16, dim = ctx.cuda() ? 64 : 16;
    const at::Tensor weight = ctx.leaf({vocab, dim});
    const at::Tensor indices = ctx.randint(0, vocab, {bags * per_bag});
    const at::Tensor offsets = at::arange(0, bags * per_bag, per_bag, at::device(ctx.device()).dtype(at::kLong));
    const at::Tensor y = std::get<0>(at::embedding_bag(weight, indices, offsets, false, mode));
    ctx.record("output", y);
    ctx.backward(y, {{"weight", weight}});
  };
}

}  // namespace

void register_embedding(ProbeList& out) {
  const auto add = [&out](ProbeInfo info, ProbeFn fn) { out.push_back(make_probe(std::move(info), std::move(fn))); };
  const Direction backward = Direction::Backward;
  add({.name = "embedding.backward",
       .family = kEmbeddingFamily,
       .op = "aten::embedding",
       .direction = backward,
       .kb = "embedding.backward.cuda",
       .form = "float32 table 64x64 (CPU 64x16), 64Ki (CPU 4Ki) indices: CUDA's sorted path; gradient of weight"},
      embedding(65536));
  add({.name = "embedding.backward.few-indices",
       .family = kEmbeddingFamily,
       .op = "aten::embedding",
       .direction = backward,
       .kb = "",
       .form = "float32 table 64x64 (CPU 64x16), 2Ki (CPU 128) indices: CUDA's small-batch kernel; gradient of weight"},
      embedding(2048));
  add({.name = "embedding_bag.sum.backward",
       .family = kEmbeddingFamily,
       .op = "aten::embedding_bag",
       .direction = backward,
       .kb = "",
       .form = "float32 table 64 rows, 8Ki (CPU 256) bags of 16, mode sum; gradient of weight"},
      embedding_bag(0, 64));
  add({.name = "embedding_bag.mean.backward",
       .family = kEmbeddingFamily,
       .op = "aten::embedding_bag",
       .direction = backward,
       .kb = "",
       .form = "float32 table 64 rows, 8Ki (CPU 256) bags of 16, mode mean; gradient of weight"},
      embedding_bag(1, 64));
  add({.name = "embedding_bag.max.backward",
       .family = kEmbeddingFamily,
       .op = "aten::embedding_bag",
       .direction = backward,
       .kb = "embedding_bag.max.backward.cuda",
       .form =
           "float32 table 32 rows, 8Ki (CPU 256) bags of 16, mode max: a few rows win most bags; gradient of weight"},
      embedding_bag(2, 32));
}

}  // namespace ra::probes
