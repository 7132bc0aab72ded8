// SPDX-License-Identifier: Apache-2.0
// How two versions of a tensor differ: count of differing elements, first differing index, max
// absolute and relative difference, max ULP distance (on one side of zero; elements across zero
// are counted instead), and the elements beyond a tolerance. Computed only for tensors whose digests differ, on the
// CPU copies that trials dump (the parent never touches CUDA).
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

// Loads two dump files written by trials and compares the named tensors. Names missing from a
// dump get a note instead of numbers; an unreadable dump gives notes, never an exception.
std::map<std::string, report::DivergenceStats> dump_differences(const std::string& dump_a, const std::string& dump_b,
                                                                const std::vector<std::string>& names,
                                                                const std::optional<report::Tolerance>& tolerance = std::nullopt);

}  // namespace ra
