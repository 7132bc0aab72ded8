// SPDX-License-Identifier: Apache-2.0
// Internal to reports/: the JSON writer and reader of each concern of the report model. A concern's
// pair sits side by side in the file beside its header (core_model.h: core_json.cpp; likewise
// trace, probe, replay, exec, target, baseline, fleet and selftest), so a new field touches one
// header and that file. json.cpp joins them into the report, and baseline_file.cpp into the baseline
// file; a part that both documents carry (a target's and a configuration's head) is written and
// read by one pair, so that the two cannot drift apart.
//
// `x_json` writes one value; `read_x` is its inverse, and names the JSON path of anything it
// refuses (json_node.h). What depends on the clock goes to the report's "timing" section, through
// the add_/read_ pairs of times, never into the value's own object.
#pragma once

#include "reports/json_node.h"
#include "reports/model.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace ra::report::detail {

// A string that is written as null when empty (read back by Node::str_or_null).
inline json or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }
// A number that is written as null when it is not finite (JSON has no NaN or infinity).
inline json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// The kind of a report or baseline file (json.cpp): its "kind" by name (model.h, kKinds), or for a
// file written before it carried one, `legacy_kind`, which holds the old guessing from the file's
// keys (a self-test, invariance or census section, or its first target's kind) and is the only
// place that guesses. Returns the empty alternative; ReportError ("kind: 'x' is not a kind ...")
// for a name no row has.
std::string legacy_kind(const Node& root);
Body read_kind(const Node& root);

// core_json.cpp (stats_to_json and stats_from_json, the public pair, are there too).
DivergenceStats read_stats(const Node& n);
std::optional<DivergenceStats> read_opt_stats(const Node& n);  // null: nullopt
json finding_json(const TensorFinding& f);
TensorFinding read_finding(const Node& n);
json findings_json(const std::vector<TensorFinding>& findings);
std::vector<TensorFinding> read_findings(const Node& n);
// A configuration's reference digests: [{"name", "dtype", "shape", "digest"}].
json digests_json(const std::vector<TensorDigest>& digests);
std::vector<TensorDigest> read_digests(const Node& n);
json switch_json(const SwitchValue& s);
SwitchValue read_switch(const Node& n);
json trial_json(const Trial& t);  // without its times
Trial read_trial(const Node& n);
void add_trial_times(json& entry, const Trial& t);  // "wall_ms", "startup_ms" of a timing.trials entry
void read_trial_times(const Node& entry, Trial& t);
json allowed_by_json(const AllowedBy& a);
AllowedBy read_allowed_by(const Node& n);
json change_json(const EnvironmentChange& c, bool with_affects = true);
EnvironmentChange read_change(const Node& n, bool with_affects = true);

// trace_json.cpp
json root_cause_json(const RootCause& r);
RootCause read_root_cause(const Node& n);
json trace_json(const TraceSummary& t);
TraceSummary read_trace(const Node& n);
json fix_search_json(const FixSearch& f);  // without its times
FixSearch read_fix_search(const Node& n);
void add_fix_times(json& entry, const FixSearch& f);  // "baseline_median_ms", "candidates" of a timing.fixes entry
void read_fix_times(const Node& entry, FixSearch& f);
json op_stream_json(const OpStream& s);
OpStream read_op_stream(const Node& n);

// probe_json.cpp
json probe_json(const ProbeFacts& p);
ProbeFacts read_probe(const Node& n);
json census_json(const Census& c);
Census read_census(const Node& n);

// replay_json.cpp
json replay_json(const Replay& r);
Replay read_replay(const Node& n);

// exec_json.cpp
json exec_json(const ExecFacts& e);
ExecFacts read_exec(const Node& n);
// An older exec report's files and metrics per run, counted from a configuration's reference digests.
ExecCompared compared_from_digests(const ExecFacts& e, const std::vector<TensorDigest>& reference);

// target_json.cpp. Which document a target sits in: a report has the target's path, and may
// predate the model and input digests; a baseline has no path and always has the digests.
enum class TargetDoc { Report, Baseline };
// {"config", "verdict", "message", "repeats", "completed", "divergence", "switches"}; callers append
// the rest of their configuration object after these keys.
json config_head_json(const ConfigResult& c);
void read_config_head(const Node& n, ConfigResult& c);
// {"name", "kind", ("path",) "model_digest", "input_digest", "device", "mode", "steps", "optimizer",
// "seed", "inputs", "verdict"}, with the facts of run's model that a head holds (steps, optimizer,
// and in a report its input names and package); callers append the rest of their target object. A
// target's "kind" is its body's (kKinds), checked on reading.
json target_head_json(const RunTarget& t, TargetDoc doc);
json target_head_json(const ExecTarget& t, TargetDoc doc);
json target_head_json(const ProbeTarget& t, TargetDoc doc);
void read_target_head(const Node& n, RunTarget& t, TargetDoc doc);
void read_target_head(const Node& n, ExecTarget& t, TargetDoc doc);
void read_target_head(const Node& n, ProbeTarget& t, TargetDoc doc);
json config_json(const ConfigResult& c);  // a report's configuration, without its times
ConfigResult read_config(const Node& n);
// A report's target, without its times: its head, configurations, and its kind's facts (run's
// restart-replay, exec's facts, a probe's facts where known).
json target_json(const RunTarget& t);
json target_json(const ExecTarget& t);
json target_json(const ProbeTarget& t);
void read_target(const Node& n, RunTarget& t);
void read_target(const Node& n, ExecTarget& t);
void read_target(const Node& n, ProbeTarget& t);
json auto_repeats_json(const AutoRepeats& a);
AutoRepeats read_auto_repeats(const Node& n);

// baseline_json.cpp
json baseline_json(const BaselineComparison& b);
BaselineComparison read_baseline(const Node& n);

// fleet_json.cpp
json shard_json(const ShardInfo& s);
ShardInfo read_shard(const Node& n);
json fleet_json(const Fleet& f);
Fleet read_fleet(const Node& n);

// selftest_json.cpp
json selftest_json(const SelfTest& s);
SelfTest read_selftest(const Node& n);

// referee_json.cpp (reference_error_to_json and reference_error_from_json, the public pair, are there
// too): every part is optional in the documents that carry it.
ReferenceError read_reference_error(const Node& n);
json referee_json(const Referee& r);
Referee read_referee(const Node& n);
json classified_json(const Classified& c);
Classified read_classified(const Node& n);
json class_summary_json(const ClassSummary& s);
ClassSummary read_class_summary(const Node& n);
json config_referee_json(const ConfigReferee& c);
ConfigReferee read_config_referee(const Node& n);
json fix_accuracy_json(const FixAccuracy& a);
FixAccuracy read_fix_accuracy(const Node& n);

// invariance_outputs.cpp: what an invariance report and an invariance baseline both hold (model,
// kind, device, inputs, rows, filler, sizes, budget, outputs), read by one reader.
void read_invariance_head(const Node& n, Invariance& inv);
// ... and what a configuration of each holds: config, verdict, position and warm-up dependence.
void read_invariance_config_head(const Node& n, InvarianceConfig& c);
// invariance_json.cpp: a class of sizes in a report (a configuration's, a fix candidate's), with the
// float64 referee's figures where it has them.
json size_class_json(const SizeClass& k);
SizeClass read_size_class(const Node& n);

}  // namespace ra::report::detail
