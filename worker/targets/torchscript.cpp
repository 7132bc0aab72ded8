// SPDX-License-Identifier: Apache-2.0
// The TorchScript target: an archive from torch.jit.save, run through torch::jit::Module.
//   infer: module.eval(), one forward under InferenceMode; records params, buffers and outputs;
//   train: module.train(), K optimizer steps (SGD or Adam), each a forward, a backward and an
//          optimizer step, recording outputs, the loss, gradients and parameters as they come; a
//          restart-replay child restores a checkpoint before its first step or saves one after
//          its last (audit/train/replay.h).
#include "worker/targets/call_state.h"
#include "worker/targets/inputs.h"
#include "worker/targets/target.h"

#include "audit/baseline/identity.h"
#include "audit/common/errors.h"
#include "worker/digest/digest.h"
#include "worker/trace/tracer.h"
#include "worker/train/checkpoint.h"
#include "worker/train/optimizer.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/script.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>

namespace ra::targets {
namespace {

// Checks the forward schema against the inputs, so that a count mismatch is an input error.
void check_arity(const torch::jit::Module& module, const Inputs& in) {
  const auto method = module.find_method("forward");
  if (!method) throw TrialInputError("the model has no forward method");
  const auto& schema = method->function().getSchema();
  const size_t declared = schema.arguments().size() - 1;  // minus self
  size_t required = 0;
  for (size_t i = 1; i < schema.arguments().size(); ++i)
    if (!schema.arguments()[i].default_value()) ++required;
  if (!in.kwargs.empty()) return;  // keyword inputs are matched by TorchScript itself
  if (in.args.empty() && required > 0) {
    std::vector<std::string> names;
    for (size_t i = 1; i < schema.arguments().size(); ++i) names.push_back(schema.arguments()[i].name());
    throw TrialInputError(
        fmt::format("the model's forward takes {} input{} ({}), but none was given: pass --input FILE (a torch.save "
                    "file) or --shape SIZES per input (for example --shape 8x3x224x224)",
                    declared, declared == 1 ? "" : "s", fmt::join(names, ", ")),
        "usage");
  }
  if (in.args.size() < required || in.args.size() > declared)
    throw TrialInputError(fmt::format("the model's forward takes {} input{}, but {} {} given", declared,
                                      declared == 1 ? "" : "s", in.args.size(), in.args.size() == 1 ? "was" : "were"));
}

c10::IValue call_forward(torch::jit::Module& module, const Inputs& in) {
  if (!in.kwargs.empty()) return module.forward(in.args, in.kwargs);
  return module.forward(in.args);
}

// Train mode: K optimizer steps from `spec.optimizer`; a restart-replay child resumes from or saves
// a checkpoint (worker/train/checkpoint.h). `state` receives the training-state digests when the spec asks.
void train(const TrialSpec& spec, const c10::Device& device, torch::jit::Module& module, const Inputs& in,
           Recorder& rec, std::vector<report::TensorDigest>& state) {
  module.train();
  ModelOptimizer optimizer(module, spec.optimizer, spec.lr);
  const CheckpointOmissions omit = checkpoint_omissions(spec.checkpoint.omit);
  int first_step = 1;
  if (!spec.checkpoint.resume_path.empty()) {
    restore_checkpoint(spec.checkpoint.resume_path, module, optimizer, omit, device);
    state = training_state_digests(module, optimizer);
    first_step = spec.checkpoint.resume_step + 1;
  }
  for (int step = first_step; step <= spec.steps; ++step) {
    const std::string prefix = fmt::format("step{}/", step);
    trace::set_phase("forward", step);
    optimizer.zero_grad();
    // forward
    const c10::IValue out = call_forward(module, in);
    const at::Tensor loss = train_loss(out);
    record_value(rec, prefix + "output", out);
    rec.add(prefix + "loss", loss.detach());
    // backward
    trace::set_phase("backward", step);
    loss.backward();
    for (const auto& [name, p] : optimizer.params())
      if (p.grad().defined()) rec.add(prefix + "grad/" + name, p.grad());
    // optimizer step
    trace::set_phase("optimizer", step);
    optimizer.step();
    for (const auto& [name, p] : optimizer.params()) rec.add(prefix + "param/" + name, p.detach());
    // Buffers too: batch norm's running statistics change in every training forward, and a
    // divergence that lives only there must show (and the restart-replay compares them after the
    // restart like every step tensor).
    for (const auto& b : module.named_buffers(true)) rec.add(prefix + "buffer/" + b.name, b.value.detach());
    if (step == spec.state_step) state = training_state_digests(module, optimizer);
  }
  if (!spec.checkpoint.save_path.empty()) {
    state = training_state_digests(module, optimizer);
    save_checkpoint(spec.checkpoint.save_path, module, optimizer, omit);
  }
}

void run_model(const TrialSpec& spec, const c10::Device& device, torch::jit::Module& module, const Inputs& in,
               Recorder& rec, std::vector<report::TensorDigest>& state) {
  for (const auto& p : module.named_parameters(true)) rec.add("param/" + p.name, p.value);
  for (const auto& b : module.named_buffers(true)) rec.add("buffer/" + b.name, b.value);
  if (spec.mode == "infer") {
    module.eval();
    trace::set_phase("forward", 0);
    c10::InferenceMode guard;
    record_value(rec, "output", call_forward(module, in));
    return;
  }
  train(spec, device, module, in, rec, state);
}

// "dropout and batch_norm" when the graphs hold those ops with their training flag as the constant
// false (torch.jit.trace of a model in eval mode bakes it in; torch.jit.script reads
// self.training instead), "" when none does.
std::string eval_frozen_ops(const torch::jit::Module& module) {
  bool dropout = false, batch_norm = false;
  const auto frozen = [](const torch::jit::Node* n, size_t index) {
    if (index >= n->inputs().size()) return false;
    const auto v = torch::jit::toIValue(n->input(index));
    return v && v->isBool() && !v->toBool();
  };
  std::function<void(const torch::jit::Block*)> walk = [&](const torch::jit::Block* block) {
    for (const torch::jit::Node* n : block->nodes()) {
      const std::string kind = n->kind().toQualString();
      if ((kind == "aten::dropout" || kind == "aten::feature_dropout" || kind == "aten::alpha_dropout") && frozen(n, 2))
        dropout = true;
      if (kind == "aten::batch_norm" && frozen(n, 5)) batch_norm = true;
      for (const torch::jit::Block* b : n->blocks()) walk(b);
    }
  };
  for (const auto& m : module.modules())
    for (const auto& method : m.get_methods()) walk(method.graph()->block());
  if (dropout && batch_norm) return "dropout and batch_norm";
  return dropout ? "dropout" : batch_norm ? "batch_norm" : "";
}

// Tensor constants of a graph and of the blocks inside it, in order (a traced model keeps tensors
// it captured as constants, which are as much its weights as its parameters).
void graph_constants(const torch::jit::Block* block, const std::string& prefix, NamedTensors& out) {
  for (const torch::jit::Node* node : block->nodes()) {
    if (node->kind() == c10::prim::Constant && node->outputs().size() == 1 &&
        node->output()->type()->kind() == c10::TypeKind::TensorType) {
      if (const auto value = torch::jit::toIValue(node->output()); value && value->isTensor())
        out.emplace_back(fmt::format("{}{}", prefix, out.size()), value->toTensor());
    }
    for (const torch::jit::Block* inner : node->blocks()) graph_constants(inner, prefix, out);
  }
}

// The module's identity by content: its parameters, buffers and graph constants by name; and its
// graph: every method of every submodule printed without source locations, mangled names made
// plain, with the names, dtypes and shapes of its state (TorchScript code does not name shapes, and
// a Linear(16, 8) made Linear(16, 4) is another model, not other weights).
Identity torchscript_identity(const torch::jit::Module& module) {
  NamedTensors weights;
  for (const auto& p : module.named_parameters(true)) weights.emplace_back("param/" + p.name, p.value);
  for (const auto& b : module.named_buffers(true)) weights.emplace_back("buffer/" + b.name, b.value);
  std::string code;
  for (const auto& m : module.named_modules()) {
    code += fmt::format("module '{}' {}\n", m.name, m.value.type()->str());
    for (const auto& method : m.value.get_methods()) {
      const std::string where = m.name.empty() ? method.name() : m.name + "." + method.name();
      code += fmt::format("def {}\n{}\n", method.name(), method.graph()->toString(false));
      NamedTensors constants;
      graph_constants(method.graph()->block(), "constant/" + where + "/", constants);
      for (auto& c : constants) weights.push_back(std::move(c));
    }
  }
  for (const auto& [name, t] : weights)
    code += fmt::format("state {} {} [{}]\n", name, dtype_name(t.scalar_type()), fmt::join(t.sizes(), ","));
  return {weights_identity(weights), text_digest(normalise_torchscript(code))};
}

class TorchScriptTarget final : public Target {
 public:
  std::string kind() const override { return "torchscript"; }
  Tracing tracing() const override { return Tracing::OpByOp; }

