// SPDX-License-Identifier: Apache-2.0
// One trial, in its own process. The order of steps is the point of the file:
//   1. apply the configuration's in-process switches (the environment ones were set before exec)
//      and read back what is in effect: nothing about CUDA or the model has been touched yet;
//   2. turn the TorchScript profiling executor and fusers off (they change results between the
//      first and later calls of a method);
//   3. load custom-op libraries, seed every generator (CPU and each CUDA device), load the model;
//   4. build the inputs (from a torch.save file, or seeded synthetic ones);
//   5. digest parameters and buffers, run forward (infer) or K optimizer steps (train: SGD or
//      Adam, each step a forward, a backward and an optimizer step), digesting outputs, the loss,
//      gradients and parameters as they come; a restart-replay child restores a checkpoint before
//      its first step or saves one after its last (audit/replay.h);
//   6. optionally write every digested tensor to a dump file, so that the parent can compute
//      divergence statistics for the tensors whose digests differ.
#include "audit/child.h"

#include "audit/checkpoint.h"
#include "audit/child_support.h"
#include "audit/digest.h"
#include "audit/errors.h"
#include "audit/fingerprint.h"
#include "audit/optimizer.h"
#include "audit/switches.h"
#include "audit/tensor_file.h"
#include "audit/trace.h"
#include "audit/trace_io.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/script.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <optional>
#include <sstream>

