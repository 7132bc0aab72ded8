// SPDX-License-Identifier: Apache-2.0
// The front's half of the batch-invariance probes (probes/batch_invariance.cpp): from the
// digests one run recorded, the batch sizes grouped into classes whose anchor rows have identical
// bits. Torch-free: it reads names and digests only.
#pragma once

#include "reports/model.h"

#include <cstdint>
#include <vector>

namespace ra {

// Groups the tensors named "row@M=<M>" by digest (and dtype and shape): each class lists its sizes
// in increasing order, the classes in order of their smallest size. Other tensors are ignored;
// empty when there is no such tensor. One class: invariant over every size tried.
std::vector<std::vector<int64_t>> batch_classes(const std::vector<report::TensorDigest>& tensors);

}  // namespace ra
