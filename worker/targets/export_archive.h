// SPDX-License-Identifier: Apache-2.0
// What `run` reads of a torch.export archive (torch.export.save) before it runs, without
// running anything: the zip checked first (audit/common/zip_check.h: entry names, declared sizes,
// the expansion budget), then models/model.json (its schema, the user inputs' names, the ATen nodes
// with their module paths and source lines, the graph's canonical digest), and the parameters,
// buffers and constants from their data/ records, each checked against its record. Split from
// export.cpp so that the reader is fuzzed (tests/fuzz/fuzz_export.cpp) without running anything.
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ra::targets {

// A node of the exported graph, as the trace names it.
struct GraphNode {
  std::string op;      // "aten::linear"
  std::string name;    // the node's name in the graph ("linear_1")
  std::string module;  // innermost module path from nn_module_stack ("fc"), "" for the top
  std::string source;  // the program's line from stack_trace ("model.py:26")
  size_t index = 0;    // its position among all the graph's nodes
};

struct ExportArchive {
  std::vector<std::string> input_names;                     // the user inputs of the signature, in order
  std::vector<std::vector<int64_t>> input_sizes;            // their sizes as the graph declares them, -1 where symbolic
  std::vector<GraphNode> nodes;                             // the graph's ATen nodes, in order
  std::string graph_digest;                                 // audit/baseline/identity.h, canonical_export_graph
  std::vector<std::pair<std::string, at::Tensor>> weights;  // "param/fc.weight", "buffer/...", "constant/..."
  nlohmann::json model;                                     // models/model.json, for the interpreter (export_program.h)
};

// What read_export_archive makes of the weights' records. Read (what `run` needs): each record's
// elements copied out. Declared (what `lint` needs): the same checks of every record (present, its
// declared size reached by no element beyond it, the archive's budget), and each weight a tensor of
// its dtype and shape on the meta device, without reading its bytes: an archive whose data is that
// of a large model is checked as fast as a small one. Either way the same archives are refused, with
// the same line, but for a record whose compressed bytes are damaged, which only Read inflates.
enum class WeightData { Read, Declared };

// Reads the archive at `path` as above. Throws TrialInputError (one line, naming the file) for
// anything wrong with it, whatever the reader underneath threw.
ExportArchive read_export_archive(const std::string& path, WeightData data = WeightData::Read);

}  // namespace ra::targets