namespace ra {
namespace {

using report::TrialStatus;

at::ScalarType scalar_type_of(const std::string& name) {
  static const std::map<std::string, at::ScalarType> types = {
      {"float32", at::kFloat}, {"float64", at::kDouble}, {"float16", at::kHalf}, {"bfloat16", at::kBFloat16},
      {"int8", at::kChar},     {"uint8", at::kByte},     {"int16", at::kShort}, {"int32", at::kInt},
      {"int64", at::kLong},    {"bool", at::kBool}};
  return types.at(name);
}

// Flattens an IValue of tensors into (name, tensor) pairs (audit/tensor_file.h); throws
// TrialInputError for anything else.
void collect_tensors(const c10::IValue& v, const std::string& name, NamedTensors& out, const char* what) {
  try {
    flatten_tensors(v, name, out, what);
  } catch (const InputError& e) {
    throw TrialInputError(e.what());
  }
}

struct Inputs {
  std::vector<c10::IValue> args;
  std::unordered_map<std::string, c10::IValue> kwargs;
  std::vector<std::string> descriptions;
};

std::string describe(const at::Tensor& t) { return fmt::format("{}[{}]", dtype_name(t.scalar_type()), fmt::join(t.sizes(), "x")); }

Inputs load_inputs(const TrialSpec& spec, const c10::Device& device) {
  Inputs in;
  if (!spec.input_file.empty()) {
    std::ifstream f(spec.input_file, std::ios::binary);
    if (!f) throw TrialInputError(fmt::format("input file '{}' cannot be read", spec.input_file));
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    c10::IValue value;
    try {
      value = torch::jit::pickle_load(bytes);
    } catch (const std::exception& e) {
      throw TrialInputError(fmt::format("input file '{}' is not a torch.save file: {}", spec.input_file, error_text(e)));
    }
    std::vector<std::pair<std::string, at::Tensor>> check;
    const std::string what = fmt::format("input file '{}'", spec.input_file);
    collect_tensors(value, "input", check, what.c_str());
    if (check.empty()) throw TrialInputError(fmt::format("{} holds no tensors", what));
    if (value.isTensor()) {
      in.args.push_back(value.toTensor().to(device));
    } else if (value.isTuple() || value.isList()) {
      const auto elems = value.isTuple() ? value.toTupleRef().elements().vec() : value.toListRef().vec();
      for (const auto& e : elems) in.args.push_back(e.isTensor() ? c10::IValue(e.toTensor().to(device)) : e);
    } else if (value.isGenericDict()) {
      for (const auto& kv : value.toGenericDict())
        in.kwargs[kv.key().toStringRef()] = kv.value().isTensor() ? c10::IValue(kv.value().toTensor().to(device)) : kv.value();
    } else {
      throw TrialInputError(fmt::format("{} holds a {}, not a tensor, tuple, list or dict of tensors", what, value.tagKind()));
    }
    for (const auto& [name, t] : check) in.descriptions.push_back(fmt::format("{}={}", name, describe(t)));
    return in;
  }
  // Synthetic inputs from their own generator, so they do not depend on the model's RNG use.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(spec.seed ^ 0x5eedull);
  for (const auto& shape : spec.shapes) {
    const at::ScalarType type = scalar_type_of(shape.dtype);
    at::Tensor t;
    if (at::isFloatingType(type))
      t = at::randn(shape.sizes, gen, at::TensorOptions().dtype(at::kFloat)).to(type);
    else if (type == at::kBool)
      t = at::randint(0, 2, shape.sizes, gen, at::TensorOptions().dtype(at::kLong)).to(at::kBool);
    else
      t = at::randint(0, 10, shape.sizes, gen, at::TensorOptions().dtype(type));
    in.descriptions.push_back(describe(t));
    in.args.push_back(t.to(device));
  }
  return in;
}

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
  if (in.args.size() < required || in.args.size() > declared)
    throw TrialInputError(fmt::format("the model's forward takes {} input{}, but {} were given", declared,
                                      declared == 1 ? "" : "s", in.args.size()));
}

// Flattens a model output into named tensors and records each.
void record_value(Recorder& rec, const std::string& name, const c10::IValue& v) {
  std::vector<std::pair<std::string, at::Tensor>> flat;
  collect_tensors(v, name, flat, "the model's output");
  for (const auto& [n, t] : flat) rec.add(n, t);
}

c10::IValue call_forward(torch::jit::Module& module, const Inputs& in) {
  if (!in.kwargs.empty()) return module.forward(in.args, in.kwargs);
  return module.forward(in.args);
}

// Loss for train mode: the output if it is a scalar, else the sum of every output tensor's sum.
at::Tensor loss_of(const c10::IValue& out) {
  std::vector<std::pair<std::string, at::Tensor>> flat;
  collect_tensors(out, "output", flat, "the model's output");
  if (flat.empty()) throw TrialInputError("train mode needs the model to return at least one tensor");
  if (flat.size() == 1 && flat[0].second.numel() == 1) return flat[0].second.reshape({});
  at::Tensor loss;
  for (const auto& [name, t] : flat) {
    if (!at::isFloatingType(t.scalar_type())) continue;
    loss = loss.defined() ? loss + t.sum() : t.sum();
  }
  if (!loss.defined()) throw TrialInputError("train mode needs a floating-point output to differentiate");
  return loss;
}

// Train mode: K optimizer steps from `spec.optimizer`; a restart-replay child resumes from or saves
// a checkpoint (audit/checkpoint.h). `state` receives the training-state digests when the spec asks.
void train(const TrialSpec& spec, const c10::Device& device, torch::jit::Module& module, const Inputs& in, Recorder& rec,
           std::vector<report::TensorDigest>& state) {
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
    const at::Tensor loss = loss_of(out);
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

}  // namespace

TrialResult run_child(const TrialSpec& spec) {
  TrialResult result;
  const double start = now_ms();
  // 1. switches, before anything touches CUDA or the model.
  try {
    apply_switches(spec.config);
  } catch (const std::exception& e) {
    result.status = TrialStatus::ConfigError;
    result.message = "cannot apply configuration: " + error_text(e);
    return result;
  }
  result.switches = read_switches(spec.config);
  if (const std::string mismatch = switch_mismatches(result.switches); !mismatch.empty()) {
    result.status = TrialStatus::ConfigError;
    result.message = mismatch;
    return result;
  }
  disable_jit_optimisations();
  try {
    load_libraries(spec.load_libraries);
    const c10::Device device = checked_device(spec.device);
    if (spec.task == ChildTask::Preflight) result.environment = environment_fingerprint();
    seed_generators(spec.seed);
    torch::jit::Module module;
    try {
      module = torch::jit::load(spec.model, device);
    } catch (const std::exception& e) {
      throw TrialInputError(fmt::format("model '{}' is not a loadable TorchScript archive: {}", spec.model, error_text(e)));
    }
    const Inputs inputs = load_inputs(spec, device);
    result.input_descriptions = inputs.descriptions;
    check_arity(module, inputs);
    result.startup_ms = ms_since_spawn();
    Recorder rec(!spec.dump_path.empty());
    if (spec.task == ChildTask::Preflight) {
      // One forward without grad: wrong shapes or dtypes show up here, before any trial runs.
      module.eval();
      at::NoGradGuard no_grad;
      c10::IValue out;
      try {
        out = call_forward(module, inputs);
      } catch (const TrialInputError&) {
        throw;
      } catch (const std::exception& e) {
        throw TrialInputError(fmt::format("the model rejects the inputs ({}): {}", fmt::join(inputs.descriptions, ", "), error_text(e)));
      }
      if (spec.mode == "train") {
        (void)loss_of(out);
        bool has_float_param = false;
        for (const auto& p : module.named_parameters(true)) has_float_param |= at::isFloatingType(p.value.scalar_type());
        if (!has_float_param) throw TrialInputError("train mode needs a model with floating-point parameters");
      }
    } else {
      try {
        std::optional<trace::Tracer> tracer;
        if (!spec.trace_path.empty()) tracer.emplace(device, spec.trace_capacity);
        if (tracer && spec.capture_order >= 0) tracer->capture(static_cast<uint64_t>(spec.capture_order));
        run_model(spec, device, module, inputs, rec, result.state);
        if (tracer) {
          trace::write_trace(spec.trace_path, tracer->finish());
          if (!spec.capture_path.empty()) {
            Recorder captured(true);
            for (size_t i = 0; i < tracer->captured().size(); ++i)
              if (tracer->captured()[i].defined()) captured.add(fmt::format("output/{}", i), tracer->captured()[i]);
            captured.write_dump(spec.capture_path);
          }
        }
        tracer.reset();
        // Uninstrumented runs for the fix search's costs; the recorded run above was the warm-up.
        for (int i = 0; i < spec.timed_runs; ++i) {
          Recorder off = Recorder::off();
          synchronize(device);
          const double t0 = now_ms();
          std::vector<report::TensorDigest> unused_state;
          run_model(spec, device, module, inputs, off, unused_state);
          synchronize(device);
          result.run_ms.push_back(now_ms() - t0);
        }
      } catch (const TrialInputError&) {
        throw;
      } catch (const std::exception& e) {
        const std::string msg = error_text(e);
        result.status = is_determinism_alert(msg) ? TrialStatus::Raised : TrialStatus::Error;
        result.message = msg;
      }
      rec.write_dump(spec.dump_path);
      result.tensors = std::move(rec.tensors());
    }
  } catch (const std::exception& e) {
    record_error(result, e);
  }
  result.wall_ms = now_ms() - start;
  return result;
}

}  // namespace ra
