// SPDX-License-Identifier: Apache-2.0
// How two versions of a tensor differ: count of differing elements, first differing index, max
// absolute and relative difference, max ULP distance (on one side of zero; elements across zero
// are counted instead), and the elements beyond a tolerance. Computed only for tensors whose digests differ, on the
// CPU copies that trials dump (the parent never touches CUDA).
//
// Details: relative difference and ULP distance are taken over elements finite in both; elements
// across zero (or at zero in one) go to `sign_differs` instead of a ULP figure; float64 distances are
// taken in int64; NaN mismatches are counted apart. Elements are compared in pieces, so temporaries
// stay near 50 MiB whatever the tensor's size. Which dumps are compared: within a configuration, a
// tensor's reference values against the first repeat it differed in (whose dump holds it,
// audit/trial/analysis.h reference_digests); for configuration dependence, the reference repeats of
// the first configuration of two groups. A dump the child could not write (a full TMPDIR) costs only
// the statistics: the trial keeps its verdict and the notes say why. The dumps, and the files a
// baseline kept, are read by worker/tensor_io/kept_read.h.
#pragma once

#include "reports/core_model.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace at {
class Tensor;
}

namespace ra {

// `a` is the reference. Without `tolerance`, report::default_tolerance of the dtype.
report::DivergenceStats tensor_difference(const at::Tensor& a, const at::Tensor& b,
                                          const std::optional<report::Tolerance>& tolerance = std::nullopt);

// How far `x` (a floating or complex tensor of a result) lies from `r`, the float64 referee's tensor of
// the same name (reports/referee_model.h, ReferenceError): ULP of x's dtype between x and r rounded to
// it, counted through zero; max abs and relative error over elements finite in both; NaN and
// infinity disagreements counted apart. A shape or dtype-kind mismatch gives a note and no figures.
// Computed on the CPU in pieces, as tensor_difference is.
report::ReferenceError reference_error(const std::string& name, const at::Tensor& x, const at::Tensor& r);

}  // namespace ra
