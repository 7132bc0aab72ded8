// SPDX-License-Identifier: Apache-2.0
// runtime/ (worker): what every worker process shares: devices, seeding, switches, the fingerprint, CUDA on demand.
// What both kinds of trial child share (the model child, worker/child/trial_child.cpp, and the probe child,
// worker/child/probe_child.cpp): error texts, the first steps of a trial, and the recorder that digests
// tensors and dumps CPU copies for the parent's divergence statistics.
#pragma once

#include "audit/trial/trial_spec.h"
#include "reports/core_model.h"

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace ra {

// An error the trial attributes to its inputs (model file, input file, shapes, device): reported as
// status Error with this message, and by the parent as exit 3 ("input") or 2 ("usage") when it
// happens in the preflight.
struct TrialInputError : std::runtime_error {
  explicit TrialInputError(const std::string& what, std::string kind = "input")
      : std::runtime_error(what), kind(std::move(kind)) {}
  std::string kind;
};

double now_ms();
// Milliseconds since the parent spawned this process (REPRO_AUDIT_SPAWN_NS), 0 when unknown.
double ms_since_spawn();

// The line of an exception worth showing: c10 errors without backtrace; for an exception a
// TorchScript model raised, its class and whole message ("builtins.RuntimeError: ..."), cut to
// kMaxRaised bytes (its line breaks are escaped where it is printed); for other TorchScript
// interpreter errors, the final "RuntimeError: ..." line.
inline constexpr size_t kMaxRaised = 900;  // inside a line of at most kMaxMessage (audit/common/errors.h)
std::string error_text(const std::exception& e);
bool is_determinism_alert(const std::string& message);

// Marks `result` as status Error with the exception's text; a TrialInputError also gives its kind
// (so that the parent can tell a bad model or device from a failing trial).
void record_error(TrialResult& result, const std::exception& e);

// The TorchScript profiling executor and fusers change results between the first and later calls
// of a method; a trial turns them off.
void disable_jit_optimisations();
// dlopen()s each library with RTLD_NOW | RTLD_GLOBAL; returns the handles. Throws TrialInputError.
std::vector<void*> load_libraries(const std::vector<std::string>& paths);
// Seeds the CPU generator and every CUDA device's default generator.
void seed_generators(uint64_t seed);
// The c10::Device of `device`, checked to exist (TrialInputError "usage"); makes cuda:N the
// current device. The one place a ra::Device becomes torch's.
c10::Device checked_device(const Device& device);
// Waits for the device's queued work (a no-op on the CPU), for timing.
void synchronize(const c10::Device& device);

// Digests tensors in the order they are added, and optionally keeps CPU copies for a dump.
class Recorder {
 public:
  // With `dump`, keeps a host copy of each tensor (its values when added) for write_dump; with
  // `reference` digests too (TrialSpec::dump_only_differing), only of tensors whose digest differs
  // from theirs.
  explicit Recorder(bool dump, std::map<std::string, std::string> reference = {})
      : dump_(dump), reference_(std::move(reference)) {}
  // A recorder that keeps nothing: for timed runs.
  static Recorder off() {
    Recorder r(false);
    r.enabled_ = false;
    return r;
  }
  void add(const std::string& name, const at::Tensor& t);
  std::vector<report::TensorDigest>& tensors() { return tensors_; }
  // Measures every floating tensor added from now on against the float64 referee's tensor of the
  // same name in `reference` (TrialSpec::reference_dump), as it is added: a tensor recorded mid-run
  // (a parameter between optimizer steps) is measured as it was then. `missing` is the note of a
  // tensor the reference lacks. Each reference tensor is released once used.
  // The model's own state before it runs (top-level "param/", "buffer/", "constant/", "attr/"
  // records) is not measured: the referee only cast it, so its error is the cast's, and measuring a
  // ResNet's 11M weights in every trial cost more than the referee's run.
  void compare_with(std::map<std::string, at::Tensor> reference, std::string missing);
  // The referee's recorder: no copy of the model's own state in the dump (see compare_with).
  void dump_results_only() { results_only_ = true; }
  std::vector<report::ReferenceError>& errors() { return errors_; }
  // Writes the kept copies as a pickled Dict[str, Tensor]; a no-op without dump. A dump only feeds
  // divergence statistics, so failing to write it (a full disk) fails nothing else: the partial
  // file is removed, a warning goes to the child's log, and the reason ("No space left on device")
  // is returned for TrialResult::dump_error ("" when written).
  std::string write_dump(const std::string& path) const;

 private:
  bool dump_;
  std::map<std::string, std::string> reference_;
  bool enabled_ = true;
  std::vector<report::TensorDigest> tensors_;
  bool compare_ = false;
  bool results_only_ = false;
  std::map<std::string, at::Tensor> referee_;
  std::string referee_missing_;
  std::vector<report::ReferenceError> errors_;
  std::vector<std::string> names_;
  std::vector<at::Tensor> values_;
};

}  // namespace ra
