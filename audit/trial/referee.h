// SPDX-License-Identifier: Apache-2.0
// The float64 referee's parent side and the classes of a difference (issue 53; the report's words are
// in reports/referee_model.h). Nothing here runs a process: the drivers (audit/run/model_audit.cpp)
// start the referee child and the trials, and these functions turn their results into classes.
//
// The problem: a bitwise verdict says two results differ, not whether the difference matters. The
// approach: one more child per audit runs the model in float64 (ChildTask::Referee: deterministic
// algorithms, one thread on the CPU), every trial measures its floating tensors against that run
// (TrialResult::errors), and each difference between two results A and B of a tensor is classed from
// their errors eA and eB in their own dtype's ULP:
//   * reordering: max(eA, eB) <= max(kFloorUlp, kFactor * min(eA, eB)): both about as close to
//     float64 as one another; reorderings of one computation give errors of the same order;
//   * beyond-reordering: otherwise: one result is much further from float64 than the other, which
//     a different algorithm, a precision downgrade (TF32 ~2^13 ULP, bfloat16 ~2^16), an ignored mask
//     or a wrong value gives, and reordering does not;
//   * unclassified, with the reason: no referee (the line that says why), an integer or bool tensor
//     (compared bit for bit only), a NaN in the reference or a result, disagreeing infinities, a
//     shape that differs between the reference and the run.
// Reordering can move an ill-conditioned result (a sum of large terms that cancel: 1 + 2^24 - 2^24)
// arbitrarily many of its ULP from float64, so the ULP test alone would call it beyond reordering.
// Where it does, one more float64 child runs with each floating input moved by one rounding of its
// dtype (TrialSpec::perturb_inputs): how far that moves each tensor from the referee (its max abs) is
// how far rounding alone can move it, the tensor's sensitivity. A difference whose further result
// lies within kFactor times that of float64 is reordering of an ill-conditioned result after all
// (weigh_conditioning). Only the inputs are moved, so the sensitivity is a lower estimate: a model
// whose ill-conditioning lies in its weights or its own constants stays beyond reordering.
// Memory nobody wrote (torch.empty read before it is written) gives garbage that differs from process
// to process. A configuration with a difference the referee did not call reordering is rerun twice
// with deterministic algorithms and fill_uninitialized_memory on, under which torch fills what it
// allocates with NaN: a tensor whose reruns agree bit for bit and hold NaN it did not hold before is
// uninitialized memory (classify_uninitialized; with --trace the first differing op is named).
// With --trace, the first differing op gets a class of its own (classify_root_cause): the capture runs
// that repeat it keep its call, and the worker (`__op_class`, worker/trace/op_referee.h) reruns that
// one op in float64 on those inputs, and for a non-accumulating index write (index_put_, scatter_ ...)
// works out which elements were written more than once and with what. Every differing element written
// more than once and holding, in both runs, one of the values written to it is a write race; else the
// ULP rule above against the op's own float64 result. The differences of the configuration's tensors
// then follow a write race at the root (inherit_write_race). The cost: one float64 run per audit and a comparison per recorded floating
// tensor in each trial; with --trace, one float64 op call per root cause captured.
#pragma once

#include "audit/common/device.h"
#include "audit/trial/analysis.h"
#include "audit/trial/config.h"
#include "audit/trial/worker_protocol.h"
#include "reports/target_model.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ra {

// --referee: where the float64 referee runs, or off.
enum class RefereeMode { Cpu, Device, Off };
const char* to_string(RefereeMode m);
// "cpu", "device" or "off"; UsageError otherwise.
RefereeMode parse_referee_mode(const std::string& s);

// The classes' bound (a heuristic, see the top of this file): two errors within kFactor of each
// other, or both within kFloorUlp, are of one order. kFloorUlp keeps last-bit noise (0 against 3
// ULP) a reordering; kFactor is far below the gaps a downgrade or a bug opens (orders of magnitude).
inline constexpr double kFloorUlp = 16;
inline constexpr double kFactor = 8;

// The referee child's configuration: deterministic algorithms in warn-only mode (deterministic
// kernels wherever torch has them, and no error where it has none: the referee must run), and on the
// CPU one intra-op thread.
Config referee_config(const Device& where);

