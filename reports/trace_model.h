// SPDX-License-Identifier: Apache-2.0
// What `run --trace` adds to a configuration (audit/trace/): the root causes and structural splits
// of its divergence, the fix search, and the op stream that baselines keep. The JSON writer and
// reader of these structs sit beside them in reports/trace_json.cpp.
#pragma once

#include "reports/core_model.h"
#include "reports/referee_model.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ra::report {

// What `run --trace` found in a configuration (audit/trace/trace_align.h): the first op of each diverging
// run whose inputs matched the reference run and whose outputs did not, and where the op streams
// themselves differ. Positions are `order` values in the reference run's trace.
struct RootCause {
  std::string op;                            // "aten::index_add", or an autograd node
  std::string direction;                     // forward | backward | optimizer
  std::string node;                          // backward: the autograd node the op ran in ("IndexAddBackward0"); else ""
  std::string forward_op;                    // backward: the forward op that created the node, "" when not found
  std::string module;                        // module path of the op (forward) or of its forward op, "" when unknown
  std::string source;                        // source location, likewise ("model.py:12")
  std::string phase;                         // forward | backward | optimizer: what the trial was doing
  int step = 0;                              // train step (1-based), 0 in infer mode
  uint32_t thread = 0;                       // 0 runs the model; an autograd device thread may be 1
  uint64_t position = 0;                     // `order` in the reference trace
  std::vector<std::string> inputs, outputs;  // "float32[8x64]", "None" for an undefined tensor
  std::vector<int> differing_outputs;        // output indices that differed (union over runs)
  int runs_diverged = 0;                     // runs whose root cause is here
  int runs_compared = 0;                     // runs compared with the reference
  std::vector<int> repeats;                  // repeat indices of the runs whose root cause is here
  uint64_t propagated = 0;                   // later ops whose outputs differed (most over those runs)
  uint64_t independent_mismatches = 0;       // of those, ops whose inputs matched (further causes, not listed)
  std::optional<DivergenceStats> stats;      // of the first differing output, where a dump allowed it
  std::vector<size_t> fixed_by;              // indices into the configuration's fix_search->candidates that fix it
  // The class of its first differing output (issue 53): from the op run once more in float64 on the
  // inputs a capture run kept, or, for an index write that wrote some elements more than once and whose
  // differing elements each hold one of the values written there, a write race. nullopt without a
  // capture or with --referee off.
  std::optional<Classified> referee;
};

// A place where the op streams of two runs differ (an op inserted, deleted or reordered).
struct StructuralSplit {
  uint32_t thread = 0;
  uint64_t reference_position = 0;   // `order` in the reference where the gap starts (the next record's
                                     // when the reference has none there; one past the end at the end)
  uint64_t other_position = 0;       // likewise in the first run that split here
  std::string reference_op;          // the reference's first record in the gap, "" when none
  std::string other_op;              // the other run's first record in the gap, "" when none
  uint64_t unmatched_reference = 0;  // records in the gap on each side (most over runs)
  uint64_t unmatched_other = 0;
  uint64_t reordered = 0;  // of those, records found elsewhere in the other stream and compared
  int runs = 0;            // runs that split here
  std::vector<int> repeats;
};

struct TraceSummary {
  uint64_t records = 0;                 // records in the reference run's trace
  uint64_t dropped = 0;                 // records not kept because a trace was full (most over runs)
  uint64_t capacity = 0;                // tensor digests a trace could hold
  uint64_t memory_bytes = 0;            // memory a trace held in its child (most over runs)
  int runs_compared = 0;                // runs compared with the reference run
  int runs_identical = 0;               // of those, runs with the same op stream and no output that differed
  std::vector<RootCause> root_causes;   // in reference order
  std::vector<StructuralSplit> splits;  // in reference order
};

// One configuration the fix search tried (audit/trace/fix_search.h).
struct FixCandidate {
  std::vector<std::pair<std::string, std::string>> toggles;  // switch key -> value, applied to the failing config
  std::string config;                                        // as --configs spells it: "default+threads=1"
  std::string stage;                                         // single | combined | reduced
  Verdict verdict = Verdict::Reproducible;
  std::string message;               // why it raised, crashed or timed out
  std::vector<uint64_t> fixes;       // positions of the failing config's root causes that no longer diverge
  bool fixes_all = false;            // the model is reproducible under it
  bool minimal = false;              // a fixing set none of whose toggles can be dropped
  std::string cpp, python;           // ready-to-paste snippets that set the toggles
  std::optional<double> median_ms;   // timing: median of the timed runs
  std::optional<double> cost_ratio;  // timing: median over rounds of this fix's time over the failing configuration's
  // timing: the lowest and highest of those per-round ratios. Rounds interleave the fix with the
  // failing configuration (A B A B ...), so a busy machine slows both sides of a pair; with
  // kTimingRounds rounds the median ratio lies in [low, high] with 94% confidence.
  std::optional<double> cost_low, cost_high;
  // Its effect on the error against the float64 referee (issue 53): nullopt without a referee (off,
  // an AOTInductor package, a float64 run that failed), and then nothing is claimed.
  std::optional<FixAccuracy> accuracy;
  bool downgrade() const { return accuracy && accuracy->downgrade(); }
};

