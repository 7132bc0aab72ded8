// SPDX-License-Identifier: Apache-2.0
// Scaled dot-product attention backward, one probe per backend: FlashAttention, memory-efficient
// (CUTLASS), cuDNN, and the math decomposition as the control.
//
// Each backend is called through its own ATen op (_scaled_dot_product_flash_attention, ...), the
// ops scaled_dot_product_attention dispatches to, so no global backend switch is flipped and the
// probe measures exactly one kernel. A backend this GPU or build does not offer raises at the
// forward call; that becomes a skip.
//
// The fused backward kernels parallelise over blocks of keys; each key block's contribution to dQ
// is added into a float32 accumulator with atomicAdd (flash), or into per-split partial sums
// (memory-efficient with num_splits_key > 1, which it picks for long key sequences), so the order
// of those additions changes with block timing. Deterministic mode switches flash and
// memory-efficient to their ordered variants. 4096 keys are 32 to 64 key blocks per query block,
// over 4 x 8 heads: far more reorderings than needed for the low bits of dQ to move.
//
// The math backend is matmul, softmax and matmul, whose backward has no atomics: it runs with the
// same shapes and dtype as a control (kb "": it is the documented way to get determinism, not a
// nondeterministic op), and it is the only one that runs on the CPU.
#include "probes/registry.h"

#include <ATen/Functions.h>
#include <c10/util/Exception.h>

namespace ra::probes {
namespace {

enum class Backend { Flash, Efficient, Cudnn, Math };

struct AttentionShape {
  int64_t batch, heads, seq, dim;
  at::ScalarType dtype;
};
AttentionShape attention_shape(const ProbeContext& ctx) {
  return ctx.cuda() ? AttentionShape{4, 8, 4096, 64, at::kBFloat16} : AttentionShape{1, 2, 32, 16, at::kFloat};
}

at::Tensor attend(Backend backend, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  switch (backend) {
    case Backend::Flash:
      return std::get<0>(at::_scaled_dot_product_flash_attention(q, k, v, /*dropout_p=*/0.0));
    case Backend::Efficient:
      return std::get<0>(
          at::_scaled_dot_product_efficient_attention(q, k, v, std::nullopt, /*compute_log_sumexp=*/true));
    case Backend::Cudnn:
      return std::get<0>(at::_scaled_dot_product_cudnn_attention(q, k, v, std::nullopt, /*compute_log_sumexp=*/true));
    case Backend::Math:
      break;
  }
  return std::get<0>(at::_scaled_dot_product_attention_math(q, k, v));
}

void run_attention(ProbeContext& ctx, Backend backend, const char* label) {
  const AttentionShape s = attention_shape(ctx);
  const at::Tensor q = ctx.leaf({s.batch, s.heads, s.seq, s.dim}, s.dtype);
  const at::Tensor k = ctx.leaf({s.batch, s.heads, s.seq, s.dim}, s.dtype);
  const at::Tensor v = ctx.leaf({s.batch, s.heads, s.seq, s.dim}, s.dtype);
  at::Tensor out;
  try {
    out = attend(backend, q, k, v);
  } catch (const c10::OutOfMemoryError&) {
    throw;
  } catch (const c10::Error& e) {
    if (backend == Backend::Math) throw;
    std::string why = e.what_without_backtrace();
    why = why.substr(0, why.find('\n'));
    throw ProbeSkip(std::string(label) + " attention is not available here: " + why);
  }
  ctx.record("output", out);
  ctx.backward(out, {{"query", q}, {"key", k}, {"value", v}});
}

void add_backend(ProbeList& out, Backend backend, const char* label, const std::string& name, const std::string& op) {
  const bool math = backend == Backend::Math;
  // The backends are called directly, not through scaled_dot_product_attention's dispatch, so
  // the cuDNN one runs whatever cudnn.enabled says: its label says so.
  const std::string form =
      std::string(label) + " backend; CUDA: bfloat16 4 x 8 heads x 4096 x 64, no mask, no dropout" +
      (math ? "; CPU: float32 1 x 2 x 32 x 16" : "") + "; gradients of query, key, value" +
      (backend == Backend::Cudnn ? "; called directly, so it runs under cudnn.enabled=off too" : "");
  // cuDNN attention has its own entry: deterministic mode leaves its backward nondeterministic.
  const std::string kb = math ? "" : backend == Backend::Cudnn ? "sdpa.cudnn.backward.cuda" : "sdpa.backward.cuda";
  out.push_back(
      make_probe({name, "attention", op, math, true, Direction::Backward, kb, math ? Role::Control : Role::Probe, form},
                 [backend, label](ProbeContext& ctx) { run_attention(ctx, backend, label); }));
}

}  // namespace

void register_attention(ProbeList& out) {
  add_backend(out, Backend::Flash, "flash", "sdpa.flash.backward", "aten::_scaled_dot_product_flash_attention");
  add_backend(out, Backend::Efficient, "memory-efficient", "sdpa.efficient.backward",
              "aten::_scaled_dot_product_efficient_attention");
  add_backend(out, Backend::Cudnn, "cuDNN", "sdpa.cudnn.backward", "aten::_scaled_dot_product_cudnn_attention");
  add_backend(out, Backend::Math, "math", "sdpa.math.backward", "aten::_scaled_dot_product_attention_math");
}

}  // namespace ra::probes
