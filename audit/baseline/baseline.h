// SPDX-License-Identifier: Apache-2.0
// baseline/: baselines, allowlists and the comparison with earlier results.
// Baselines: "did the results change since the golden run, and if so, is it the environment or
// the model?" (`run`/`probes --save-baseline FILE`, `--baseline FILE`, `repro-audit compare A B`).
//
// The problem. A bitwise comparison with an earlier run cannot, by itself, tell three different
// stories apart: the code regressed (same machine, same libraries, new bits), the environment
// changed (a new torch, cuDNN or GPU legitimately picks other kernels), or the model was never
// reproducible (the earlier run's bits were one of several). CI needs the first to fail, the
// second to be said loudly but not to fail, and the third to be named for what it is.
//
// The approach. Both sides carry everything needed: per target x configuration the reference
// repeat's tensor digests, the verdict (did it diverge within that run?) and the effective
// switches, and per report the environment fingerprint (worker/runtime/fingerprint.h). A baseline file is
// the deterministic subset of a report (reports/baseline_file.h); either can be given on either side.
//
// 1. Identity first. Targets pair up by kind and name (and a lone model with a lone model, so a
//    renamed archive still compares). A model is the same model when its file's bytes match or,
//    where both sides carry them, its graph and weights digests do (audit/baseline/identity.h: a
//    re-saved model, said as "saved or exported again"). The same graph with other weights compares, and the
//    weights ("model.weights", affecting any device) explain its differences. A pair whose graph
//    differs (or, without content digests, whose bytes do), or whose input file digest, device,
//    mode, steps, optimizer, seed or inputs differ, is another experiment, not a changed result:
//    an input error (exit 3) naming the first mismatch, raised before any trial runs. So is a
//    baseline sharing no target or no configuration with the run. Configurations or targets on
//    one side only are listed (missing, added), not errors.
// 2. The environment diff. Both fingerprints are flattened to keys ("cuda.devices[0].sm_count")
//    and compared. Each key says which results it can change (`key_affects`): cpu (CPU model,
//    logical CPUs, inter-op threads, OpenMP/MKL, MKL_CBWR, OMP_NUM_THREADS), cuda (CUDA runtime,
//    compiled CUDA/cuDNN, driver, cuDNN, cuBLAS, the nvidia-* wheels beside torch
//    ("cuda.wheels.nvidia-cublas"), cuBLAS/TF32 variables), cuda:N (the SKU, SM
//    count, compute capability and memory of device N), or any (torch version and build, tool
//    version, ATen CPU capability and machine: synthetic inputs are drawn on the CPU, so those
//    change every device's inputs; unknown keys, conservatively). Keys that cannot change bits
//    are ignored but still listed: paths (tool.share_dir, torch.library_dir), identifiers
//    (cuda.devices[N].uuid, .index), cuda.reason, cpu.kernel, CUDNN_LOGINFO_DBG, and the
//    fingerprint's switches and threads.intra_op, which are compared per configuration instead:
//    each configuration's effective switches ("config.threads") are diffed with the same table
//    (`switch_affects`), since the fingerprint's defaults say nothing about a configuration that
//    sets its own.
// 3. Classification, per target x configuration, the first that applies:
//      incomparable      a side has no reference digests (raised, skipped, nothing completed);
//      match             the reference digests are identical (names, dtypes, shapes, bits);
//      nondeterministic  they differ, and the configuration diverged on either side: a
//                        different result was possible without any change;
//      explained         they differ, and an environment or switch change that can affect the
//                        target's device exists (all such changes are listed: the comparison
//                        cannot tell which one did it);
//      regression        they differ, and nothing that can affect this device changed.
//    A cuDNN change cannot explain a CPU target's difference; a torch change explains anything.
//
// Exit codes (report::finalize): regression fails (1), and so does nondeterministic unless the
// configuration was allowed by --allowlist. Explained does not fail by itself: the renderers say
// it prominently with the changes and a hint to re-save the baseline. Missing, added and
// incomparable do not fail (a crash is already exit 4 through the verdicts).
//
// The cost. Pure comparisons of strings; no torch, no processes. Nothing here reads a clock.
//
// When. The baseline file is read before any work (load_baseline_option, cli/), which sets
// SessionOptions::check_targets: the runners call it after the preflight and before any trial, so an
// identity mismatch costs nothing. After the audit, apply_baseline fills Report::baseline and calls
// report::finalize; name_changed_ops (audit/skeleton/changed_ops.h) then names the first changed op.
// --save-baseline is written with the other outputs (reports/baseline_file.h).
#pragma once

