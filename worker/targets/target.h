// SPDX-License-Identifier: Apache-2.0
// targets/: what a trial runs. To add a kind of target, implement this interface.
//
// A target is anything whose tensors a trial can compute and digest: a TorchScript model
// (torchscript.cpp), a torch.export archive run by our interpreter (export.cpp), an AOTInductor package
// (aoti.cpp) and a probe of the built-in suite (probe_target.cpp). The trial children
// (worker/child/) drive every kind alike: apply the configuration, load the target, run it once
// recording its tensors, maybe under the tracer, maybe again for timing. Nothing above the worker knows the kind: the front
// sees trial results, digests and verdicts (audit/trial/), whatever computed them.
//
// Rules for a target (they are what makes a digest comparison mean something):
//   * load() does everything that may fail because of the user's files (the model, the inputs,
//     their agreement) and throws TrialInputError for it, so the preflight reports it in one line
//     before any trial runs; run() then fails only for reasons that are findings.
//   * Every tensor whose bits must be reproducible goes through the Recorder, in a fixed order,
//     with a stable name ("param/fc.weight", "output/0", "step2/grad/fc.bias").
//   * Randomness comes from the generators the child seeded, never from the clock.
//   * run() may be called again (timed runs, with a Recorder that keeps nothing) and must do
//     the same work each time.
//
// To add a kind: implement Target in a new file here, recognise its files in open_model_target,
// and add the source to ra_targets (worker/CMakeLists.txt). Kinds whose ops bypass the dispatcher
// (compiled code) say Tracing::None, and the child refuses --trace for them with a usage error.
#pragma once

#include "audit/trace/trace_record.h"
#include "audit/trial/trial_spec.h"
#include "reports/core_model.h"
#include "worker/runtime/child_support.h"

#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ra::targets {

// A model's identity by what it computes (audit/baseline/identity.h): digests of its weights by
// name and of its graph in canonical form, both "" where the kind has none.
struct Identity {
  std::string weights;
  std::string graph;
};

// What `--trace` can see of a target's run.
enum class Tracing {
  OpByOp,    // every ATen op reaches the dispatcher: root causes can be named
  None,      // not traceable in this version: --trace is a usage error
  Compiled,  // fused, compiled kernels: --trace is dropped with one line, and only outputs are digested
};

class Target {
 public:
  virtual ~Target() = default;
  // The kind, as messages name it: "torchscript", "probe", "a torch.export archive, ...".
  virtual std::string kind() const = 0;
  virtual Tracing tracing() const = 0;
  // Loads the target onto `device` and builds its inputs from the spec (input file, shapes,
  // seed). Returns the inputs' descriptions ("input=float32[8x3x32x32]"). Throws TrialInputError.
  virtual std::vector<std::string> load(const TrialSpec& spec, const c10::Device& device) = 0;
  // After load: the name each input binds to (the forward arguments the positional inputs fill,
  // in order), or none where the target has no such names.
  virtual std::vector<std::string> input_names() const { return {}; }
  // After load: what a compiled package records about its build (AOTInductor: device key, CPU
  // ISA, platform), kept in the report; empty for other kinds.
  virtual std::map<std::string, std::string> package() const { return {}; }
  // After load: the model's identity by content, which a re-save keeps; empty for kinds whose
  // computation cannot be read back and for probes.
  virtual Identity identity() const { return {}; }
  // After load: digests of the model's own state by name ("param/fc.weight", "buffer/count"), so that
  // `run --calls K` can tell a forward that changes it; empty for kinds whose state cannot be read.
  virtual std::vector<report::TensorDigest> state_digests() { return {}; }
  // The preflight's check: one run without recording, turning a mismatch of the target and its
  // inputs into a TrialInputError. Returns what the user should be warned about (one sentence
  // each), e.g. a model traced in eval mode audited with --mode train.
  virtual std::vector<std::string> check() = 0;
  // One run under the spec's mode, recording every tensor to compare; training-state digests
  // (restart-replay) go to `state`.
  virtual void run(Recorder& rec, std::vector<report::TensorDigest>& state) = 0;
  // After a traced run: names what the tracer saw in the target's own terms (an export archive's
  // graph nodes: module path, source line, node name), and says, one sentence each, what the
  // trace could not see. Nothing for targets whose ops the tracer names itself.
  virtual std::vector<std::string> annotate(trace::Trace&) const { return {}; }
  // After check(): one call of the loaded model on other positional inputs, in infer mode, nothing
  // recorded; what batch invariance calls for every batch it builds (worker/invariance/).
  virtual c10::IValue call(const std::vector<c10::IValue>& args) {
    (void)args;
    throw TrialInputError(kind() + " cannot be called on batches of other sizes", "usage");
  }
};

// The target a trial spec names: its model file, a TorchScript archive (torchscript.cpp) or a
// torch.export archive (export.cpp). Any other file gets the TorchScript target, whose load says
// what the file is instead (not_torchscript_because).
std::unique_ptr<Target> open_model_target(const TrialSpec& spec);
// A torch.export archive, run by our interpreter or NativeRT (export.cpp).
std::unique_ptr<Target> open_export_target();
// An AOTInductor package (aoti.cpp).
std::unique_ptr<Target> open_aoti_target();

// The registered probe `name` (built in or from a plugin), or nullptr.
std::unique_ptr<Target> open_probe_target(const std::string& name);

}  // namespace ra::targets
