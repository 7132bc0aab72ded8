// SPDX-License-Identifier: Apache-2.0
// The environment fingerprint: everything that can change a model's bits besides the model, so
// that a report says where it was made and `compare` can tell an environment change from
// nondeterminism. Reading GPU properties initialises CUDA, so the audit parent never calls this
// itself: the preflight child does.
#pragma once

#include <nlohmann/json.hpp>

namespace ra {

nlohmann::ordered_json environment_fingerprint();

// The CUDA part: {"available": bool, "reason": ..., versions, "devices": [...]}. Without a CUDA
// build of torch it says so.
nlohmann::ordered_json cuda_fingerprint();

}  // namespace ra