#include "audit/trial/analysis.h"
#include "reports/model.h"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace ra {

// A baseline as read: a baseline file (repro-audit/baseline) or a full report (repro-audit/report).
struct Baseline {
  std::string path;    // as given, for messages and the report's baseline.source
  std::string schema;  // which of the two it was
  report::Report results;
};

// Parses a baseline or a report; `what` names its role in messages ("baseline"). Throws
// InputError, one line naming the file: not JSON, another schema or version, a bad field.
Baseline parse_baseline(const std::string& text, const std::string& path, const std::string& what = "baseline");
// Whether some configuration of `r` kept its reference tensors (ConfigResult::reference_tensors):
// a comparison can then measure how far a changed tensor moved.
bool has_kept_tensors(const report::Report& r);

// Reads and parses the file (also InputError when it is missing or unreadable). Kept tensors
// (--baseline-tensors) are resolved beside it; a kept file that is missing is dropped with a warning.
Baseline load_baseline(const std::string& path, const std::string& what = "baseline");

// A target as a comparison sees it: its shared part, what its kind calls a target ("model",
// "probe", "command": reports/model.h, kKinds), and a model's run facts (null for other kinds).
struct Side {
  const report::Target* target = nullptr;
  const report::RunFacts* run = nullptr;
  std::string_view noun;
};
// The targets of a body as sides, in order (none for invariance and selftest).
std::vector<Side> sides(const report::Body& body);

// The baseline target that each of `current` pairs with (an index into `baseline`, or -1): same
// kind and name, then a lone unpaired model with a lone unpaired model.
std::vector<int> pair_targets(const std::vector<Side>& baseline, const std::vector<Side>& current);

// Throws InputError naming the first mismatch when the targets of `body` (identity set;
// configurations may be empty) were not made from the same targets as the baseline, or when no
// target or no configuration (`configs`, the run's names) is shared.
void check_baseline_targets(const Baseline& base, const report::Body& body, const std::vector<std::string>& configs);

// What a change of the fingerprint key can affect: "cpu", "cuda", "cuda:N", "any", or "" when it
// cannot change results (ignored). Keys are flattened: "cuda.devices[0].sm_count".
std::string key_affects(const std::string& key);
// Likewise for a configuration switch key ("threads", "cudnn.benchmark").
std::string switch_affects(const std::string& key);
// True when a change that affects `affects` can change the results of a target on `device`
// ("cpu", "cuda", "cuda:N"; "cuda" is device 0).
bool affects_device(const std::string& affects, const std::string& device);

// Flattened fingerprint keys whose values differ, in the current fingerprint's order and then the
// baseline's own keys: `changes` can change results, `ignored` cannot (affects "").
struct EnvironmentDiff {
  std::vector<report::EnvironmentChange> changes;
  std::vector<report::EnvironmentChange> ignored;
};
EnvironmentDiff diff_environments(const nlohmann::ordered_json& baseline, const nlohmann::ordered_json& current);

// torch, CUDA, cuDNN, cuBLAS and NCCL as each fingerprint names them (report::StackVersion), in
// that order: what `compare` names across an upgrade, changed or not.
std::vector<report::StackVersion> stack_versions(const nlohmann::ordered_json& baseline,
                                                 const nlohmann::ordered_json& current);

// Compares `current` with the baseline (step 3 of the essay), sets `current.baseline` and calls
// report::finalize. Throws InputError where check_baseline_targets does. With `diff`, a changed
// tensor whose reference tensors both sides kept (ConfigResult::reference_tensors) gets its
// distance (BaselineTensor::stats): the finish asks one worker for all (audit/skeleton/report_finish.h).
void apply_baseline(report::Report& current, const Baseline& base, const DiffFn& diff = {});

}  // namespace ra
