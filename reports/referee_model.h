// SPDX-License-Identifier: Apache-2.0
// The float64 referee and the classes of a difference (issue 53): what the report says about whether
// a difference matters. The JSON writer and reader of these structs sit beside them in
// reports/referee_json.cpp; what is computed over them (the referee's own bound, the lines every
// renderer prints) in reports/referee_model.cpp. Standard library only.
//
// Bitwise sameness is the verdict; the referee says how far each result lies from a better
// reference. The model runs once more per audit in float64 (parameters, buffers, floating inputs and
// the graph's floating dtype arguments cast), by default on the CPU with deterministic algorithms and
// one thread, and every trial measures each of its floating tensors against the referee's tensor of
// the same name (ReferenceError). Each difference the tool reports then gets a class (Classified):
// float reordering (both results as close to float64 as reordering explains), a write race, memory
// nobody wrote (it goes under fill_uninitialized_memory), or beyond reordering (one result much
// further from float64: a bug to investigate); else unclassified, with the reason.
//
// float64 is a better reference, not the truth: it computes the same operations with a unit
// roundoff of 2^-53, so its own error in a float32 result's ULP is about that result's error times
// 2^(24 - 53) (referee_own_ulp), shown beside every figure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ra::report {

// How far one floating tensor of a result X lies from the referee's tensor R of the same name.
// Integer and bool tensors are compared bit for bit only and have none.
struct ReferenceError {
  std::string name;   // "output", "step1/grad/fc.weight"
  std::string dtype;  // X's ("float32", "bfloat16", ...)
  int64_t numel = 0;
  // Over elements finite in both: the largest distance between x and R rounded to X's dtype, in
  // representable values of X's dtype counted through zero (the project's ULP); the largest
  // |x - R|; and the largest |x - R| / max(|x|, |R|). NaN when no element is finite in both.
  double max_ulp = 0;
  double max_abs = 0;
  double max_rel = 0;
  int64_t nonfinite = 0;      // elements where x and R disagree and either is NaN or infinite
  int64_t nan_result = 0;     // elements NaN in x
  int64_t nan_reference = 0;  // elements NaN in R
  // Why there are no figures ("shape differs from the referee's: 2x3 vs 3x2", "the referee has no
  // tensor of this name"), "" when there are.
  std::string note;
};

// The bits of precision of a floating dtype's significand (float32 24, float16 11, bfloat16 8,
// float64 53, float8 e4m3 4, e5m2 3), 0 for any other name.
int significand_bits(const std::string& dtype);
// float64's own error, in `dtype`'s ULP, beside an error of `ulp` of a result of that dtype: about
// ulp * 2^(p - 53). The referee computes the same operations with a unit roundoff 2^-53 instead of
// 2^-p, so its error is that much smaller than the result's; below 1 ULP unless the result's own is
// enormous. NaN for a dtype without a significand.
double referee_own_ulp(const std::string& dtype, double ulp);

// The classes of a difference, in order of severity, the most severe first (a summary names the most
// severe present).
enum class DifferenceClass { BeyondReordering, WriteRace, Uninitialized, Unclassified, Reordering };
inline constexpr int kDifferenceClasses = 5;
const char* to_string(DifferenceClass c);  // "beyond-reordering", "write-race", "uninitialized", ...
std::optional<DifferenceClass> difference_class_from_string(const std::string& s);

// The class of one difference between two results of one tensor: a configuration's reference repeat
// and another repeat, or the reference repeats of two configurations.
struct Classified {
  DifferenceClass cls = DifferenceClass::Unclassified;
  // The evidence in one sentence ("both within 3 and 4 ULP of float64; neither is more right"), or
  // for Unclassified the reason ("no referee: ...", "NaN in the reference").
  std::string why;
  std::string a_run, b_run;            // what the two results are: "repeat 0", "repeat 2", or two configurations' names
  std::optional<ReferenceError> a, b;  // each result's error against the referee, where measured
  // Uninitialized and write races: the op the trace named ("" when none); for a write race the
  // first few duplicate indices and how many there are.
  std::string op;
  std::vector<int64_t> indices;
  int64_t index_count = 0;
};

// A summary over the classes of several differences: the most severe present, the tensor that has
// it (the first of them) with its evidence, and how many differences have each class.
struct ClassSummary {
  DifferenceClass cls = DifferenceClass::Unclassified;
  std::string tensor;
  std::string why;
  std::vector<int> counts = std::vector<int>(kDifferenceClasses, 0);  // indexed by DifferenceClass
};

