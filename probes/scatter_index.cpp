// SPDX-License-Identifier: Apache-2.0
// Scatter and indexing: ops that write many source elements into a few target slots through an
// index tensor (index_add, index_put, put_, scatter_add, scatter, scatter_reduce, index_copy), and
// the backward passes that do so in disguise (gather, index_select, x[i, j], repeat_interleave:
// their gradients are scatter-adds into the input).
//
// Two mechanisms make them diverge. With accumulation, CUDA kernels add colliding contributions
// with atomics, in whatever order the threads arrive: float addition is not associative, so the
// low bits of each sum depend on that order. Without accumulation (index_put, put_, scatter,
// index_copy), duplicate indices are a write race: the last writer wins, and which one is last is
// timing. Both need collisions, so every probe draws its indices from a small target: on CUDA
// each target element receives hundreds to a thousand contributions (64 rows x 64 columns fed by
// 64Ki source rows: 1Ki each; 4Ki flat slots fed by 1Mi updates: 256 each), issued by threads of
// many blocks at once, which makes a reordering in at least one of thousands of outputs
// practically certain in every run. On the CPU the forms are smaller and spread wider: a few
// contributions per slot (32Ki source rows onto 8Ki rows, 128Ki updates onto 256x256), a few
// milliseconds each. There the race is between the two halves of a parallel loop, and what
// decides a slot is which thread touches it last; with a few contributions per slot, spread over
// the whole loop, some slot's order changes with any change in the threads' relative timing. With
// a hundred or more per slot, only the last moments of the loop mattered, and a run on a busy
// machine (one thread finishing well before the other) gave the same bits every time:
// index_put.accumulate showed `diverged 1/2` in one suite run and `reproducible` in the next. In
// this form each racy probe diverged in 9 of 9 comparisons, idle and with both cores busy.
//
// Controls run the same ops where the order cannot matter: a permutation index (one contribution
// per slot, a single rounding), unique indices for index_put, an integer scatter_add (integer
// addition is associative, so atomics commute exactly) and scatter_reduce amax (max is exact).
#include "probes/registry.h"

#include <ATen/Functions.h>

