// SPDX-License-Identifier: Apache-2.0
// Internal to reports/: the parts of a target and of a configuration that the JSON report
// (json.cpp, json_read.cpp) and the baseline file (baseline_json.cpp) both carry, written and read
// by one function each so that the two documents cannot drift apart.
#pragma once

#include "reports/json_node.h"
#include "reports/model.h"

#include <nlohmann/json.hpp>

#include <vector>

namespace ra::report::detail {

// Which document a target sits in: a report has the target's path, and may predate the model and
// input digests; a baseline has no path and always has the digests.
enum class TargetDoc { Report, Baseline };

// {"config", "verdict", "message", "repeats", "completed", "divergence", "switches"}; callers append
// the rest of their configuration object after these keys.
nlohmann::ordered_json config_head_json(const ConfigResult& c);
void read_config_head(const Node& n, ConfigResult& c);

// A configuration's reference digests: [{"name", "dtype", "shape", "digest"}].
nlohmann::ordered_json digests_json(const std::vector<TensorDigest>& digests);
std::vector<TensorDigest> read_digests(const Node& n);

// {"name", "kind", ("path",) "model_digest", "input_digest", "device", "mode", "steps", "optimizer",
// "seed", "inputs", "verdict"}; callers append the rest of their target object.
nlohmann::ordered_json target_head_json(const Target& t, TargetDoc doc);
void read_target_head(const Node& n, Target& t, TargetDoc doc);

}  // namespace ra::report::detail
