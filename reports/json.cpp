// SPDX-License-Identifier: Apache-2.0
#include "reports/render.h"
#include "reports/utf8.h"

#include "reports/json_parts.h"

#include <cmath>

namespace ra::report {
namespace {

using json = nlohmann::ordered_json;

json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json finding_json(const TensorFinding& f) {
  json j = {{"name", f.name},
            {"dtype", f.dtype},
            {"shape", f.shape},
            {"reference_digest", f.reference_digest},
            {"other_digest", f.other_digest},
            {"diverging_trials", f.diverging_trials}};
  j["stats"] = f.stats ? stats_to_json(*f.stats) : json(nullptr);
  return j;
}

json or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

json root_cause_json(const RootCause& r) {
  return {{"op", r.op},
          {"direction", r.direction},
          {"node", or_null(r.node)},
          {"forward_op", or_null(r.forward_op)},
          {"module", or_null(r.module)},
          {"source", or_null(r.source)},
          {"phase", r.phase},
          {"step", r.step},
          {"thread", r.thread},
          {"position", r.position},
          {"inputs", r.inputs},
          {"outputs", r.outputs},
          {"differing_outputs", r.differing_outputs},
          {"runs_diverged", r.runs_diverged},
          {"runs_compared", r.runs_compared},
          {"repeats", r.repeats},
          {"propagated", r.propagated},
          {"independent_mismatches", r.independent_mismatches},
          {"stats", r.stats ? stats_to_json(*r.stats) : json(nullptr)},
          {"fixed_by", r.fixed_by}};
}

// Deterministic facts only: medians and cost ratios go to the timing section.
json fix_search_json(const FixSearch& f) {
  json candidates = json::array();
  for (const auto& c : f.candidates) {
    json toggles = json::object();
    for (const auto& [k, v] : c.toggles) toggles[k] = v;
    candidates.push_back({{"config", c.config},
                          {"stage", c.stage},
                          {"toggles", toggles},
                          {"verdict", to_string(c.verdict)},
                          {"message", c.message},
                          {"fixes_root_causes", c.fixes},
                          {"reproducible", c.fixes_all},
                          {"minimal", c.minimal},
                          {"snippet", {{"cpp", c.cpp}, {"python", c.python}}}});
  }
  json none = json::array();
  for (const auto& n : f.no_deterministic)
    none.push_back({{"op", n.op}, {"message", n.message}, {"advice", n.advice}, {"alternatives", n.alternatives}});
  json j = {{"from", f.from}, {"repeats", f.repeats}};
  if (f.repeats_auto) j["repeats_auto"] = true;
  j["timed_runs"] = f.timed_runs;
  j["conclusion"] = f.conclusion;
  j["minimal_fixes"] = f.best;
  j["no_deterministic_implementation"] = none;
  j["candidates"] = candidates;
  return j;
}

json trace_json(const TraceSummary& t) {
  json causes = json::array();
  for (const auto& r : t.root_causes) causes.push_back(root_cause_json(r));
  json splits = json::array();
  for (const auto& s : t.splits)
    splits.push_back({{"thread", s.thread},
                      {"reference_position", s.reference_position},
                      {"other_position", s.other_position},
                      {"reference_op", or_null(s.reference_op)},
                      {"other_op", or_null(s.other_op)},
                      {"unmatched_reference", s.unmatched_reference},
                      {"unmatched_other", s.unmatched_other},
                      {"reordered", s.reordered},
                      {"runs", s.runs},
                      {"repeats", s.repeats}});
  return {{"records", t.records},
          {"dropped", t.dropped},
          {"capacity", t.capacity},
          {"memory_bytes", t.memory_bytes},
          {"runs_compared", t.runs_compared},
          {"runs_identical", t.runs_identical},
          {"root_causes", causes},
          {"splits", splits}};
}

json allowed_by_json(const AllowedBy& a) {
  return {{"entry", a.entry}, {"reason", a.reason}, {"expires", a.expires.empty() ? json(nullptr) : json(a.expires)}};
}

json config_json(const ConfigResult& c) {
  json diverged = json::array();
  for (const auto& f : c.diverged_tensors) diverged.push_back(finding_json(f));
  json trials = json::array();
  for (const auto& t : c.trials) {
    trials.push_back({{"repeat", t.repeat},
                      {"status", to_string(t.status)},
                      {"exit_code", t.exit_code},
                      {"signal", t.signal},
                      {"message", t.message},
                      {"stderr_tail", t.stderr_tail},
                      {"outcome", t.outcome}});
    if (!t.device.empty()) trials.back()["device"] = t.device;
  }
  json j = detail::config_head_json(c);
  j["tensor_count"] = c.tensor_count;
  j["diverged_tensors"] = diverged;
  j["reference_digests"] = detail::digests_json(c.reference);
  j["trials"] = trials;
  j["trace"] = c.trace ? trace_json(*c.trace) : json(nullptr);
  j["fix_search"] = c.fix_search ? fix_search_json(*c.fix_search) : json(nullptr);
  j["allowed_by"] = c.allowed_by ? allowed_by_json(*c.allowed_by) : json(nullptr);
  j["within_tolerance"] = c.within_tolerance;
  j["tolerated"] = c.tolerated;
  if (!c.stopped_by.empty()) j["stopped_by"] = c.stopped_by;
  return j;
}

json probe_json(const ProbeFacts& p) {
  json j = {{"family", p.family},
          {"op", p.op},
          {"direction", p.direction},
          {"role", p.role},
          {"form", p.form},
          {"knowledge_id", p.knowledge_id.empty() ? json(nullptr) : json(p.knowledge_id)},
          {"documented", p.documented},
          {"documented_device", p.documented_device.empty() ? json(nullptr) : json(p.documented_device)},
          {"doc_row", p.doc_row},
          {"advice", p.advice},
          {"census", p.census.empty() ? json(nullptr) : json(p.census)},
          {"alerts", p.alerts},
          {"disagreements", p.disagreements}};
  // Only the batch-invariance family has classes: other probes' documents stay as they were.
  for (const auto& b : p.batch_classes) j["batch_classes"].push_back({{"config", b.config}, {"classes", b.classes}});
  return j;
}

json exec_json(const ExecFacts& e) {
  json artifacts = json::array(), metrics = json::array(), checklist = json::array();
  for (const auto& a : e.artifacts)
    artifacts.push_back({{"name", a.name}, {"pattern", a.pattern}, {"kind", a.kind}, {"note", a.note}, {"bytes", a.bytes}});
  for (const auto& m : e.metrics) metrics.push_back({{"name", m.name}, {"regex", m.regex}, {"occurrences", m.occurrences}});
  for (const auto& c : e.checklist)
    checklist.push_back({{"id", c.id}, {"status", c.status}, {"text", c.text}, {"where", c.where}, {"ranks", c.ranks},
                         {"artifact", c.artifact}});
  json ranks = nullptr;
  if (e.ranks_equal)
    ranks = {{"equal", e.ranks_equal->equal}, {"compared", e.ranks_equal->compared}, {"config", e.ranks_equal->config},
             {"repeat", e.ranks_equal->repeat}, {"artifact", e.ranks_equal->artifact}, {"rank", e.ranks_equal->rank},
             {"tensor", e.ranks_equal->tensor}};
  return {{"command", e.command},        {"executable", e.executable}, {"working_directory", e.working_directory},
          {"artifacts", artifacts},      {"metrics", metrics},         {"hook", e.hook},
          {"hook_note", e.hook_note},    {"checklist", checklist},     {"world_size", e.world_size},
          {"backend", e.backend},        {"launcher_set", e.launcher_set}, {"ranks_equal", ranks}};
}

json replay_json(const Replay& r) {
  json components = json::array();
  for (const auto& c : r.components)
    components.push_back({{"name", c.name},
                          {"description", c.description},
                          {"tensors", c.tensors},
                          {"in_checkpoint", c.in_checkpoint},
                          {"saved_match", c.saved_match},
                          {"restored_match", c.restored_match},
                          {"differing", c.differing}});
  json differing = json::array();
  for (const auto& f : r.differing) differing.push_back(finding_json(f));
  return {{"config", r.config.empty() ? json(nullptr) : json(r.config)},
          {"steps_before", r.steps_before},
          {"steps_after", r.steps_after},
          {"omit", r.omit},
          {"verdict", to_string(r.verdict)},
          {"reason", r.reason},
          {"components", components},
          {"tensors_compared", r.tensors_compared},
          {"differing_tensors", differing}};
}

json census_json(const Census& c) {
  return {{"config", c.config},
          {"alerted_diverged", c.alerted_diverged},
          {"alerted_stable", c.alerted_stable},
          {"silent_diverged", c.silent_diverged},
          {"stable", c.stable},
          {"not_run", c.not_run}};
}

json change_json(const EnvironmentChange& c, bool with_affects = true) {
  json j = {{"key", c.key}, {"baseline", c.baseline}, {"current", c.current}};
  if (with_affects) j["affects"] = c.affects;
  return j;
}

json tensor_digest_json(const std::optional<TensorDigest>& t) {
  if (!t) return nullptr;
  return {{"dtype", t->dtype}, {"shape", t->shape}, {"digest", t->digest}};
}

json verdict_or_null(const std::optional<Verdict>& v) { return v ? json(to_string(*v)) : json(nullptr); }

json baseline_json(const BaselineComparison& b) {
  json changes = json::array(), ignored = json::array(), results = json::array();
  for (const auto& c : b.changes) changes.push_back(change_json(c));
  for (const auto& c : b.ignored) ignored.push_back(change_json(c, false));
  json models = json::array();
  for (const auto& m : b.models) models.push_back({{"target", m.target}, {"relation", m.relation}, {"reason", m.reason}});
  for (const auto& r : b.results) {
    json switches = json::array(), tensors = json::array();
    for (const auto& c : r.switch_changes) switches.push_back(change_json(c));
    for (const auto& t : r.differing_tensors)
      tensors.push_back({{"name", t.name}, {"baseline", tensor_digest_json(t.baseline)}, {"current", tensor_digest_json(t.current)}});
    results.push_back({{"target", r.target},
                       {"config", r.config},
                       {"status", to_string(r.status)},
                       {"baseline_verdict", verdict_or_null(r.baseline_verdict)},
                       {"verdict", verdict_or_null(r.current_verdict)},
                       {"reason", r.reason},
                       {"switch_changes", switches},
                       {"explained_by", r.explained_by},
                       {"tensors", r.tensors},
                       {"differing", r.differing},
                       {"differing_tensors", tensors},
                       {"first_changed_op", r.first_changed_op ? root_cause_json(*r.first_changed_op) : json(nullptr)},
                       {"op_note", r.op_note}});
  }
  return {{"source", b.source},
          {"schema", b.schema},
          {"tool_version", b.tool_version},
          {"environment_changes", changes},
          {"ignored_changes", ignored},
          {"models", models},
          {"fail_on_explained", b.fail_on_explained},
          {"results", results}};
}

}  // namespace

nlohmann::ordered_json stats_to_json(const DivergenceStats& s) {
  return {{"numel", s.numel},
          {"differing", s.differing},
          {"first_index", s.first_index},
          {"first_index_nd", s.first_index_nd},
          {"max_abs_diff", number_or_null(s.max_abs_diff)},
          {"max_rel_diff", number_or_null(s.max_rel_diff)},
          {"max_ulp", number_or_null(s.max_ulp)},
          {"sign_differs", s.sign_differs},
          {"nan_mismatches", s.nan_mismatches},
          {"tolerance", {{"atol", s.tolerance.atol}, {"rtol", s.tolerance.rtol}}},
          {"beyond_tolerance", s.beyond_tolerance},
          {"note", s.note}};
}

json fleet_json(const Fleet& f) {
  json shards = json::array(), machines = json::array(), failures = json::array(), cells = json::array();
  for (const auto& s : f.shards)
    shards.push_back({{"index", s.index}, {"host", s.host}, {"source", s.source}, {"first_cell", s.first_cell},
                      {"last_cell", s.last_cell}, {"machine", s.machine}, {"wall_ms", s.wall_ms}});
  for (const auto& m : f.machines) {
    json changes = json::array();
    for (const auto& c : m.changes) changes.push_back(change_json(c));
    machines.push_back({{"shards", m.shards}, {"changes", changes}, {"environment", m.environment}});
  }
  for (const auto& x : f.failures)
    failures.push_back({{"target", x.target}, {"config", x.config}, {"status", x.status}, {"host", x.host},
                        {"shard", x.shard}, {"machine", x.machine}});
  for (const auto& c : f.cells)
    cells.push_back({{"target", c.target}, {"config", c.config}, {"outcomes", c.outcomes}, {"same", c.same}});
  return {{"count", f.count}, {"plan", f.plan}, {"replicated", f.replicated}, {"shards", shards},
          {"machines", machines}, {"failures", failures}, {"cells", cells}, {"notes", f.notes}};
}

json to_json(const Report& r) {
  json targets = json::array();
  json timing_trials = json::array();
  json timing_costs = json::array();
  json timing_fixes = json::array();
  for (const auto& t : r.targets) {
    json configs = json::array();
    for (size_t i = 0; i < t.configs.size(); ++i) {
      const ConfigResult& c = t.configs[i];
      configs.push_back(config_json(c));
      if (const auto median = median_wall_ms(c)) {
        const auto ratio = cost_ratio(t, i);
        timing_costs.push_back({{"target", t.name}, {"config", c.name}, {"median_ms", *median},
                                {"ratio_to_first", ratio ? json(*ratio) : json(nullptr)}});
      }
      if (c.fix_search) {
        const FixSearch& f = *c.fix_search;
        json fixes = json::array();
        for (const auto& cand : f.candidates)
          if (cand.median_ms)
            fixes.push_back({{"config", cand.config}, {"median_ms", *cand.median_ms},
                             {"cost_ratio", cand.cost_ratio ? json(*cand.cost_ratio) : json(nullptr)},
                             {"cost_low", cand.cost_low ? json(*cand.cost_low) : json(nullptr)},
                             {"cost_high", cand.cost_high ? json(*cand.cost_high) : json(nullptr)}});
        timing_fixes.push_back({{"target", t.name}, {"config", c.name},
                                {"baseline_median_ms", f.baseline_median_ms ? json(*f.baseline_median_ms) : json(nullptr)},
                                {"candidates", fixes}});
      }
      for (const auto& trial : c.trials)
        timing_trials.push_back({{"target", t.name}, {"config", c.name}, {"repeat", trial.repeat},
                                 {"wall_ms", trial.wall_ms}, {"startup_ms", trial.startup_ms}});
    }
    json dep = nullptr;
    if (t.dependence) {
      json differing = json::array();
      for (const auto& f : t.dependence->differing) differing.push_back(finding_json(f));
      json causes = json::array();
      for (const auto& c : t.dependence->causes) {
        json switches = json::array();
        for (const auto& sw : c.switches) switches.push_back({{"key", sw.key}, {"reference", sw.reference}, {"other", sw.other}});
        causes.push_back({{"reference_config", c.reference_config},
                          {"config", c.config},
                          {"switches", switches},
                          {"trace", c.trace ? trace_json(*c.trace) : json(nullptr)},
                          {"note", c.note}});
      }
      dep = {{"groups", t.dependence->groups}, {"differing_tensors", differing}, {"causes", causes}};
    }
    json target = detail::target_head_json(t, detail::TargetDoc::Report);
    target["configuration_dependent"] = t.dependence.has_value();
    target["configuration_dependence"] = dep;
    target["configs"] = configs;
    targets.push_back(std::move(target));
    if (t.probe) targets.back()["probe"] = probe_json(*t.probe);
    if (t.replay) targets.back()["replay"] = replay_json(*t.replay);
    if (t.exec) targets.back()["exec"] = exec_json(*t.exec);
  }
  json j = {{"schema", "repro-audit/report"},
            {"schema_version", kSchemaVersion},
            {"tool", {{"name", "repro-audit"}, {"version", r.tool_version}}},
            {"command", r.command},
            {"verdict", to_string(r.verdict)},
            {"exit_code", r.exit_code},
            {"allowlist_expired", r.allowlist_expired},
            {"allowlist_notes", r.allowlist_notes},
            {"environment", r.environment},
            {"targets", targets}};
  if (r.tolerance || r.tolerant)
    j["tolerance"] = {{"atol", r.tolerance ? json(r.tolerance->atol) : json(nullptr)},
                      {"rtol", r.tolerance ? json(r.tolerance->rtol) : json(nullptr)},
                      {"tolerant", r.tolerant}};
  if (r.auto_repeats)
    j["auto_repeats"] = {{"min", r.auto_repeats->min}, {"max", r.auto_repeats->max}, {"detect_rate", r.auto_repeats->rate}};
  if (r.shard) {
    json variables = json::object();
    for (const auto& [k, v] : r.shard->variables) variables[k] = v;
    json census = json::array();
    for (const auto& c : r.shard->census)
      census.push_back({{"target", c.target}, {"completed", c.completed}, {"alerts", c.alerts}});
    j["shard"] = {{"plan", r.shard->plan},
                  {"index", r.shard->index},
                  {"count", r.shard->count},
                  {"plan_cells", r.shard->plan_cells},
                  {"configs", r.shard->configs},
                  {"first_cell", r.shard->first_cell},
                  {"last_cell", r.shard->last_cell},
                  {"source", r.shard->source},
                  {"variables", variables},
                  {"host", r.shard->host},
                  {"tensors", r.shard->tensors},
                  {"census", census}};
  }
  if (r.census) j["census"] = census_json(*r.census);
  if (r.baseline) j["baseline"] = baseline_json(*r.baseline);
  if (r.selftest) {
    json checks = json::array();
    for (const auto& c : r.selftest->checks)
      checks.push_back({{"name", c.name}, {"passed", c.passed}, {"evidence", c.evidence}});
    j["selftest"] = {{"device", r.selftest->device}, {"checks", checks}};
  }
  if (r.fleet) j["fleet"] = fleet_json(*r.fleet);
  j["timing"] = {{"wall_ms", r.wall_ms}, {"configs", timing_costs}, {"fixes", timing_fixes}, {"trials", timing_trials}};
  if (!r.contention.empty()) j["timing"]["contention"] = r.contention;
  return j;
}

std::string render_json(const Report& r) {
  auto j = to_json(r);
  make_printable(j);  // paths are bytes: shown as \xNN where they are not UTF-8
  return j.dump(2) + "\n";
}

namespace detail {

json op_stream_json(const OpStream& s) {
  json ops = json::array();
  for (const auto& o : s.ops)
    ops.push_back({{"op", o.op}, {"phase", o.phase}, {"direction", o.direction}, {"node", o.node},
                   {"forward_op", o.forward_op}, {"module", o.module}, {"source", o.source}});
  json threads = json::array();
  for (const auto& t : s.threads) {
    threads.push_back({{"thread", t.thread}, {"records", t.records}, {"packed", t.packed}});
    if (!t.names.empty()) threads.back()["names"] = t.names;
  }
  json out = {{"format", 1}, {"threads", threads}};
  if (!s.ops.empty()) out["ops"] = ops;
  return out;
}

json config_head_json(const ConfigResult& c) {
  json switches = json::array();
  for (const auto& s : c.switches)
  {
    switches.push_back({{"key", s.key}, {"requested", s.requested.empty() ? json(nullptr) : json(s.requested)},
                        {"effective", s.effective}});
    if (!s.set_at.empty()) switches.back()["set_at"] = s.set_at;
  }
  json head = {{"config", c.name},
          {"verdict", to_string(c.verdict)},
          {"message", c.message},
          {"repeats", c.repeats},
          {"completed", c.completed},
          {"divergence", {{"diverging_repeats", c.diverging_repeats},
                          {"rate", c.divergence_rate},
                          {"ci95", {c.rate_ci_low, c.rate_ci_high}},
                          {"distinct_outcomes", c.distinct_outcomes}}},
          {"switches", switches}};
  if (c.op_stream) head["op_stream"] = op_stream_json(*c.op_stream);
  return head;
}

json digests_json(const std::vector<TensorDigest>& digests) {
  json out = json::array();
  for (const auto& t : digests) out.push_back({{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"digest", t.digest}});
  return out;
}

json target_head_json(const Target& t, TargetDoc doc) {
  json j = {{"name", t.name}, {"kind", t.kind}};
  if (doc == TargetDoc::Report) j["path"] = t.path;
  j["model_digest"] = t.model_digest.empty() ? json(nullptr) : json(t.model_digest);
  j["input_digest"] = t.input_digest.empty() ? json(nullptr) : json(t.input_digest);
  if (!t.weights_digest.empty()) j["weights_digest"] = t.weights_digest;
  if (!t.graph_digest.empty()) j["graph_digest"] = t.graph_digest;
  j["device"] = t.device;
  j["mode"] = t.mode;
  j["steps"] = t.steps;
  j["optimizer"] = t.optimizer.empty() ? json(nullptr) : json({{"name", t.optimizer}, {"lr", t.lr}});
  j["seed"] = t.seed;
  j["inputs"] = t.inputs;
  if (doc == TargetDoc::Report && !t.input_names.empty()) j["input_names"] = t.input_names;
  if (doc == TargetDoc::Report && !t.package.empty()) j["package"] = t.package;
  if (doc == TargetDoc::Report && !t.notes.empty()) j["notes"] = t.notes;
  j["verdict"] = to_string(t.verdict);
  return j;
}

}  // namespace detail

}  // namespace ra::report
