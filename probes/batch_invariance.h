// SPDX-License-Identifier: Apache-2.0
// The batch-invariance probes' sizes and row names (probes/batch_invariance.cpp), shared
// with the self-test's in-process measurement (worker/child/selftest_child.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ra::probes {

// The batch sizes each batch-invariance probe runs, in increasing order: 1..257 on the CPU, up to
// 1025 on CUDA.
std::vector<int64_t> batch_invariance_sizes(bool cuda);

// The name of the recorded anchor-row slice at batch size m: "row@M=17" (audit/probes/batch_classes.h reads it).
std::string batch_row_name(int64_t m);

}  // namespace ra::probes
