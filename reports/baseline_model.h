// SPDX-License-Identifier: Apache-2.0
// The comparison with a baseline that a report carries (`--baseline`, `compare`). The JSON writer
// and reader of these structs sit beside them in reports/baseline_json.cpp; the baseline file
// itself is reports/baseline_file.h.
#pragma once

#include "reports/core_model.h"
#include "reports/referee_model.h"
#include "reports/trace_model.h"

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ra::report {

// The comparison with a baseline (`--baseline FILE` on run and probes, `repro-audit compare A B`;
// audit/baseline/baseline.h opens with the essay): what changed in the environment, and for each target x
// configuration whether the results still match the baseline's.
enum class BaselineStatus {
  Match,             // the same reference digests
  Explained,         // digests differ, and something that can affect this device changed
  Regression,        // digests differ, nothing that affects this device changed, neither side diverged
  Nondeterministic,  // digests differ, and the configuration diverged in the baseline or here
  Incomparable,      // a side has no reference (raised, crashed, timed out or skipped on every repeat)
  Missing,           // in the baseline only
  Added,             // in the current results only
};
const char* to_string(BaselineStatus s);
std::optional<BaselineStatus> baseline_status_from_string(const std::string& s);

// A tensor whose bits differ from the baseline's; a side is nullopt where the tensor is absent.
struct BaselineTensor {
  std::string name;
  std::optional<TensorDigest> baseline;
  std::optional<TensorDigest> current;
  // How far it moved (max abs, ULP, ...): where both sides kept their reference tensors (a
  // baseline saved with --baseline-tensors) and the dtype and shape agree.
  std::optional<DivergenceStats> stats = std::nullopt;
  // Its direction against the float64 referee: the class of the change, the baseline's result as a
  // and the current one as b, from the errors each side's reference repeat kept (BaselineDirection).
  std::optional<Classified> referee = std::nullopt;
};

// Which way a changed result moved against the float64 referee (issue 53: an upgrade's direction).
// Each tensor whose bits changed is classed as a difference between the baseline's result and the
// current one (audit/baseline/upgrade_direction.h), from the errors against float64 that each side's
// reference repeat kept (ConfigResult::referee, which a baseline file keeps too): reordering (both
// within one order of float64: neither is more right), or beyond reordering, further from float64
// in the current results or closer. Counted over every changed tensor, not only those listed.
struct DirectionGroup {
  int count = 0;
  std::string tensor;       // the one whose errors lie furthest apart (the first such)
  double baseline_ulp = 0;  // its error on each side, in its dtype's ULP
  double current_ulp = 0;
};
struct BaselineDirection {
  // Why no class is claimed, in one clause ("the baseline holds no errors against float64: ..."),
  // "" when the tensors were classed.
  std::string note;
  int reordering = 0;
  double baseline_max_ulp = 0, current_max_ulp = 0;  // the largest error of a reordering tensor on each side
  DirectionGroup further;                            // beyond reordering, further from float64 now
  DirectionGroup closer;                             // beyond reordering, closer to float64 now
  int unclassified = 0;
  std::string unclassified_why;  // the first one's reason
  int classed() const { return reordering + further.count + closer.count + unclassified; }
};
// Two results' directions as one (a comparison's over its results): counts add, the largest errors
// and the widest gaps are kept, the first note and reason stand.
void add_direction(BaselineDirection& into, const BaselineDirection& d);

// The differing tensors a result lists (then a count).
inline constexpr size_t kBaselineTensorsListed = 20;

// The repeats behind one side's verdict: completed runs, of them diverging from the reference run,
// and the Wilson 95% interval of the divergence rate over their comparisons (ConfigResult's).
struct RepeatEvidence {
  int completed = 0;
  int diverging = 0;
  double rate_low = 0, rate_high = 0;
};

struct BaselineResult {
  std::string target;
  std::string config;
  BaselineStatus status = BaselineStatus::Match;
  std::optional<Verdict> baseline_verdict;        // nullopt when added
  std::optional<Verdict> current_verdict;         // nullopt when missing
  std::string reason;                             // one sentence
  std::vector<EnvironmentChange> switch_changes;  // this configuration's effective switches that differ
  std::vector<std::string> explained_by;          // explained: keys of the changes that can affect the target's device
  size_t tensors = 0;                             // tensors compared: the union of both reference lists
  size_t differing = 0;                           // of those, differing in digest, dtype or shape, or on one side only
  std::vector<BaselineTensor> differing_tensors;  // the first kBaselineTensorsListed, in execution order
  // Digests differ and both sides hold an op stream (--trace): the first op whose inputs matched
  // the baseline's and whose outputs did not (runs_compared 1); op_note says why none is named.
  std::optional<RootCause> first_changed_op;
  std::string op_note;
  // Each side's repeats, where its verdict is a rate over repeats (run, probes, exec; not
  // invariance, and not in reports written before them): what "newly fixed" needs.
  std::optional<RepeatEvidence> baseline_repeats, current_repeats;
  // Digests differ: which way the changed tensors moved against the float64 referee (nullopt
  // when nothing changed, and in reports written before it).
  std::optional<BaselineDirection> direction;
};

// A paired model whose file's bytes differ from the baseline's while it can still be compared
// (audit/baseline/identity.h): saved again, or the same graph with other weights.
struct ModelChange {
  std::string target;
  std::string relation;  // "resaved" | "other_weights"
  std::string reason;    // one sentence, with the digests
};

// One component of the software stack as each side's fingerprint names it ("torch", "CUDA",
// "cuDNN", "cuBLAS", "NCCL"), whether or not it changed, so that a comparison across an upgrade
// says what was upgraded. A side without the component has "(absent)".
struct StackVersion {
  std::string name;
  std::string baseline;
  std::string current;
  bool changed() const { return baseline != current; }
};

// What an upgrade did to determinism, read from each result's two verdicts: a configuration that
// was reproducible and now diverges, one that diverged and now reproduces, and one that now raises
// (under `det`, an op that lost or gained its deterministic implementation). "target / config".
// A race that did not show in the current repeats is newly fixed only where those repeats exclude
// it: their rate's upper bound lies below the lower bound of the rate it had in the baseline; else
// it is not_seen, never "fixed" (issue 54: four probe races "newly fixed" by the luck of 3 repeats).
struct BehaviourChanges {
  std::vector<std::string> newly_divergent;
  std::vector<std::string> newly_fixed;
  std::vector<std::string> not_seen;
  std::vector<std::string> newly_raising;
  std::vector<std::string> no_longer_raising;
  // Per name in newly_fixed and not_seen with repeats on both sides: those repeats in words ("no
  // divergence in 2 comparisons (3 runs); a divergence rate above 66% would have shown (95%
  // confidence); before, 1 of 2 comparisons diverged").
  std::map<std::string, std::string> repeats;
  size_t kept_bits = 0;     // results whose reference digests all match
  size_t changed_bits = 0;  // results whose digests differ (explained, regression, nondeterministic)
  bool empty() const {
    return newly_divergent.empty() && newly_fixed.empty() && not_seen.empty() && newly_raising.empty() &&
           no_longer_raising.empty();
  }
};
struct BaselineComparison;
BehaviourChanges behaviour_changes(const BaselineComparison& b);

// What the direction lines call the two sides: "torch 2.11.0" and "torch 2.15.0" where torch's
// version changed (`stack`), else "the baseline" and "the current results".
struct SideNames {
  std::string baseline, current;
};
SideNames side_names(const std::vector<StackVersion>& stack);
// "direction vs float64: torch 2.15.0 changed 12 tensors, all within 2 ULP of float64 under both
// releases: reordering; neither is more right", "... 3 tensors 40x further from float64 under torch
// 2.15.0 (output: 310 ULP where torch 2.11.0 had 8): beyond reordering; investigate as a bug ...",
// or "direction vs float64: not known: <note>": the line every renderer prints for a direction.
std::string direction_line(const BaselineDirection& d, const SideNames& names);
// The comparison's direction over all its results (add_direction), nullopt when no result has one.
std::optional<BaselineDirection> comparison_direction(const BaselineComparison& b);

struct BaselineComparison {
  std::string source;                      // the baseline file as given
  std::string schema;                      // what it was: repro-audit/baseline or repro-audit/report
  std::string tool_version;                // the repro-audit that wrote it
  std::vector<EnvironmentChange> changes;  // fingerprint keys that differ and can change results
  std::vector<EnvironmentChange> ignored;  // fingerprint keys that differ but cannot (paths, identifiers)
  std::vector<StackVersion> stack;         // torch, CUDA, cuDNN, cuBLAS, NCCL on each side (absent in older reports)
  std::vector<ModelChange> models;         // models matched by content, not bytes
  std::vector<BaselineResult>
      results;                     // current targets x configurations in order, the baseline's own after each target
  bool fail_on_explained = false;  // --fail-on-explained: an explained result fails the exit code too
};

}  // namespace ra::report
