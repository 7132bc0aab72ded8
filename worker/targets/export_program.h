// SPDX-License-Identifier: Apache-2.0
// Our own runtime for torch.export archives: the archive's serialized program
// (models/model.json, read by export_archive.h) turned into steps that call each node's op
// through the ATen dispatcher, as `torch.export.load(p).module()(*inputs)` does in Python, so
// that every output is the user's, bit for bit, on every torch release (LibTorch's NativeRT,
// the other runtime, exists only in torch 2.11).
//
// Building the program checks everything that does not need the inputs: every node's op exists
// (a higher-order op such as cond, or a custom op whose library is not loaded, is named in one
// line), its arguments match the op's schema, every value is defined before it is read (which
// also refuses cycles), and every weight has the shape its placeholder declares. Running it
// checks the inputs against the signature (rank, static sizes, the dynamic dimensions' ranges)
// and then runs the steps in order: ATen ops boxed through the dispatcher, symbolic-int
// arithmetic (`_operator.add` ...) on host integers. Mutated buffers are written back, so a second
// call sees them, as the unlifted Python module does.
#pragma once

#include "worker/targets/export_archive.h"
#include "worker/targets/inputs.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ra::targets {

// How a step gets one argument of its op: a constant, a value of the program, or a list of
// either (a tensor list, an int list with symbolic elements).
struct ArgRecipe {
  // Wrapped: a number where the schema wants a Tensor (`aten.add.Tensor(x, 1)`), made a wrapped-number
  // tensor as Python's argument parser makes it.
  enum class Kind { Constant, Slot, TensorList, OptionalTensorList, IntList, FloatList, BoolList, Wrapped };
  Kind kind = Kind::Constant;
  c10::IValue constant;
  int slot = -1;
  bool to_double = false;              // an int value for a float argument
  std::vector<int> slots;              // list kinds: the element's slot, or -1 for a constant element
  std::vector<c10::IValue> constants;  // list kinds: the constant elements
};

// Where a step's results go: per return of the op, nothing, one slot, or a list's slots.
struct OutputBinding {
  enum class Kind { None, Single, List };
  Kind kind = Kind::None;
  int slot = -1;
  std::vector<int> slots;
};

struct ProgramStep {
  std::optional<c10::OperatorHandle> op;  // an ATen (or registered custom) op
  std::string sym;                        // or a symbolic-int operation ("_operator.add")
  std::vector<ArgRecipe> args;
  std::vector<OutputBinding> outputs;
  std::vector<int> release;  // values last read here, dropped after the step
  size_t node = 0;           // the node's index in the graph
};

// A user input as the signature declares it.
struct ProgramInput {
  std::string name;
  int slot = -1;
  bool tensor = true;
  std::vector<std::string> dims;  // per dimension: a static size ("4"), a symbol ("s77") or an expression
};

// What the archive says about each user input before any is made (for --shape, inputs.h): its
// dtype as exported, and for token ids the rows of the embedding they index. Read from the graph
// alone, so that either runtime can use it.
std::vector<InputHint> input_hints(const nlohmann::json& model);

// What the program returns: its user outputs, in order, as the output tree's leaves.
struct ProgramOutput {
  std::string name;  // the key in a dict-like output ("logits"), "" for positional
  int slot = -1;     // -1: a constant
  c10::IValue constant;
};

// How the program computes: as exported, or as the float64 referee runs it (reports/referee_model.h):
// every floating weight and constant cast to float64 (complex to complex128), and every floating
// dtype argument of a lower precision in the graph's calls promoted likewise (`to(dtype=float32)`,
// `softmax(dtype=...)`, `full(..., dtype=...)`), so that a model that upcasts to float32 on purpose (a
// Hugging Face attention) runs in float64 throughout.
enum class Precision { AsExported, Float64 };

class ExportProgram {
 public:
  // The program of `model` (models/model.json, parsed) with `weights` ("param/fc.weight",
  // "buffer/...", "constant/...", as export_archive.h reads them) moved to `device`. Throws
  // TrialInputError, one line naming `path` and the node, for anything it cannot run.
  ExportProgram(const nlohmann::json& model, const std::vector<std::pair<std::string, at::Tensor>>& weights,
                const std::string& path, const c10::Device& device, Precision precision = Precision::AsExported);

  // Runs on the user inputs (positional, in signature order). Throws TrialInputError for inputs
  // that disagree with the signature; an op's own error propagates as thrown.
  c10::IValue run(const std::vector<c10::IValue>& args);

  // The node each dispatched step runs, in order: "torch.ops.aten.linear.default" -> "aten::linear".
  const std::vector<std::string>& input_names() const { return input_names_; }
  size_t node_count() const { return node_names_.size(); }
  // Index of the graph node of each step that goes through the dispatcher, in run order.
  std::vector<size_t> dispatched_nodes() const;
  // The signature's parameters whose placeholders require grad, by name, and their tensors.
  std::vector<std::pair<std::string, at::Tensor>> parameters() const;
  bool inference_only() const { return inference_only_; }
  // The parameters, buffers and constants as the program holds them, with the archive's names.
  std::vector<std::pair<std::string, at::Tensor>> weights() const { return weights_; }

 private:
  void bind_inputs(const std::vector<c10::IValue>& args, std::vector<c10::IValue>& values) const;
  c10::IValue sym_op(const ProgramStep& step, std::vector<c10::IValue>& values) const;

  std::string path_;
  std::vector<std::string> node_names_;  // "linear_1 (aten.linear.default)"
  std::vector<std::string> input_names_;
  std::vector<ProgramInput> inputs_;
  std::vector<std::pair<int, c10::IValue>> fixed_;  // weights and constant inputs, by slot
  std::vector<ProgramStep> steps_;
  std::vector<ProgramOutput> outputs_;
  bool single_output_ = false;
  bool dict_output_ = false;
  std::vector<std::pair<int, int>> buffer_writes_;             // (value slot, buffer slot) after each run
  std::vector<std::pair<int, size_t>> input_writes_;           // (value slot, user input index)
  std::map<std::string, std::pair<int64_t, int64_t>> ranges_;  // symbol -> [min, max]
  std::vector<std::pair<std::string, int>> params_;            // name, slot
  std::vector<std::pair<std::string, at::Tensor>> weights_;
  size_t slot_count_ = 0;
  bool inference_only_ = true;
};

// The one check of a torch.export archive: the archive at `path` read and checked (export_archive.h),
// then its program built on `device` (every check above that needs no input). `run` opens its archives
// here (then runs the program), and so does `lint` (then walks the graph; with WeightData::Declared on
// the meta device: the same checks, the weights' bytes unread), so that the two commands refuse the
// same archives with the same line. Throws TrialInputError, one line naming `path`.
struct CheckedExport {
  ExportArchive archive;
  std::unique_ptr<ExportProgram> program;
};
CheckedExport open_export_archive(const std::string& path, const c10::Device& device,
                                  WeightData data = WeightData::Read, Precision precision = Precision::AsExported);

}  // namespace ra::targets
