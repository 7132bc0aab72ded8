// SPDX-License-Identifier: Apache-2.0
// Fix search: the smallest set of switches that makes a diverging configuration reproducible, and
// what it costs.
//
// The problem. A configuration diverged; its root causes are known (audit/trace/trace_align.h). Users
// want the cheapest flags that make it reproducible, measured, not guessed: the documentation
// says what a switch is meant to do, not whether it fixes this model on this machine, nor what it
// costs here.
//
// The approach. Starting from the failing configuration, each candidate switch is toggled alone
// toward its deterministic setting (only switches that matter on the device, and only where the
// failing configuration's effective value differs; the attention backends, sdpa.*, only when a root
// cause is an attention op). Each candidate runs the model's repeats with
// the trace on, so that besides "reproducible or not" it tells which of the failing root causes
// still diverge. When no single toggle makes the model reproducible, all the toggles that did not
// raise are applied together; if that works, toggles are dropped one at a time while the model
// stays reproducible, which leaves a minimal set (no toggle of it can be dropped). A toggle that
// makes an op raise (deterministic mode on an op without a deterministic implementation) names
// the op, and the report gives the alternatives: a deterministic formulation, running the op on
// the CPU, or warn-only mode plus an allowlist entry. Where the float64 referee ran, each candidate's
// errors against it are compared with the failing configuration's (judge_fix_accuracy, audit/trial/
// referee.h): a fix that is reproducible only by computing further from float64 is a downgrade, named
// after the fixes that are not, and never without the word. When a fix was found, every candidate that
// ran (fixing or not) is then timed against the failing configuration in uninstrumented children
// (the median of the timed runs after a warm-up run), side by side, so the cost ratios come from
// one sitting; when none was, nothing is timed.
//
// The cost. One traced trial per candidate and repeat (at most one per switch, plus the
// combination and its reduction), then one timing child per candidate that ran and one for the
// baseline.
#pragma once

#include "audit/common/device.h"
#include "audit/trial/config.h"
#include "reports/target_model.h"
#include "reports/trace_model.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ra {

struct Toggle {
  std::string key;
  std::string value;
};

// Toggles toward determinism that can change `failing` on `device`: a switch is left out when its
// effective value in the failing trials already is the target.
std::vector<Toggle> candidate_toggles(const report::ConfigResult& failing, const Device& device);

// `base` with `toggles` applied, named as --configs would spell it ("default+threads=1").
Config with_toggles(const Config& base, const std::vector<Toggle>& toggles);

// What running a candidate configuration gave.
struct CandidateOutcome {
  report::Verdict verdict = report::Verdict::Reproducible;
  std::string message;                         // the raise / crash message
  std::vector<report::RootCause> root_causes;  // from its trace, when it diverged
  // Its floating tensors' errors against the float64 referee, the furthest over its repeats
  // (furthest_errors, audit/trial/referee.h); empty without a referee.
  std::vector<report::ReferenceError> errors;
};

// Seams, so the search can be tested without processes: run a configuration's traced repeats;
// time configurations side by side: per configuration, its time in ms in each of the interleaved
// rounds (A B C A B C ...; a round left out where its run failed), empty when timing failed.
using EvaluateFn = std::function<CandidateOutcome(const Config&)>;
using TimeFn = std::function<std::vector<std::vector<std::optional<double>>>(const std::vector<Config>&)>;

// Identity of a root cause across configurations (positions differ when the op stream does).
std::string root_cause_key(const report::RootCause& r);

// The op named in a determinism alert ("index_add_cuda_ does not have a deterministic
// implementation, but ..."), "" when the message is not one.
std::string alerted_op(const std::string& message);

// Runs the search for `failing` (run under `failing_config`); see above.
report::FixSearch search_fixes(const report::ConfigResult& failing, const Config& failing_config, const Device& device,
                               const EvaluateFn& evaluate, const TimeFn& time);

}  // namespace ra
