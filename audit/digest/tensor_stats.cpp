// SPDX-License-Identifier: Apache-2.0
#include "audit/digest/tensor_stats.h"

#include "audit/digest/digest.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <fstream>
#include <limits>

namespace ra {
namespace {

// Elements compared at a time: about 50 MiB of temporaries.
constexpr int64_t kStatsPiece = int64_t{1} << 20;

at::ScalarType bits_type(int64_t element_size) {
  switch (element_size) {
    case 1: return at::kByte;
    case 2: return at::kShort;
    case 4: return at::kInt;
    default: return at::kLong;
  }
}

// Float bits mapped to integers whose order is the order of the floats (so that their distance
// counts representable values in between): negative values are reflected below zero; -0 maps to 0.
at::Tensor ordered_bits(const at::Tensor& t) {
  const int64_t width = t.element_size() * 8;
  const at::Tensor x = t.view(bits_type(t.element_size())).to(at::kLong);
  const int64_t min_w = width == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (width - 1));
  return at::where(x < 0, min_w - x, x);
}

}  // namespace

report::DivergenceStats tensor_difference(const at::Tensor& a_in, const at::Tensor& b_in) {
  report::DivergenceStats s;
  if (a_in.scalar_type() != b_in.scalar_type()) {
    s.note = fmt::format("dtype differs: {} vs {}", dtype_name(a_in.scalar_type()), dtype_name(b_in.scalar_type()));
    return s;
  }
  if (a_in.sizes() != b_in.sizes()) {
    s.note = fmt::format("shape differs: {} vs {}", fmt::join(a_in.sizes(), "x"), fmt::join(b_in.sizes(), "x"));
    return s;
  }
  const at::Tensor a = a_in.detach().to(at::kCPU), b = b_in.detach().to(at::kCPU);
  const bool complex = a.is_complex();
  const bool floating = complex || at::isFloatingType(a.scalar_type());
  const int64_t per_element = complex ? 2 : 1;
  s.numel = a_in.numel();
  // Piece by piece, so that the temporaries (several 8-byte values per element) stay within a
  // fixed budget however large the tensors, and an expanded view is never materialised whole.
  bool any_finite = false;
  double max_abs = 0, max_ulp = 0;
  for_each_piece({a, b}, kStatsPiece, [&](const std::vector<at::Tensor>& piece, int64_t first) {
    at::Tensor pa = piece[0], pb = piece[1];
    if (complex) {
      pa = at::view_as_real(pa).reshape({-1});
      pb = at::view_as_real(pb).reshape({-1});
    }
    const at::ScalarType bt = bits_type(pa.element_size());
    const at::Tensor differs = pa.view(bt) != pb.view(bt);
    const int64_t n = (complex ? differs.view({-1, 2}).any(1) : differs).sum().item<int64_t>();
    if (n == 0) return;
    if (s.differing == 0) s.first_index = first + differs.to(at::kByte).argmax().item<int64_t>() / per_element;
    s.differing += n;
    if (floating) {
      const at::Tensor a64 = pa.to(at::kDouble), b64 = pb.to(at::kDouble);
      const at::Tensor finite = at::isfinite(a64).logical_and(at::isfinite(b64)).logical_and(differs);
      s.nan_mismatches += differs.logical_and(at::isnan(a64).logical_or(at::isnan(b64))).sum().item<int64_t>();
      if (!finite.any().item<bool>()) return;
      const double abs = (a64 - b64).abs().masked_select(finite).max().item<double>();
      const at::Tensor ulp = (ordered_bits(pa).to(at::kDouble) - ordered_bits(pb).to(at::kDouble)).abs();
      const double ulps = ulp.masked_select(finite).max().item<double>();
      max_abs = any_finite ? std::max(max_abs, abs) : abs;
      max_ulp = any_finite ? std::max(max_ulp, ulps) : ulps;
      any_finite = true;
    } else {
      max_abs = std::max(max_abs, (pa.to(at::kDouble) - pb.to(at::kDouble)).abs().max().item<double>());
    }
  });
  if (s.differing == 0) return s;
  int64_t rest = s.first_index;
  s.first_index_nd.assign(a_in.dim(), 0);
  for (int64_t d = a_in.dim() - 1; d >= 0; --d) {
    const int64_t size = a_in.size(d);
    s.first_index_nd[d] = size == 0 ? 0 : rest % size;
    rest = size == 0 ? 0 : rest / size;
  }
  if (floating) {
    s.max_abs_diff = any_finite ? max_abs : std::numeric_limits<double>::quiet_NaN();
    s.max_ulp = any_finite ? max_ulp : std::numeric_limits<double>::quiet_NaN();
  } else {
    s.max_abs_diff = max_abs;
    s.max_ulp = max_abs;
  }
  return s;
}

std::map<std::string, report::DivergenceStats> dump_differences(const std::string& dump_a, const std::string& dump_b,
                                                                const std::vector<std::string>& names) {
  std::map<std::string, report::DivergenceStats> out;
  auto load = [](const std::string& path) -> c10::optional<c10::impl::GenericDict> {
    std::ifstream in(path, std::ios::binary);
    if (!in) return c10::nullopt;
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
      const c10::IValue v = torch::jit::pickle_load(bytes);
      if (!v.isGenericDict()) return c10::nullopt;
      return v.toGenericDict();
    } catch (const std::exception&) {
      return c10::nullopt;
    }
  };
  const auto a = load(dump_a), b = load(dump_b);
  for (const auto& name : names) {
    report::DivergenceStats s;
    if (!a || !b) {
      s.note = "tensor values not available (trial dump missing)";
    } else if (!a->contains(name) || !b->contains(name)) {
      s.note = "tensor missing from one run";
    } else {
      s = tensor_difference(a->at(name).toTensor(), b->at(name).toTensor());
    }
    out[name] = s;
  }
  return out;
}

}  // namespace ra