  std::vector<std::string> load(const TrialSpec& spec, const c10::Device& device) override {
    spec_ = spec;
    device_ = device;
    try {
      module_ = torch::jit::load(spec.model, device);
    } catch (const std::exception& e) {
      const std::string why = not_torchscript_because(spec.model);
      if (!why.empty()) throw TrialInputError(fmt::format("model '{}' {}", spec.model, why));
      throw TrialInputError(
          fmt::format("model '{}' is not a loadable TorchScript archive: {}", spec.model, error_text(e)));
    }
    // The float64 referee: the floating parameters and buffers cast. Not Module::to, which casts
    // integer ones too (an index buffer, batch norm's num_batches_tracked), so that indexing raises.
    if (spec.precision == "float64") {
      for (const auto& p : module_.parameters())
        if (p.is_floating_point()) p.set_data(p.to(at::kDouble));
      for (const auto& b : module_.buffers())
        if (b.is_floating_point()) b.set_data(b.to(at::kDouble));
    }
    inputs_ = load_inputs(spec, device);
    check_arity(module_, inputs_);
    return inputs_.descriptions;
  }

  std::vector<std::string> input_names() const override {
    // One name per description: positional inputs whose every element is one tensor (not a file's
    // dict, whose entries are named already, nor a nested value).
    const auto method = module_.find_method("forward");
    if (!method || !inputs_.kwargs.empty() || inputs_.args.size() != inputs_.descriptions.size()) return {};
    const auto& arguments = method->function().getSchema().arguments();
    std::vector<std::string> names;
    for (size_t i = 0; i < inputs_.args.size() && i + 1 < arguments.size(); ++i) {
      if (!inputs_.args[i].isTensor()) return {};
      names.push_back(arguments[i + 1].name());
    }
    return names.size() == inputs_.args.size() ? names : std::vector<std::string>{};
  }

