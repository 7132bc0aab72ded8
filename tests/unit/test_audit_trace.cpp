// SPDX-License-Identifier: Apache-2.0
// The op tracer (worker/trace/tracer.h), in process on the CPU.
#include "worker/digest/digest.h"
#include "worker/trace/tracer.h"

// torch before doctest: c10 defines a CHECK macro that doctest must override.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <doctest/doctest.h>

namespace {

using ra::trace::Record;
using ra::trace::Trace;

const Record* find_op(const Trace& t, const std::string& op, size_t nth = 0) {
  for (const auto& r : t.records)
    if (r.op == op && nth-- == 0) return &r;
  return nullptr;
}

}  // namespace

TEST_CASE("Tracer: outermost ops with digests of what they read and wrote") {
  const at::Tensor x = at::randn({4, 8});
  const at::Tensor w = at::randn({8, 3});
  at::Tensor before, after, y, z;
  Trace t;
  {
    ra::trace::set_phase("forward", 0);
    ra::trace::Tracer tracer(at::kCPU, 1024);
    y = at::matmul(x, w);  // decomposes into mm: only matmul is recorded
    before = y.clone();
    y.add_(1.0);  // in place: reads `before`, writes `after`
    after = y.clone();
    z = at::relu(y);
    t = tracer.finish();
  }
  CHECK(find_op(t, "aten::mm") == nullptr);
  const Record* mm = find_op(t, "aten::matmul");
  REQUIRE(mm != nullptr);
  CHECK(mm->kind == "op");
  CHECK(mm->phase == "forward");
  CHECK(mm->parent == -1);
  REQUIRE(mm->inputs.size() == 2);
  CHECK(mm->inputs[0].digest == ra::digest(x));
  CHECK(mm->inputs[1].digest == ra::digest(w));
  CHECK(mm->inputs[1].shape == std::vector<int64_t>{8, 3});
  REQUIRE(mm->outputs.size() == 1);
  CHECK(mm->outputs[0].digest == ra::digest(before));
  const Record* add = find_op(t, "aten::add_");
  REQUIRE(add != nullptr);
  CHECK(add->inputs[0].digest == ra::digest(before));
  CHECK(add->outputs[0].digest == ra::digest(after));
  CHECK_FALSE(add->scalars.empty());  // the 1.0 and alpha
  // relu reads the tensor add_ changed in place: the digest cache must not serve the old one.
  const Record* relu = find_op(t, "aten::relu");
  REQUIRE(relu != nullptr);
  CHECK(relu->inputs[0].digest == ra::digest(after));
  CHECK(relu->outputs[0].digest == ra::digest(z));
  CHECK(mm->order < add->order);
  CHECK(add->order < relu->order);
  CHECK(t.dropped == 0);
}

TEST_CASE("Tracer: the ops the tracer's caller runs with another scalar differ in `scalars`") {
  const at::Tensor x = at::randn({5});
  Trace t;
  {
    ra::trace::Tracer tracer(at::kCPU, 1024);
    (void)at::add(x, x, 2);
    (void)at::add(x, x, 3);
    t = tracer.finish();
  }
  const Record* a = find_op(t, "aten::add", 0);
  const Record* b = find_op(t, "aten::add", 1);
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  CHECK(a->inputs[0].digest == b->inputs[0].digest);
  CHECK(a->scalars != b->scalars);
}

TEST_CASE("Tracer: backward nodes, the ops they call, and phases") {
  const at::Tensor w = at::randn({6, 3}).requires_grad_(true);
  const at::Tensor x = at::randn({4, 6});
  Trace t;
  {
    ra::trace::Tracer tracer(at::kCPU, 4096);
    ra::trace::set_phase("forward", 1);
    const at::Tensor loss = at::tanh(at::mm(x, w)).sum();
    ra::trace::set_phase("backward", 1);
    loss.backward();
    ra::trace::set_phase("optimizer", 1);
    {
      at::NoGradGuard no_grad;
      w.sub_(w.grad(), 0.1);
    }
    t = tracer.finish();
  }
  ra::trace::set_phase("forward", 0);
  const Record* mm = find_op(t, "aten::mm");
  REQUIRE(mm != nullptr);
  CHECK(mm->seq >= 0);
  CHECK(mm->step == 1);
  const Record* node = find_op(t, "MmBackward0");
  REQUIRE(node != nullptr);
  CHECK(node->kind == "node");
  CHECK(node->phase == "backward");
  CHECK(node->seq == mm->seq);  // the link to the forward op
  CHECK(node->outputs.empty());
  bool child = false;
  for (const auto& r : t.records) child |= r.parent == static_cast<int64_t>(node->order) && r.op == "aten::mm";
  CHECK(child);  // the weight gradient's matmul, inside the node
  const Record* sub = find_op(t, "aten::sub_");
  REQUIRE(sub != nullptr);
  CHECK(sub->phase == "optimizer");
  // No record for the engine's own wrappers.
  for (const auto& r : t.records) CHECK(r.op.find("evaluate_function") == std::string::npos);
}

