// SPDX-License-Identifier: Apache-2.0
// invariance's negative control, shared by every axis's sweep: the comparison must see a one-bit
// change (a copy of a reference slice with the lowest bit of its first element flipped, on the
// model's device), and torch.mm's row 0 alone and in a batch of 64 says what this device's GEMM
// library does.
#pragma once

#include "reports/model.h"

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <string>

namespace ra::invariance {

// `reference` is a compared output's slice (`output` names it) and `digest` its digest.
report::NegativeControl negative_control(const at::Tensor& reference, const std::string& digest,
                                         const std::string& output, const c10::Device& device);

}  // namespace ra::invariance
