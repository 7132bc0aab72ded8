// SPDX-License-Identifier: Apache-2.0
#include "reports/render.h"

#include <cmath>

namespace ra::report {
namespace {

using json = nlohmann::ordered_json;

json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json stats_json(const DivergenceStats& s) {
  return {{"numel", s.numel},
          {"differing", s.differing},
          {"first_index", s.first_index},
          {"first_index_nd", s.first_index_nd},
          {"max_abs_diff", number_or_null(s.max_abs_diff)},
          {"max_ulp", number_or_null(s.max_ulp)},
          {"nan_mismatches", s.nan_mismatches},
          {"note", s.note}};
}

json finding_json(const TensorFinding& f) {
  json j = {{"name", f.name},
            {"dtype", f.dtype},
            {"shape", f.shape},
            {"reference_digest", f.reference_digest},
            {"other_digest", f.other_digest},
            {"diverging_trials", f.diverging_trials}};
  j["stats"] = f.stats ? stats_json(*f.stats) : json(nullptr);
  return j;
}

json config_json(const ConfigResult& c) {
  json switches = json::array();
  for (const auto& s : c.switches)
    switches.push_back({{"key", s.key}, {"requested", s.requested.empty() ? json(nullptr) : json(s.requested)},
                        {"effective", s.effective}});
  json tensors = json::array();
  for (const auto& t : c.reference)
    tensors.push_back({{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"digest", t.digest}});
  json diverged = json::array();
  for (const auto& f : c.diverged_tensors) diverged.push_back(finding_json(f));
  json trials = json::array();
  for (const auto& t : c.trials)
    trials.push_back({{"repeat", t.repeat},
                      {"status", to_string(t.status)},
                      {"exit_code", t.exit_code},
                      {"signal", t.signal},
                      {"message", t.message},
                      {"stderr_tail", t.stderr_tail},
                      {"outcome", t.outcome}});
  return {{"config", c.name},
          {"verdict", to_string(c.verdict)},
          {"message", c.message},
          {"repeats", c.repeats},
          {"completed", c.completed},
          {"divergence", {{"diverging_repeats", c.diverging_repeats},
                          {"rate", c.divergence_rate},
                          {"ci95", {c.rate_ci_low, c.rate_ci_high}},
                          {"distinct_outcomes", c.distinct_outcomes}}},
          {"switches", switches},
          {"tensor_count", c.tensor_count},
          {"diverged_tensors", diverged},
          {"reference_digests", tensors},
          {"trials", trials}};
}

json probe_json(const ProbeFacts& p) {
  return {{"family", p.family},
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

}  // namespace

json to_json(const Report& r) {
  json targets = json::array();
  json timing_trials = json::array();
  json timing_costs = json::array();
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
      for (const auto& trial : c.trials)
        timing_trials.push_back({{"target", t.name}, {"config", c.name}, {"repeat", trial.repeat},
                                 {"wall_ms", trial.wall_ms}, {"startup_ms", trial.startup_ms}});
    }
    json dep = nullptr;
    if (t.dependence) {
      json differing = json::array();
      for (const auto& f : t.dependence->differing) differing.push_back(finding_json(f));
      dep = {{"groups", t.dependence->groups}, {"differing_tensors", differing}};
    }
    targets.push_back({{"name", t.name},
                       {"kind", t.kind},
                       {"path", t.path},
                       {"device", t.device},
                       {"mode", t.mode},
                       {"steps", t.steps},
                       {"optimizer", t.optimizer.empty() ? json(nullptr) : json({{"name", t.optimizer}, {"lr", t.lr}})},
                       {"seed", t.seed},
                       {"inputs", t.inputs},
                       {"verdict", to_string(t.verdict)},
                       {"configuration_dependent", t.dependence.has_value()},
                       {"configuration_dependence", dep},
                       {"configs", configs}});
    if (t.probe) targets.back()["probe"] = probe_json(*t.probe);
    if (t.replay) targets.back()["replay"] = replay_json(*t.replay);
  }
  json j = {{"schema", "repro-audit/report"},
            {"schema_version", kSchemaVersion},
            {"tool", {{"name", "repro-audit"}, {"version", r.tool_version}}},
            {"command", r.command},
            {"verdict", to_string(r.verdict)},
            {"exit_code", r.exit_code},
            {"environment", r.environment},
            {"targets", targets}};
  if (r.census) j["census"] = census_json(*r.census);
  j["timing"] = {{"wall_ms", r.wall_ms}, {"configs", timing_costs}, {"trials", timing_trials}};
  return j;
}

std::string render_json(const Report& r) { return to_json(r).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n"; }

}  // namespace ra::report
