// SPDX-License-Identifier: Apache-2.0
// baseline/identity: a model's identity by what it computes, so that a re-save keeps it.
//
// The problem. A baseline used to know a model by the digest of its file's bytes. Loading and
// saving the same model changes those bytes (zip timestamps, record order, the pickler's memo,
// a class name mangled because another copy was loaded first), and so does exporting it twice.
// The baseline then refused a model that computes exactly what it computed before.
//
// The approach. Beside the bytes, a model target carries two content digests, made by the
// worker's preflight after it loaded the model:
//   weights  every parameter, buffer and constant by name (sorted), with its dtype, shape and
//            bits: `weights_digest_text` is the canonical text, one line per tensor;
//   graph    the computation in a canonical form. TorchScript: every method of every submodule,
//            printed without source locations, with mangled class names (`___torch_mangle_7.`)
//            taken out (`normalise_torchscript`). An export archive: models/model.json without
//            each node's stack_trace (files and lines) and the torch version that wrote it
//            (`canonical_export_graph`). An AOTInductor package: its generated C++ without
//            comments (`canonical_compiled_source`), its constants as its weights.
// Two targets are the same model when the bytes match, or when both content digests do. Same
// graph with other weights is a comparable experiment (a retrained or fine-tuned model), which
// the comparison names; another graph is another model. A side without content digests (an
// older baseline, a probe) is matched by its bytes as before.
//
// The cost. The worker digests each tensor once in the preflight (the trials digest them anyway);
// the rest is string work on the model's text. Nothing here needs torch.
#pragma once

#include "reports/target_model.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace ra {

// One tensor of the weights, as the worker saw it.
struct WeightLine {
  std::string name;  // "param/fc.weight", "buffer/bn.running_mean", "constant/c0"
  std::string dtype;
  std::vector<int64_t> shape;
  std::string digest;  // the tensor's bitwise digest
};

// The weights' digest: their lines sorted by name, digested as text.
std::string weights_digest(std::vector<WeightLine> lines);

// A TorchScript graph's text with mangled class names made plain
// ("__torch__.___torch_mangle_3.Net" -> "__torch__.Net").
std::string normalise_torchscript(const std::string& text);

// An export archive's models/model.json (parsed) in canonical form: without what records where
// and by what the program was exported (every "stack_trace", the top-level "torch_version"),
// dumped with sorted keys.
std::string canonical_export_graph(nlohmann::json model);

// An AOTInductor package's generated C++ (its wrapper and kernel sources) in canonical form: the
// lines that are not comments. Inductor's comments name the compiling user's cache folder, and a
// source served from that cache carries the compile and link commands that made it.
std::string canonical_compiled_source(const std::string& cpp);

// The digest of a canonical text.
std::string text_digest(const std::string& text);

// How the baseline's model `b` relates to the current one `c`.
enum class ModelSameness {
  Same,          // the same bytes (or no digests on a side: nothing to tell)
  Resaved,       // other bytes, same graph and weights: the same model saved again
  OtherWeights,  // other bytes, same graph, other weights: comparable, and said
  OtherGraph,    // other bytes and another graph: another model
  OtherBytes,    // other bytes, and a side has no content digests to tell more
};
ModelSameness model_sameness(const report::Target& b, const report::Target& c);

}  // namespace ra
