// SPDX-License-Identifier: Apache-2.0
// What a probe is, without running it: the description the front (torch-free) lists, selects and
// reports, and that the worker sends it as the probe catalogue (JSON, `probe_catalogue_*`).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace ra::probes {

enum class Direction { Forward, Backward };
const char* to_string(Direction d);

// A control runs the same op in a form that must be stable (no duplicate indices, a
// deterministic-by-construction variant); it proves the probe's divergence comes from the op.
enum class Role { Probe, Control };
const char* to_string(Role r);

struct ProbeInfo {
  std::string name;    // unique, [a-z0-9_.-]: "index_add", "conv2d.backward", "scatter_reduce.prod"
  std::string family;  // "convolution", "scatter-index", ... (the file it lives in)
  std::string op;      // the ATen op under test, e.g. "aten::index_add"
  bool cpu = true;     // runs on CPU tensors
  bool cuda = true;    // runs on CUDA tensors
  Direction direction = Direction::Forward;
  std::string kb;  // id of its knowledge-base entry (share/knowledge/ops.json), "" when none
  Role role = Role::Probe;
  std::string form;       // one line: what is run (sizes, duplicates, dtype)
  bool isolated = false;  // runs in a process of its own: what it reads depends on what earlier
                          // probes left behind (the CUDA caching allocator's blocks)
};

nlohmann::json to_json(const ProbeInfo& info);
// Throws std::invalid_argument naming the field for a malformed entry.
ProbeInfo probe_info_from_json(const nlohmann::json& j);

}  // namespace ra::probes