namespace ra::probes {
namespace {

constexpr const char* kScatterIndexFamily = "scatter-index";
using IndexList = c10::List<std::optional<at::Tensor>>;

// Row form: `updates` source rows of `width` columns land on `rows` target rows along dim 0.
struct RowForm {
  int64_t rows, width, updates;
};
RowForm row_form(const ProbeContext& ctx) { return ctx.cuda() ? RowForm{64, 64, 65536} : RowForm{8192, 16, 32768}; }

// Flat form: `updates` scalars land on the elements of a side x side target.
struct FlatForm {
  int64_t side, updates;
};
FlatForm flat_form(const ProbeContext& ctx) { return ctx.cuda() ? FlatForm{64, 1 << 20} : FlatForm{256, 131072}; }

void index_add(ProbeContext& ctx) {
  const RowForm f = row_form(ctx);
  const at::Tensor self = ctx.randn({f.rows, f.width});
  const at::Tensor index = ctx.randint(0, f.rows, {f.updates});
  ctx.record("output", at::index_add(self, 0, index, ctx.randn({f.updates, f.width})));
}

void index_add_unique(ProbeContext& ctx) {
  const RowForm f = row_form(ctx);
  const at::Tensor self = ctx.randn({f.rows, f.width});
  ctx.record("output", at::index_add(self, 0, ctx.randperm(f.rows), ctx.randn({f.rows, f.width})));
}

void index_put_accumulate(ProbeContext& ctx) {
  const RowForm f = row_form(ctx);
  const at::Tensor self = ctx.randn({f.rows, f.width});
  const at::Tensor index = ctx.randint(0, f.rows, {f.updates});
  ctx.record("output", at::index_put(self, IndexList{index}, ctx.randn({f.updates, f.width}), true));
}

void index_put_accumulate_unique(ProbeContext& ctx) {
  const RowForm f = row_form(ctx);
  const at::Tensor self = ctx.randn({f.rows, f.width});
  ctx.record("output", at::index_put(self, IndexList{ctx.randperm(f.rows)}, ctx.randn({f.rows, f.width}), true));
}

void index_put_overwrite(ProbeContext& ctx) {
  const FlatForm f = flat_form(ctx);
  const at::Tensor self = ctx.randn({f.side, f.side});
  const at::Tensor i = ctx.randint(0, f.side, {f.updates});
  const at::Tensor j = ctx.randint(0, f.side, {f.updates});
  ctx.record("output", at::index_put(self, IndexList{i, j}, ctx.randn({f.updates}), false));
}

// x[i, j] with a list of index tensors: its backward is index_put_ with accumulate=True.
void getitem_backward(ProbeContext& ctx) {
  const FlatForm f = flat_form(ctx);
  const at::Tensor x = ctx.leaf({f.side, f.side});
  const at::Tensor i = ctx.randint(0, f.side, {f.updates});
  const at::Tensor j = ctx.randint(0, f.side, {f.updates});
  const at::Tensor y = at::index(x, IndexList{i, j});
  ctx.record("output", y);
  ctx.backward(y, {{"input", x}});
}

ProbeFn put(bool accumulate) {
  return [accumulate](ProbeContext& ctx) {
    const FlatForm f = flat_form(ctx);
    const at::Tensor self = ctx.randn({f.side, f.side});
    const at::Tensor index = ctx.randint(0, f.side * f.side, {f.updates});
    ctx.record("output", at::put(self, index, ctx.randn({f.updates}), accumulate));
  };
}

// scatter_add, scatter and scatter_reduce: an [updates, width] source along dim 0, every element
// sent to one of `rows` rows.
void scatter_add(ProbeContext& ctx) {
  const RowForm f = row_form(ctx);
  const at::Tensor self = ctx.randn({f.rows, f.width});
  const at::Tensor index = ctx.randint(0, f.rows, {f.updates, f.width});
  ctx.record("output", at::scatter_add(self, 0, index, ctx.randn({f.updates, f.width})));
}

void scatter_add_unique(ProbeContext& ctx) {
  const RowForm f = row_form(ctx);
  const at::Tensor self = ctx.randn({f.rows, f.width});
  const at::Tensor index = ctx.randperm(f.rows).unsqueeze(1).expand({f.rows, f.width}).contiguous();
  ctx.record("output", at::scatter_add(self, 0, index, ctx.randn({f.rows, f.width})));
}

void scatter_add_int(ProbeContext& ctx) {
  const RowForm f = row_form(ctx);
  const at::Tensor self = ctx.randint(-1000, 1000, {f.rows, f.width});
  const at::Tensor index = ctx.randint(0, f.rows, {f.updates, f.width});
  ctx.record("output", at::scatter_add(self, 0, index, ctx.randint(-1000, 1000, {f.updates, f.width})));
}

void scatter_src(ProbeContext& ctx) {
  const RowForm f = row_form(ctx);
  const at::Tensor self = ctx.randn({f.rows, f.width});
  const at::Tensor index = ctx.randint(0, f.rows, {f.updates, f.width});
  ctx.record("output", at::scatter(self, 0, index, ctx.randn({f.updates, f.width})));
}

ProbeFn scatter_reduce(std::string reduce) {
  return [reduce](ProbeContext& ctx) {
    const RowForm f = row_form(ctx);
    at::Tensor self = ctx.randn({f.rows, f.width});
    const at::Tensor index = ctx.randint(0, f.rows, {f.updates, f.width});
    at::Tensor src = ctx.randn({f.updates, f.width});
    if (reduce == "prod") {  // factors near 1: a product of a thousand stays far from 0 and inf
      self.mul_(0.01).add_(1.0);
      src.mul_(0.01).add_(1.0);
    }
    ctx.record("output", at::scatter_reduce(self, 0, index, src, reduce, true));
  };
}

void index_copy(ProbeContext& ctx) {
  const RowForm f = row_form(ctx);
  const at::Tensor self = ctx.randn({f.rows, f.width});
  const at::Tensor index = ctx.randint(0, f.rows, {f.updates});
  ctx.record("output", at::index_copy(self, 0, index, ctx.randn({f.updates, f.width})));
}

void gather_backward(ProbeContext& ctx) {
  const RowForm f = row_form(ctx);
  const at::Tensor x = ctx.leaf({f.rows, f.width});
  const at::Tensor y = at::gather(x, 0, ctx.randint(0, f.rows, {f.updates, f.width}));
  ctx.record("output", y);
  ctx.backward(y, {{"input", x}});
}

void index_select_backward(ProbeContext& ctx) {
  const RowForm f = row_form(ctx);
  const at::Tensor x = ctx.leaf({f.rows, f.width});
  const at::Tensor y = at::index_select(x, 0, ctx.randint(0, f.rows, {f.updates}));
  ctx.record("output", y);
  ctx.backward(y, {{"input", x}});
}

// A tensor of repeats goes through index_select (an integer repeat count is an expand, whose
// backward is a plain reduction). Repeats average updates / rows, so the output has ~updates rows.
void repeat_interleave_backward(ProbeContext& ctx) {
  const RowForm f = row_form(ctx);
  const at::Tensor x = ctx.leaf({f.rows, f.width});
  const at::Tensor repeats = ctx.randint(1, 2 * (f.updates / f.rows), {f.rows});
  const at::Tensor y = at::repeat_interleave(x, repeats, 0);
  ctx.record("output", y);
  ctx.backward(y, {{"input", x}});
}

// The forms the descriptions name: rows added along dim 0, flat elements written, elements scattered.
constexpr const char* kRowForm =
    "float32, dim 0; CUDA 64Ki source rows onto 64x64 (1Ki per element), CPU 32Ki onto 8Ki x 16 (4 per row)";
constexpr const char* kFlatForm =
    "float32; CUDA 1Mi flat updates onto 64x64 (256 per element), CPU 128Ki onto 256x256 (2 per element)";
constexpr const char* kElementwiseForm = "float32 [64Ki, 64] source onto 64 rows (CPU [32Ki, 16] onto 8Ki rows)";

// index_add and index_put, and the gradient of x[i, j] (an index_put that accumulates).
void add_index_add_and_put(ProbeList& out) {
  const auto add = [&out](ProbeInfo info, ProbeFn fn) { out.push_back(make_probe(std::move(info), std::move(fn))); };
  add({.name = "index_add",
       .family = kScatterIndexFamily,
       .op = "aten::index_add",
       .kb = "index_add.cuda",
       .form = std::string(kRowForm) + ", duplicate indices"},
      index_add);
  add({.name = "index_add.unique-control",
       .family = kScatterIndexFamily,
       .op = "aten::index_add",
       .kb = "",
       .role = Role::Control,
       .form = "float32, dim 0, a permutation index: one add per element"},
      index_add_unique);
  add({.name = "index_put.accumulate",
       .family = kScatterIndexFamily,
       .op = "aten::index_put",
       .kb = "index_put.accumulate.cpu",
       .form = std::string(kRowForm) + ", x[idx] += v (accumulate=True), duplicate rows"},
      index_put_accumulate);
  add({.name = "index_put.accumulate.unique-control",
       .family = kScatterIndexFamily,
       .op = "aten::index_put",
       .kb = "",
       .role = Role::Control,
       .form = "float32, accumulate=True, a permutation row index"},
      index_put_accumulate_unique);
  add({.name = "index_put",
       .family = kScatterIndexFamily,
       .op = "aten::index_put",
       .kb = "index_put.no_accumulate",
       .form = std::string(kFlatForm) + ", x[i, j] = v (accumulate=False), duplicate (i, j)"},
      index_put_overwrite);
  add({.name = "getitem.backward",
       .family = kScatterIndexFamily,
       .op = "aten::index",
       .direction = Direction::Backward,
       .kb = "getitem.backward.cpu",
       .form = std::string(kFlatForm) + ", y = x[i, j], duplicate (i, j); gradient of x"},
      getitem_backward);
}

// put_, with and without accumulation.
void add_put(ProbeList& out) {
  const auto add = [&out](ProbeInfo info, ProbeFn fn) { out.push_back(make_probe(std::move(info), std::move(fn))); };
  // accumulate=True has one documentation row per device (a deterministic alternative on the CPU,
  // an error on CUDA), hence one probe per device.
  add({.name = "put.accumulate.cpu",
       .family = kScatterIndexFamily,
       .op = "aten::put",
       .cuda = false,
       .kb = "put.accumulate.cpu",
       .form = "float32 32x32, put_ accumulate=True, 16Ki flat indices with duplicates"},
      put(true));
  add({.name = "put.accumulate.cuda",
       .family = kScatterIndexFamily,
       .op = "aten::put",
       .cpu = false,
       .kb = "put.accumulate.cuda",
       .form = "float32 64x64, put_ accumulate=True, 1Mi flat indices (256 adds per element)"},
      put(true));
  add({.name = "put",
       .family = kScatterIndexFamily,
       .op = "aten::put",
       .kb = "put.no_accumulate",
       .form = std::string(kFlatForm) + ", put_ accumulate=False, duplicate indices"},
      put(false));
}

// scatter_add, scatter and scatter_reduce, elementwise along dim 0.
void add_scatter(ProbeList& out) {
  const auto add = [&out](ProbeInfo info, ProbeFn fn) { out.push_back(make_probe(std::move(info), std::move(fn))); };
  add({.name = "scatter_add",
       .family = kScatterIndexFamily,
       .op = "aten::scatter_add",
       .kb = "scatter_add.cuda",
       .form = std::string(kElementwiseForm) + ", dim 0"},
      scatter_add);
  add({.name = "scatter_add.unique-control",
       .family = kScatterIndexFamily,
       .op = "aten::scatter_add",
       .kb = "",
       .role = Role::Control,
       .form = "float32, dim 0, a permutation of rows: one add per element"},
      scatter_add_unique);
  add({.name = "scatter_add.int-control",
       .family = kScatterIndexFamily,
       .op = "aten::scatter_add",
       .kb = "",
       .role = Role::Control,
       .form = "int64, duplicates as scatter_add: integer atomics commute"},
      scatter_add_int);
  add({.name = "scatter",
       .family = kScatterIndexFamily,
       .op = "aten::scatter",
       .kb = "scatter.src.cuda",
       .form = std::string(kElementwiseForm) + ", src tensor: the last write wins"},
      scatter_src);
  add({.name = "scatter_reduce.sum",
       .family = kScatterIndexFamily,
       .op = "aten::scatter_reduce",
       .kb = "scatter_reduce.sum_mean.cuda",
       .form = std::string(kElementwiseForm) + ", reduce=sum, include_self"},
      scatter_reduce("sum"));
  add({.name = "scatter_reduce.mean",
       .family = kScatterIndexFamily,
       .op = "aten::scatter_reduce",
       .kb = "scatter_reduce.sum_mean.cuda",
       .form = std::string(kElementwiseForm) + ", reduce=mean, include_self"},
      scatter_reduce("mean"));
  add({.name = "scatter_reduce.prod",
       .family = kScatterIndexFamily,
       .op = "aten::scatter_reduce",
       .kb = "scatter_reduce.prod.cuda",
       .form = std::string(kElementwiseForm) + ", values 1 + 0.01 N(0,1), reduce=prod, include_self"},
      scatter_reduce("prod"));
  add({.name = "scatter_reduce.amax-control",
       .family = kScatterIndexFamily,
       .op = "aten::scatter_reduce",
       .kb = "",
       .role = Role::Control,
       .form = std::string(kElementwiseForm) + ", reduce=amax: exact in any order"},
      scatter_reduce("amax"));
}

// index_copy, and the gradients of gather, index_select and repeat_interleave (scatter-adds).
void add_index_copy_and_gradients(ProbeList& out) {
  const auto add = [&out](ProbeInfo info, ProbeFn fn) { out.push_back(make_probe(std::move(info), std::move(fn))); };
  add({.name = "index_copy",
       .family = kScatterIndexFamily,
       .op = "aten::index_copy",
       .kb = "index_copy",
       .form = std::string(kRowForm) + ", duplicate indices: the last copy wins"},
      index_copy);
  add({.name = "gather.backward",
       .family = kScatterIndexFamily,
       .op = "aten::gather",
       .direction = Direction::Backward,
       .kb = "gather.backward.cuda",
       .form = std::string(kElementwiseForm) + " (gathered); gradient of the input (64 rows, CPU 8Ki)"},
      gather_backward);
  add({.name = "index_select.backward",
       .family = kScatterIndexFamily,
       .op = "aten::index_select",
       .direction = Direction::Backward,
       .kb = "index_select.backward.cuda",
       .form = std::string(kRowForm) + " (selected); gradient of the input (64 rows, CPU 8Ki), an index_add"},
      index_select_backward);
  add({.name = "repeat_interleave.backward",
       .family = kScatterIndexFamily,
       .op = "aten::repeat_interleave",
       .direction = Direction::Backward,
       .kb = "repeat_interleave.backward.cuda",
       .form = "float32 64x64 (CPU 8Ki x 16), tensor repeats in [1, 2Ki) (CPU [1, 8)) per row; gradient of input"},
      repeat_interleave_backward);
}

}  // namespace

void register_scatter_index(ProbeList& out) {
  add_index_add_and_put(out);
  add_put(out);
  add_scatter(out);
  add_index_copy_and_gradients(out);
}

}  // namespace ra::probes