inline constexpr int kTimingRounds = 5;

// True when two fixes' cost intervals overlap: neither can be called cheaper (both measurable).
bool same_cost(const FixCandidate& a, const FixCandidate& b);

// An op that raises under deterministic mode: it has no deterministic implementation here.
struct NoDeterministicImplementation {
  std::string op;       // as the alert names it ("index_add_cuda_")
  std::string message;  // the alert
  std::string advice;   // from the knowledge base, "" when it has no entry
  std::vector<std::string> alternatives;
};

struct FixSearch {
  std::string from;                      // the failing configuration
  int repeats = 0;                       // traced repeats per candidate (with repeats_auto, the most any used)
  bool repeats_auto = false;             // --repeats auto: each candidate ran until decided
  int timed_runs = 0;                    // timed runs per timing child (after one warm-up run)
  std::vector<FixCandidate> candidates;  // singles in switch-table order, then combined, then reductions
  std::vector<size_t> best;  // minimal fixing candidates, in candidate order (cost order is a timing figure)
  std::vector<NoDeterministicImplementation> no_deterministic;
  std::string conclusion;                    // one sentence
  std::optional<double> baseline_median_ms;  // timing
};

// A traced configuration's op stream, compact enough to keep in a report and a baseline, so that
// a later run (--baseline, compare) can name the first op whose results changed (audit/trace/
// op_stream.h has the format and the comparison). No tensor values: per record a hash of what the
// op is and hashes of its inputs' and outputs' digests. What names the ops (`ops` and each
// thread's `names`) is kept in reports only; a baseline keeps the 32 characters per record.
struct OpStreamOp {  // one distinct op, what names it in a report
  std::string op;
  std::string phase;      // forward | backward | optimizer
  std::string direction;  // forward | backward | optimizer
  std::string node;       // backward: the autograd node
  std::string forward_op;
  std::string module;
  std::string source;
};
struct OpStreamThread {
  uint32_t thread = 0;
  uint64_t records = 0;
  std::string
      packed;         // base64, 24 bytes per record: key hash (48 bits), step (16), inputs hash (64), outputs hash (64)
  std::string names;  // base64, 3 bytes per record: its index in `ops` ("" in a baseline)
};
struct OpStream {
  std::vector<OpStreamOp> ops;  // empty in a baseline
  std::vector<OpStreamThread> threads;
  uint64_t records() const;
  uint64_t packed_bytes() const;  // the records: 32 characters each
  // The same stream without what names the ops, as a baseline keeps it.
  OpStream without_names() const;
};

// Whether the fix search's costs were measured: the search times its candidates only when one
// fixes the configuration (audit/trace/fix_search.h). Renderers say so instead of an empty table.
bool fix_costs_measured(const FixSearch& f);

// The cheapest minimal fix of a fix search: a fix that is no downgrade (FixCandidate::accuracy)
// before a downgrade, then the lowest measurable cost (core_model.h's cost_measurable), those before
// the others, then candidate order; null when no candidate fixes everything. Every renderer names
// this one, so no two formats can disagree about it.
const FixCandidate* cheapest_fix(const FixSearch& f);
// Whether cheapest_fix is known to be the cheapest: it is the only minimal fix, or its cost was
// measurable. Otherwise renderers name it as a fix, not the cheapest one.
bool cheapest_known(const FixSearch& f);
// The other minimal fixes whose cost intervals overlap the cheapest's: they cost the same within
// noise, and the renderers say so instead of calling one cheaper (a downgrade only beside a downgrade).
std::vector<const FixCandidate*> fixes_costing_the_same(const FixSearch& f);
// The minimal fixes that cheapest_fix passed over because they are downgrades: the renderers name the
// cheapest "without a downgrade" then, and each of these with the word.
std::vector<const FixCandidate*> downgrades_passed_over(const FixSearch& f);

}  // namespace ra::report