// What the referee child's result says, for the report: ran, or one line saying why not ("its float64
// run raised: ...", "an op has no float64 kernel: ...", "not float64 throughout: ..."). `outcome` and
// `result` are the child's; `summary` its trial summary's message (crash, timeout).
report::Referee referee_outcome(RefereeMode mode, const Device& where, const report::Trial& summary,
                                const std::optional<TrialResult>& result);
// The referee of an AOTInductor package, which cannot run (one line, without a child).
report::Referee referee_refused(RefereeMode mode, const Device& where, const std::string& why);

// The class of one difference between results `a` and `b` (named a_run, b_run) of finding `f`, from
// their errors against the referee (nullptr: not measured).
report::Classified classify_difference(const report::TensorFinding& f, const report::Referee& referee,
                                       const std::string& a_run, const report::ReferenceError* a,
                                       const std::string& b_run, const report::ReferenceError* b);

// A configuration's referee part from its runs: the reference repeat's errors, and for each diverged
// tensor its class against the repeat that differed from the reference and lies furthest from
// float64, and the summary.
void attach_referee(report::ConfigResult& c, const std::vector<TrialRun>& runs, const report::Referee& referee);

// The classes of configuration dependence: each differing tensor of the first two groups' first
// configurations, from their reference repeats' errors (ConfigResult::referee, so that merge can
// class a dependence across shards too), and the summary.
void classify_dependence(report::ConfigDependence& d, const std::vector<report::ConfigResult>& configs,
                         const report::Referee& referee);

// The configuration under which memory nobody wrote is filled: `config` with deterministic algorithms
// on (warn-only where they were off, so that an op without a deterministic kernel does not stop it)
// and fill_uninitialized_memory on. nullopt when `config` has both already: a floating difference
// there did not come from such memory.
std::optional<Config> fill_rerun_config(const Config& config);
// Whether configuration `c` has a floating difference that the referee did not call reordering (and
// a fill rerun may explain).
bool worth_fill_rerun(const report::ConfigResult& c);
// Re-classes those differences of `c` from its reruns under fill_rerun_config (named `rerun`): a
// tensor whose first two reruns agree bit for bit and hold more NaN than the configuration's
// reference run held is uninitialized; `op` names the trace's first differing op ("" without one).
void classify_uninitialized(report::ConfigResult& c, const std::vector<TrialRun>& reruns, const std::string& rerun,
                            const std::string& op);

// The class of the trace's first differing op `rc` from the worker's facts about it (`__op_class`):
// a write race when some elements were written more than once and every differing element is one of
// them holding, in both capture runs, a value written to it; else the ULP rule against the op's own
// float64 rerun; else unclassified with the facts' note.
report::Classified classify_root_cause(const report::RootCause& rc, const OpClassAnswer& facts);
// Where configuration `c`'s first root cause is a write race, its tensors' differences (but those read
// from memory nobody wrote) are that race's, carried on (their errors kept).
void inherit_write_race(report::ConfigResult& c);

// Whether any difference of `configs` or `d` is classed beyond reordering (and the conditioning run
// is worth its child).
bool any_beyond_reordering(const std::vector<report::ConfigResult>& configs,
                           const std::optional<report::ConfigDependence>& d);
// Re-weighs each beyond-reordering difference against `sensitivity` (the conditioning run's errors
// against the referee, by tensor name; see the top of this file), and the summaries with them.
void weigh_conditioning(std::vector<report::ConfigResult>& configs, std::optional<report::ConfigDependence>& d,
                        const std::vector<report::ReferenceError>& sensitivity);

// The errors of `runs` against the referee: per floating tensor, the furthest over the completed
// runs (a run's error with a note, a NaN or a disagreeing infinity counts as furthest), in the
// first run's order. Empty when no run measured any (no referee).
std::vector<report::ReferenceError> furthest_errors(const std::vector<TrialRun>& runs);
// A fix candidate's effect on the error against float64 (reports/referee_model.h, FixAccuracy): its
// errors against `failing` (the failing configuration's reference repeat's), tensor by tensor, with
// the classes' bound. nullopt when no tensor has figures on both sides (no referee: nothing claimed).
std::optional<report::FixAccuracy> judge_fix_accuracy(const std::vector<report::ReferenceError>& failing,
                                                      const std::vector<report::ReferenceError>& candidate);

}  // namespace ra
