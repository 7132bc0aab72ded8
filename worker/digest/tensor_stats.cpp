// SPDX-License-Identifier: Apache-2.0
#include "worker/digest/tensor_stats.h"

#include "worker/digest/digest.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>

namespace ra {
namespace {

// Elements compared at a time: about 50 MiB of temporaries.
constexpr int64_t kStatsPiece = int64_t{1} << 20;

// Float bits mapped to integers whose order is the order of the floats (so that their distance
// counts representable values in between): negative values are reflected below zero; -0 maps to 0.
at::Tensor ordered_bits(const at::Tensor& t) {
  const int64_t width = t.element_size() * 8;
  const at::Tensor x = t.view(bits_type(t.element_size())).to(at::kLong);
  const int64_t min_w = width == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (width - 1));
  return at::where(x < 0, min_w - x, x);
}

}  // namespace

report::DivergenceStats tensor_difference(const at::Tensor& a_in, const at::Tensor& b_in,
                                          const std::optional<report::Tolerance>& tolerance) {
  report::DivergenceStats s;
  if (a_in.scalar_type() != b_in.scalar_type()) {
    s.note = fmt::format("dtype differs: {} vs {}", dtype_name(a_in.scalar_type()), dtype_name(b_in.scalar_type()));
    return s;
  }
  if (a_in.sizes() != b_in.sizes()) {
    s.note = fmt::format("shape differs: {} vs {}", fmt::join(a_in.sizes(), "x"), fmt::join(b_in.sizes(), "x"));
    return s;
  }
  s.tolerance = tolerance ? *tolerance : report::default_tolerance(dtype_name(a_in.scalar_type()));
  const at::Tensor a = a_in.detach().to(at::kCPU), b = b_in.detach().to(at::kCPU);
  const bool complex = a.is_complex();
  const bool floating = complex || at::isFloatingType(a.scalar_type());
  const int64_t per_element = complex ? 2 : 1;
  s.numel = a_in.numel();
  // Elements of a mask over real components: a complex element counts once when either part does.
  const auto count = [complex](const at::Tensor& mask) {
    return (complex ? mask.view({-1, 2}).any(1) : mask).sum().item<int64_t>();
  };
  // Piece by piece, so that the temporaries (several 8-byte values per element) stay within a
  // fixed budget however large the tensors, and an expanded view is never materialised whole.
  bool any_finite = false, any_same_side = false;
  double max_abs = 0, max_rel = 0, max_ulp = 0;
  for_each_piece({a, b}, kStatsPiece, [&](const std::vector<at::Tensor>& piece, int64_t first) {
    at::Tensor pa = piece[0], pb = piece[1];
    if (complex) {
      pa = at::view_as_real(pa).reshape({-1});
      pb = at::view_as_real(pb).reshape({-1});
    }
    const at::ScalarType bt = bits_type(pa.element_size());
    const at::Tensor differs = pa.view(bt) != pb.view(bt);
    const int64_t n = count(differs);
    if (n == 0) return;
    if (s.differing == 0) s.first_index = first + differs.to(at::kByte).argmax().item<int64_t>() / per_element;
    s.differing += n;
    const at::Tensor a64 = pa.to(at::kDouble), b64 = pb.to(at::kDouble);
    const at::Tensor finite =
        floating ? at::isfinite(a64).logical_and(at::isfinite(b64)).logical_and(differs) : differs;
    const at::Tensor diff = (a64 - b64).abs();
    // Within tolerance: finite in both and |a - b| <= atol + rtol * |a| (a NaN or an infinity that
    // differs never is).
    const at::Tensor within = finite.logical_and(diff <= s.tolerance.atol + s.tolerance.rtol * a64.abs());
    s.beyond_tolerance += count(differs.logical_and(within.logical_not()));
    if (floating) s.nan_mismatches += count(differs.logical_and(at::isnan(a64).logical_or(at::isnan(b64))));
    if (!finite.any().item<bool>()) return;
    const at::Tensor scale = at::maximum(a64.abs(), b64.abs());
    const at::Tensor rel = at::where(scale > 0, diff / scale, at::zeros_like(diff));
    const double abs = diff.masked_select(finite).max().item<double>();
    const double rels = rel.masked_select(finite).max().item<double>();
    max_abs = any_finite ? std::max(max_abs, abs) : abs;
    max_rel = any_finite ? std::max(max_rel, rels) : rels;
    any_finite = true;
    if (!floating) return;
    // Opposite sides of zero, or zero in one (+0 against -0 too): counted, not measured in ULP.
    const at::Tensor crosses =
        finite.logical_and((a64 == 0).logical_or(b64 == 0).logical_or(at::signbit(a64) != at::signbit(b64)));
    s.sign_differs += count(crosses);
    const at::Tensor same_side = finite.logical_and(crosses.logical_not());
    if (!same_side.any().item<bool>()) return;
    // In integers: a double holds 53 bits, too few for float64's ordered bits. Elements on one
    // side of zero are less than 2^63 apart; the others (which could wrap) are masked out.
    const at::Tensor ulp = (ordered_bits(pa) - ordered_bits(pb)).abs().to(at::kDouble);
    const double ulps = ulp.masked_select(same_side).max().item<double>();
    max_ulp = any_same_side ? std::max(max_ulp, ulps) : ulps;
    any_same_side = true;
  });
  if (s.differing == 0) return s;
  int64_t rest = s.first_index;
  s.first_index_nd.assign(a_in.dim(), 0);
  for (int64_t d = a_in.dim() - 1; d >= 0; --d) {
    const int64_t size = a_in.size(d);
    s.first_index_nd[d] = size == 0 ? 0 : rest % size;
    rest = size == 0 ? 0 : rest / size;
  }
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  s.max_abs_diff = any_finite ? max_abs : nan;
  s.max_rel_diff = any_finite ? max_rel : nan;
  if (floating) {
    s.max_ulp = any_same_side ? max_ulp : nan;
  } else {
    s.max_ulp = max_abs;
  }
  return s;
}

