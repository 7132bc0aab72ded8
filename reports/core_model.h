// SPDX-License-Identifier: Apache-2.0
// The report model's core, which every other concern builds on (reports/model.h joins them into a
// `Report`): verdicts and trial statuses, tensor digests, divergence statistics and tolerances, a
// configuration's switches and trials, the allowlist entry that accepted a finding, and one
// difference between two environments. Standard library only; the JSON writer and reader of these
// structs sit beside them in reports/core_json.cpp.
//
// Determinism of the tool's own output: every list here is kept in a defined order, and everything
// that depends on wall-clock time is marked "timing" and kept apart by the renderers.
#pragma once

#include "reports/referee_model.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ra::report {

enum class Verdict { Reproducible, Diverged, Raised, Crashed, Timeout, Skipped };
const char* to_string(Verdict v);
std::optional<Verdict> verdict_from_string(const std::string& s);

enum class TrialStatus { Ok, Raised, Error, ConfigError, Crashed, Timeout, Skipped };
const char* to_string(TrialStatus s);
std::optional<TrialStatus> trial_status_from_string(const std::string& s);

struct TensorDigest {
  std::string name;  // "param/fc.weight", "output", "step1/grad/fc.weight", ...
  std::string dtype;
  std::vector<int64_t> shape;
  std::string digest;  // 32 hex digits
  bool operator==(const TensorDigest&) const = default;
};

// How close two versions of a tensor must be for the informative tolerance verdict (--atol,
// --rtol): an element b is within it of the reference a when |a - b| <= atol + rtol * |a|
// (torch.allclose's rule). The bitwise verdict never depends on it; --tolerant lets a divergence
// that stays within it exit 0.
struct Tolerance {
  double atol = 0;
  double rtol = 0;
  bool operator==(const Tolerance&) const = default;
};

// torch.testing.assert_close's defaults for a dtype name ("float32": rtol 1.3e-6, atol 1e-5;
// "float16": 1e-3, 1e-5; "bfloat16": 1.6e-2, 1e-5; "float64": 1e-7, 1e-7; complex types as their
// parts); 0 and 0 (bitwise) for every other dtype.
Tolerance default_tolerance(const std::string& dtype);

// How two versions of one tensor differ; computed only for tensors whose digests differ.
struct DivergenceStats {
  int64_t numel = 0;
  int64_t differing = 0;     // elements whose bits differ
  int64_t first_index = -1;  // flat, row-major
  std::vector<int64_t> first_index_nd;
  double max_abs_diff = 0;  // over elements finite in both; NaN when none is
  double max_rel_diff = 0;  // |a-b| / max(|a|,|b|) over those elements (0..2); NaN when none is
  // Distance in units in the last place: representable values between a and b, over differing
  // elements finite in both and on one side of zero (integers: the plain distance). Elements on
  // opposite sides of zero or at zero are left out and counted in sign_differs: the floats between
  // them are mostly denormals, and counting those gives billions for a last-bit difference. NaN
  // when every differing element is left out.
  double max_ulp = 0;
  int64_t sign_differs = 0;      // differing elements on opposite sides of zero, or zero in exactly one (+0 vs -0 too)
  int64_t nan_mismatches = 0;    // elements NaN in exactly one, or NaN with other payload
  Tolerance tolerance;           // what beyond_tolerance counts against (the user's, else default_tolerance)
  int64_t beyond_tolerance = 0;  // differing elements not within `tolerance`, or not finite in both
  std::string note;              // e.g. "shape differs: 2x3 vs 3x2"
};

// True when the statistics show every differing element within their tolerance (false when
// they are only a note: nothing could be measured).
bool within_tolerance(const DivergenceStats& s);

struct TensorFinding {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string reference_digest;
  std::string other_digest;
  int diverging_trials = 0;  // trials (of this configuration) whose digest differs
  std::optional<DivergenceStats> stats;
  // The class of this difference against the float64 referee (reports/referee_model.h); nullopt
  // with --referee off and in reports written before it.
  std::optional<Classified> referee = {};
};

struct SwitchValue {
  std::string key;
  std::string requested;  // "" when the configuration does not name it
  std::string effective;  // read back in the child
  // exec: where the program set this switch itself ("train.py:12", the last time), "" when it did
  // not; `effective` is then the value it left in effect at exit.
  std::string set_at = {};
};

struct Trial {
  int repeat = 0;
  TrialStatus status = TrialStatus::Ok;
  int exit_code = 0;
  int signal = 0;
  std::string message;      // exception text, config mismatch, crash description
  std::string stderr_tail;  // last lines of the child's stderr for crashed/timeout/error trials
  std::string outcome;      // digest over all tensor digests of the trial ("" when it did not finish)
  double wall_ms = 0;       // timing (kept apart by renderers)
  double startup_ms = 0;    // process start to the first model op
  std::string device;       // --devices / --jobs on several GPUs: the GPU the trial ran on ("cuda:2"), else ""
};

// The allowlist entry that accepted a finding (audit/baseline/allowlist.h): its 0-based index, its reason,
// and its expiry date ("" when none).
struct AllowedBy {
  int entry = 0;
  std::string reason;
  std::string expires;
};

// One difference between two environments (a baseline's and the current one, or two machines of a
// fleet): a fingerprint key ("torch.version", "cuda.devices[0].sm_count") or a configuration's
// effective switch ("config.threads").
struct EnvironmentChange {
  std::string key;
  std::string baseline;  // the value as text; "(absent)" when that side does not have the key
  std::string current;
  std::string affects;  // cpu | cuda | cuda:N | any; "" for an ignored key (cannot change results)
};

// The median of `values` (the mean of the middle two for an even count), nullopt when empty.
std::optional<double> median(std::vector<double> values);

// A cost priced in interleaved rounds (a fix's time over its configuration's, paired by round): the
// median ratio and the lowest and highest per-round ratio. It is measurable only when that spread
// lies on one side of 1.0 and the rounds agree within 2x; otherwise every format says "cost not
// measurable on this machine now", never a number (issue 43: one command gave 44.75x, then 0.43x).
struct RoundCost {
  std::optional<double> ratio, low, high;
};
RoundCost round_cost(const std::vector<double>& ratios);
bool cost_measurable(const std::optional<double>& low, const std::optional<double>& high);
inline constexpr const char* kCostNotMeasurable = "not measurable on this machine now";
// "0.70x (0.62-0.81)", kCostNotMeasurable, or "" when there is no ratio.
std::string round_cost_text(const std::optional<double>& ratio, const std::optional<double>& low,
                            const std::optional<double>& high);

// Its words after "reproducible: ", for `completed` runs without a divergence and the Wilson 95%
// upper bound of their rate: "no divergence in 2 comparisons (3 runs); a divergence rate above 66%
// would have shown (95% confidence)". Also what `compare` says of a race no longer seen.
std::string no_divergence_text(int completed, double rate_high);

}  // namespace ra::report