// A configuration's part: the reference repeat's error per floating tensor, and for a diverged
// configuration the summary of its differences' classes.
struct ConfigReferee {
  std::vector<ReferenceError> errors;  // in record order
  std::optional<ClassSummary> summary;
};

// The target's part: where the referee ran, or in one line why it did not (and then every class is
// unclassified with that reason, and the bitwise verdict stands).
struct Referee {
  std::string mode;    // "cpu" | "device" (as --referee asked; `off` leaves the report without one)
  std::string device;  // where it ran: "cpu", "cuda:0"
  bool ran = false;
  std::string note;  // why not: "an AOTInductor package: its kernels are compiled for one dtype"
};

// The most severe class of `classes` with its tensor, and the counts; nullopt when empty.
std::optional<ClassSummary> summarise_classes(const std::vector<std::pair<std::string, Classified>>& classes);

// "reordering - output: both within 3 and 4 ULP of float64; neither is more right (float64's own
// error here < 0.01 ULP)": the line every renderer prints for a summary (with the other classes'
// counts when there are several).
std::string class_summary_line(const ClassSummary& s);
// "error vs float64: output 3 ULP (abs 1.19e-07, rel 2.4e-08; float64's own error here < 0.01 ULP)"
// for a configuration's errors: the tensor furthest from float64 in its own ULP, and how many floating
// tensors were measured when there are several; a tensor without figures is named with its note
// instead; "error vs float64: no floating tensor (integer and bool tensors are compared bit for bit
// only)" when none. What every renderer prints under a configuration.
std::string errors_line(const std::vector<ReferenceError>& errors);
// A configuration's referee lines, as every renderer prints them: its errors_line where the referee
// ran, and the summary of its differences' classes where it has one. None without a referee.
std::vector<std::string> config_referee_lines(const std::optional<Referee>& target,
                                              const std::optional<ConfigReferee>& config);
// "class: write-race - aten::index_put_ wrote 64 elements more than once ...": the line every renderer
// prints under a trace's root cause for its class.
std::string classified_line(const Classified& c);
// The line under a target whose referee did not run ("float64 referee: did not run: ..."), "" when it ran.
std::string referee_note_line(const Referee& r);
// An error in ULP as the lines print it: a count ("3"), or three digits once it is large ("4.19e+06").
std::string ulp_figure(double ulp);
// "float64's own error here < 0.01 ULP" for an error of `ulp` in `dtype`'s ULP, "" without a figure.
std::string referee_bound_text(const std::string& dtype, double ulp);

// A fix's effect on the error against float64 (issue 53 item 3). Bitwise sameness can be bought by
// computing worse (a deterministic path through TF32 or bfloat16), so the fix search measures each
// candidate's floating tensors against the referee as it does the failing configuration's, and
// compares each tensor's error with the failing configuration's reference repeat's (audit/trial/
// referee.h, judge_fix_accuracy): a downgrade when some tensor's error rises above the classes' bound
// max(kFloorUlp, kFactor x the failing configuration's error); closer when it falls below the same
// bound taken the other way; unchanged when every tensor's error is the same; else of the same order.
enum class AccuracyChange { Unchanged, SameOrder, Closer, Downgrade };
const char* to_string(AccuracyChange c);  // "unchanged", "same-order", "closer", "downgrade"
std::optional<AccuracyChange> accuracy_change_from_string(const std::string& s);

struct FixAccuracy {
  std::vector<ReferenceError> errors;  // the candidate's per floating tensor, the furthest over its repeats
  AccuracyChange change = AccuracyChange::Unchanged;
  // The tensor the line names: for a downgrade the one that rose furthest above its bound, else the
  // one furthest from float64; with the candidate's error and the failing configuration's.
  std::string tensor;
  double max_ulp = 0;
  double from_ulp = 0;
  bool downgrade() const { return change == AccuracyChange::Downgrade; }
};

// "error vs float64 unchanged (max 2 ULP)", "error vs float64 of the same order (max 5 ULP where
// default had 3)", "closer to float64 (max 3 ULP where default had 310)" or "max 310 ULP from
// float64 where default had 3: a downgrade" (with the tensor's name when several were measured):
// what every renderer prints beside a fix's cost; `from` is the failing configuration.
std::string fix_accuracy_text(const FixAccuracy& a, const std::string& from);

// The JSON of a ReferenceError, which the trial protocol (audit/trial/trial_spec.h) carries too.
nlohmann::ordered_json reference_error_to_json(const ReferenceError& e);
ReferenceError reference_error_from_json(const nlohmann::ordered_json& j);  // throws ReportError

}  // namespace ra::report
