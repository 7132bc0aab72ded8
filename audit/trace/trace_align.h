// SPDX-License-Identifier: Apache-2.0
// Root cause from op traces: which op of a diverging run first computed something different.
//
// The problem. With `run --trace`, every repeat of a configuration leaves a trace
// (audit/trace/trace_record.h): the ATen ops it ran, forward and backward, with digests of their inputs and
// outputs. Once one op produces different bits, every op downstream reads different inputs and
// writes different outputs, so "the first op whose outputs differ" is the answer only when the
// two runs executed the same op stream. They need not: a run may take another code path (a
// data-dependent branch, a different cuDNN/cuBLAS choice that shows up as another op), insert or
// drop an op, or (with several threads) interleave differently. Comparing record i with record i
// would then blame whatever came after the first shift.
//
// The approach. First align, then compare.
//   * Alignment works per thread (thread 0 runs the model; a GPU's autograd thread may be 1),
//     since interleaving across threads is not part of what a model computes. Each record gets a
//     key of what identifies "the same op" without looking at values: kind, op name, phase, train
//     step, input dtypes and shapes, and for an op inside a backward node the node's name. Keys
//     are interned to integers and the two key streams are aligned by Myers' O(ND) difference
//     algorithm in its linear-space form (bisection at the "middle snake"), after stripping the
//     common prefix and suffix of every subrange. The result is a longest common subsequence:
//     matched pairs, in order on both sides, and gaps between them. Each gap is a structural
//     split. Unmatched records of the same key close to each other (within kReorderWindow
//     records of where the gap sits in the other stream) are then paired out of order, so a
//     reordered op is still compared; the split that holds it stays reported.
//   * Comparison walks the matched pairs in reference order (the reference run is the first
//     completed repeat). Inputs match when every input digest and the digest of the non-tensor
//     arguments are equal; outputs match when every output digest is (a backward node has no
//     outputs and always matches). The root cause is the first pair whose inputs matched and
//     whose outputs did not: that op turned equal inputs into different results. Every later pair
//     whose outputs differ is counted as propagated; those among them whose inputs matched are
//     counted again as independent mismatches (another nondeterministic op, or the same one
//     again), but only the first is named, since after it "equal inputs" can still hide state
//     that differs (an in-place buffer, an RNG offset).
//   * Provenance: an op inside a backward node (parent >= 0) or a node itself is "backward"; the
//     forward op it belongs to is found by autograd sequence number: the node's number S belongs
//     to the forward record of the same step with the greatest number <= S (a composite forward op
//     may create several nodes with consecutive numbers). That op's module path and source
//     location are what the user can look up. Ops of the optimizer phase are "optimizer".
//   * Across repeats, root causes and splits are deduplicated by their position in the reference
//     trace and carry how many runs (and which repeats) diverged there.
//
// The cost. Keys: one string per record, interned in a hash map, O(N) time and memory. Myers
// takes O((N+M)·D) time for D differing records and O(N+M) memory; two 50k-record runs with a few
// differences align in milliseconds, mostly the prefix/suffix scan. So that runs which share
// almost nothing cannot take quadratic time, each bisection stops after kMaxEditCost edit steps
// and splits at the furthest point its forward search reached (as GNU diff does when a diff gets
// "too expensive"): the alignment is then no longer minimal, which only matters for runs that are
// structurally different anyway. The reorder pass is O(U log U) for U unmatched records.
#pragma once

#include "audit/trace/trace_record.h"
#include "reports/target_model.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ra::trace {

// Unmatched records this far apart (in records of the other stream) may be paired as reordered.
inline constexpr size_t kReorderWindow = 256;
// Edit steps a bisection may take before it settles for a heuristic split.
inline constexpr size_t kMaxEditCost = 512;

// A gap in the in-order alignment of one thread's records: what each run has there.
struct Split {
  uint32_t thread = 0;
  size_t reference_index = 0;       // index into reference.records of the gap's first record (or the next
  size_t other_index = 0;           // record's, or records.size() at the end); likewise for the other run
  uint64_t reference_position = 0;  // `order` of that record; one past the last order at the end
  uint64_t other_position = 0;
  uint64_t unmatched_reference = 0;  // records in the gap on each side
  uint64_t unmatched_other = 0;
  uint64_t reordered = 0;  // of those (both sides), records paired out of order
};

struct Alignment {
  // Pairs of indices into reference.records and other.records, sorted by the reference index.
  std::vector<std::pair<size_t, size_t>> pairs;
  std::vector<Split> splits;  // sorted by reference index, then thread
};

// Longest common subsequence of two key streams (Myers, linear space, see above): matched index
// pairs, increasing on both sides.
std::vector<std::pair<size_t, size_t>> align_sequences(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b);

// Whether `op` returns uninitialised memory (aten::empty and kin): its outputs are not compared.
bool returns_uninitialised(const std::string& op);

// Aligns two traces thread by thread. Records must be sorted by `order` (read_trace does so).
Alignment align_traces(const Trace& reference, const Trace& other);

struct RunComparison {
  Alignment alignment;
  std::optional<size_t> root_cause;        // index into reference.records
  std::optional<size_t> root_cause_other;  // index into other.records
  std::vector<int> differing_outputs;      // output indices that differed at the root cause
  uint64_t propagated = 0;                 // later pairs whose outputs differed
  uint64_t independent_mismatches = 0;     // of those, pairs whose inputs matched
  // All pairs whose outputs differed, root cause included, except those whose inputs differed only
  // in memory no traced op wrote (uninitialised buffers of untraced kernels: NativeRT's).
  uint64_t output_mismatches = 0;
  bool identical() const { return output_mismatches == 0 && alignment.splits.empty(); }
};

// Compares `other` with `reference`. No root cause when no op turned matching inputs into
// differing outputs (final tensors may still differ: the caller reports that).
RunComparison compare_runs(const Trace& reference, const Trace& other);

// Where record `index` of `trace` sits in the model (see "Provenance" above).
struct Provenance {
  std::string direction;   // forward | backward | optimizer
  std::string node;        // backward: the autograd node
  std::string forward_op;  // backward: the forward op that created the node, "" when not found
  std::string module;      // of the op itself (forward) or of its forward op (backward)
  std::string source;
};
Provenance provenance(const Trace& trace, size_t index);

// "float32[8x64]"; "None" for an undefined tensor.
std::string describe(const TensorRef& t);

// Compares runs[1..] with runs[0] (the reference). `repeats[i]` is the repeat index of runs[i]
// (when `repeats` is empty, i is used).
report::TraceSummary analyse_traces(const std::vector<Trace>& runs, const std::vector<int>& repeats);

// `run --trace`, configuration-dependent: where each later group of `dep` parts from the first,
// from the reference repeats' traces of the groups' first configurations (`reference_traces[i]`
// is configuration i's, "" when it has none; `reference_repeats[i]` its repeat index). Fills
// dep.causes, one per group after the first; a trace that cannot be read gives a note instead.
void explain_dependence(report::ConfigDependence& dep, const std::vector<report::ConfigResult>& configs,
                        const std::vector<std::string>& reference_traces, const std::vector<int>& reference_repeats);

}  // namespace ra::trace