report::ReferenceError reference_error(const std::string& name, const at::Tensor& x_in, const at::Tensor& r_in) {
  report::ReferenceError e;
  e.name = name;
  e.dtype = dtype_name(x_in.scalar_type());
  e.numel = x_in.numel();
  if (x_in.sizes() != r_in.sizes()) {
    e.note = fmt::format("shape differs from the referee's: {} vs {}", fmt::join(x_in.sizes(), "x"),
                         fmt::join(r_in.sizes(), "x"));
    return e;
  }
  const bool complex = x_in.is_complex();
  const bool r_floating = complex ? r_in.is_complex() : at::isFloatingType(r_in.scalar_type());
  if (!r_floating) {
    e.note = fmt::format("dtype differs in kind from the referee's: {} vs {}", e.dtype, dtype_name(r_in.scalar_type()));
    return e;
  }
  at::Tensor x = x_in.detach().to(at::kCPU), r = r_in.detach().to(at::kCPU, complex ? at::kComplexDouble : at::kDouble);
  if (complex) {
    x = at::view_as_real(x);
    r = at::view_as_real(r);
  }
  bool any_finite = false;
  double max_abs = 0, max_rel = 0, max_ulp = 0;
  for_each_piece({x, r}, kStatsPiece, [&](const std::vector<at::Tensor>& piece, int64_t) {
    const at::Tensor& px = piece[0];
    const at::Tensor& pr = piece[1];
    const at::Tensor x64 = px.to(at::kDouble);
    e.nan_result += at::isnan(x64).sum().item<int64_t>();
    e.nan_reference += at::isnan(pr).sum().item<int64_t>();
    const at::Tensor finite = at::isfinite(x64).logical_and(at::isfinite(pr));
    e.nonfinite += finite.logical_not().logical_and(x64 != pr).sum().item<int64_t>();
    if (!finite.any().item<bool>()) return;
    const at::Tensor diff = (x64 - pr).abs();
    const at::Tensor scale = at::maximum(x64.abs(), pr.abs());
    const at::Tensor rel = at::where(scale > 0, diff / scale, at::zeros_like(diff));
    // R rounded to X's dtype, and the representable values of X's dtype between it and x: the
    // ordered bits count through zero (-0 and +0 are one value), in doubles, which are exact for
    // every distance below 2^53.
    const at::Tensor rounded = pr.to(px.scalar_type());
    const at::Tensor ulp = (ordered_bits(px).to(at::kDouble) - ordered_bits(rounded).to(at::kDouble)).abs();
    const double a = diff.masked_select(finite).max().item<double>();
    const double rl = rel.masked_select(finite).max().item<double>();
    const double u = ulp.masked_select(finite).max().item<double>();
    max_abs = any_finite ? std::max(max_abs, a) : a;
    max_rel = any_finite ? std::max(max_rel, rl) : rl;
    max_ulp = any_finite ? std::max(max_ulp, u) : u;
    any_finite = true;
  });
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  e.max_abs = any_finite ? max_abs : nan;
  e.max_rel = any_finite ? max_rel : nan;
  e.max_ulp = any_finite ? max_ulp : nan;
  return e;
}

}  // namespace ra