  std::vector<std::string> check() override {
    // One forward without grad: wrong shapes or dtypes show up here, before any trial runs.
    module_.eval();
    at::NoGradGuard no_grad;
    c10::IValue out;
    try {
      out = call_forward(module_, inputs_);
    } catch (const TrialInputError&) {
      throw;
    } catch (const std::exception& e) {
      throw TrialInputError(
          fmt::format("the model rejects the inputs ({}): {}", fmt::join(inputs_.descriptions, ", "), error_text(e)));
    }
    check_output(out);
    if (spec_.mode == "train") {
      (void)train_loss(out);
      bool has_float_param = false;
      for (const auto& p : module_.named_parameters(true)) has_float_param |= at::isFloatingType(p.value.scalar_type());
      if (!has_float_param) throw TrialInputError("train mode needs a model with floating-point parameters");
      if (const std::string frozen = eval_frozen_ops(module_); !frozen.empty())
        return {
            fmt::format("the model was traced in eval mode: its {} keep eval behaviour under --mode train "
                        "(torch.jit.trace records the mode as a constant); script it, or trace it after model.train()",
                        frozen)};
    }
    return {};
  }

  void run(Recorder& rec, std::vector<report::TensorDigest>& state) override {
    run_model(spec_, device_, module_, inputs_, rec, state);
  }

  Identity identity() const override { return torchscript_identity(module_); }

  std::vector<report::TensorDigest> state_digests() override {
    Recorder rec(false);
    for (const auto& p : module_.named_parameters(true)) rec.add("param/" + p.name, p.value);
    for (const auto& b : module_.named_buffers(true)) rec.add("buffer/" + b.name, b.value);
    record_attributes(rec, module_);
    record_inputs(rec, inputs_.args, input_names());
    std::map<std::string, c10::IValue> kwargs(inputs_.kwargs.begin(), inputs_.kwargs.end());  // sorted
    for (const auto& [name, v] : kwargs) record_state_value(rec, "input/" + name, v);
    return std::move(rec.tensors());
  }

  c10::IValue call(const std::vector<c10::IValue>& args) override {
    c10::InferenceMode guard;
    return module_.forward(args);
  }

 private:
  TrialSpec spec_;
  c10::Device device_{c10::kCPU};
  torch::jit::Module module_;
  Inputs inputs_;
};

}  // namespace

std::unique_ptr<Target> open_model_target(const TrialSpec& spec) {
  switch (archive_kind(spec.model)) {
    case ArchiveKind::Export:
      return open_export_target();
    case ArchiveKind::Aoti:
      return open_aoti_target();
    default:
      return std::make_unique<TorchScriptTarget>();  // whose load says what any other file is
  }
}

}  // namespace ra::targets