TEST_CASE("Tracer: a full trace drops later records and counts them") {
  const at::Tensor x = at::randn({3});
  Trace t;
  {
    ra::trace::Tracer tracer(at::kCPU, 10);
    for (int i = 0; i < 20; ++i) (void)at::neg(x + i);
    t = tracer.finish();
  }
  CHECK(t.capacity == 10);
  CHECK(t.dropped > 0);
  CHECK(t.records.size() < 20);
  for (const auto& r : t.records) CHECK(r.outputs.size() == 1);  // no half-recorded op
}

TEST_CASE("Tracer: batch norm's running statistics and .data writes never serve a stale digest") {
  // batch_norm in train mode updates running_mean and running_var in place without moving their
  // version counters (its schema does not mark them written), and a write through `.data` moves
  // only the alias's counter: the digest cache must see both.
  const at::Tensor x = at::randn({6, 3});
  at::Tensor mean = at::zeros({3}), var = at::ones({3});
  std::vector<at::Tensor> means, vars;
  at::Tensor p = at::ones({3});
  at::Tensor p_before, p_after;
  Trace t;
  {
    ra::trace::Tracer tracer(at::kCPU, 4096);
    for (int i = 0; i < 3; ++i) {
      means.push_back(mean.clone());
      vars.push_back(var.clone());
      at::batch_norm(x, {}, {}, mean, var, /*training=*/true, 0.1, 1e-5, false);
    }
    p_before = p.clone();
    at::Tensor seen = p.mul(2);  // digests p
    p.data().add_(1.0);          // writes p's bits through an alias with its own counter
    p_after = p.clone();
    seen = p.mul(2);  // must read the new bits
    t = tracer.finish();
  }
  for (size_t i = 0; i < 3; ++i) {
    const Record* bn = find_op(t, "aten::batch_norm", i);
    REQUIRE(bn != nullptr);
    REQUIRE(bn->inputs.size() >= 3);
    CHECK(bn->inputs[1].digest == ra::digest(means[i]));  // inputs: x, running_mean, running_var (no weight, bias)
    CHECK(bn->inputs[2].digest == ra::digest(vars[i]));
  }
  CHECK(ra::digest(means[1]) != ra::digest(means[2]));  // the statistics did move
  const Record* first = find_op(t, "aten::mul", 0);
  const Record* second = find_op(t, "aten::mul", 1);
  REQUIRE(first != nullptr);
  REQUIRE(second != nullptr);
  CHECK(first->inputs[0].digest == ra::digest(p_before));
  CHECK(second->inputs[0].digest == ra::digest(p_after));
}

TEST_CASE("Tracer: views share a cached digest only where they read the same values") {
  // A reshaped contiguous view reads the same bytes in the same order: one digest serves both
  // (each record keeps its own shape). A conj or neg view of the same bytes reads other values.
  const at::Tensor z = at::randn({4, 6}, at::kComplexFloat);
  Trace t;
  at::Tensor flat, conj, neg;
  {
    ra::trace::Tracer tracer(at::kCPU, 1024);
    (void)z.add(1);  // digests z
    flat = z.reshape({24});
    (void)flat.add(1);  // the same bytes, another shape
    conj = z.conj();
    (void)conj.add(1);  // the same bytes, conjugated values
    neg = at::_neg_view(at::randn({8}));
    (void)neg.add(1);
    t = tracer.finish();
  }
  const Record* on_z = find_op(t, "aten::add", 0);
  const Record* on_flat = find_op(t, "aten::add", 1);
  const Record* on_conj = find_op(t, "aten::add", 2);
  const Record* on_neg = find_op(t, "aten::add", 3);
  REQUIRE(on_z != nullptr);
  REQUIRE(on_flat != nullptr);
  REQUIRE(on_conj != nullptr);
  REQUIRE(on_neg != nullptr);
  CHECK(on_z->inputs[0].digest == ra::digest(z));
  CHECK(on_flat->inputs[0].digest == ra::digest(flat));
  CHECK(on_flat->inputs[0].shape == std::vector<int64_t>{24});
  CHECK(on_conj->inputs[0].digest == ra::digest(conj));
  CHECK(on_conj->inputs[0].digest != ra::digest(z.reshape({4, 6})));
  CHECK(on_neg->inputs[0].digest == ra::digest(neg));
}
