// SPDX-License-Identifier: Apache-2.0
// `repro-audit diff A B`: compares two torch.save files entry by entry. Torch-free header; the
// implementation loads the files with torch (worker/tensor_io/tensor_file.h).
#pragma once

#include "reports/diff_model.h"

#include <optional>
#include <string>

namespace ra {

// Name given to the tensor of a file that holds one bare tensor.
inline constexpr const char* kBareTensorName = "<tensor>";

// Loads both files (worker/tensor_io/tensor_file.h: InputError naming the file on bad input) and compares
// the entries of the union of their names, in name order: digests for bitwise equality, then dtype
// and shape, and divergence statistics (worker/digest/tensor_stats.h) for entries whose bits differ.
// A checkpoint's plain values (an epoch, a learning rate, a flag) are entries too, compared by
// type and exact value; `key` ("model") compares only that subtree of both files. A TorchScript
// archive is compared by its parameters and buffers, named as in its state dict.
// Statistics count the elements beyond `tolerance` (nullopt: each dtype's default).
// exit_code is 0 when both files hold the same names and every entry is identical, else 1; with
// `tolerant`, tensors that differ within tolerance do not make it 1.
report::DiffReport diff_tensor_files(const std::string& a, const std::string& b, const std::string& key = "",
                                     const std::optional<report::Tolerance>& tolerance = std::nullopt,
                                     bool tolerant = false);

}  // namespace ra
