// SPDX-License-Identifier: Apache-2.0
// The JSON writer and reader of targets and their configurations (reports/target_model.h), side
// by side: each reader is the inverse of the writer above it, and names the JSON path of whatever
// it refuses. The heads of a target and of a configuration are shared with the baseline file
// (baseline_file.cpp), so that the two documents cannot drift apart.
#include "reports/json_parts.h"

#include <fmt/format.h>

#include <string_view>

namespace ra::report::detail {
namespace {

json dependence_json(const ConfigDependence& d) {
  json causes = json::array();
  for (const auto& c : d.causes) {
    json switches = json::array();
    for (const auto& sw : c.switches)
      switches.push_back({{"key", sw.key}, {"reference", sw.reference}, {"other", sw.other}});
    causes.push_back({{"reference_config", c.reference_config},
                      {"config", c.config},
                      {"switches", switches},
                      {"trace", c.trace ? trace_json(*c.trace) : json(nullptr)},
                      {"note", c.note}});
  }
  json j = {{"groups", d.groups}, {"differing_tensors", findings_json(d.differing)}, {"causes", causes}};
  if (d.referee) j["referee"] = class_summary_json(*d.referee);
  return j;
}

ConfigDependence read_dependence(const Node& d) {
  ConfigDependence dep;
  const Node groups = d.at("groups");
  dep.groups = groups.list([](const Node& g) { return g.strings(); });
  dep.differing = read_findings(d.at("differing_tensors"));
  if (d.has("causes"))
    dep.causes = d.at("causes").list([](const Node& c) {
      ConfigCause cause;
      cause.reference_config = c.at("reference_config").str();
      cause.config = c.at("config").str();
      cause.switches = c.at("switches").list([](const Node& sw) {
        return SwitchChange{sw.at("key").str(), sw.at("reference").str(), sw.at("other").str()};
      });
      if (const Node tr = c.at("trace"); !tr.null()) cause.trace = read_trace(tr);
      cause.note = c.at("note").str();
      return cause;
    });
  if (d.has("referee")) dep.referee = read_class_summary(d.at("referee"));
  return dep;
}

json warm_up_json(const WarmUp& w) {
  return {{"calls", w.calls},
          {"trials_compared", w.trials_compared},
          {"trials_differing", w.trials_differing},
          {"first_call", w.first_call},
          {"tensors", w.tensors},
          {"mutated", w.mutated},
          {"trace", w.trace ? trace_json(*w.trace) : json(nullptr)}};
}

WarmUp read_warm_up(const Node& n) {
  WarmUp w;
  w.calls = n.at("calls").i32();
  w.trials_compared = n.at("trials_compared").i32();
  w.trials_differing = n.at("trials_differing").i32();
  w.first_call = n.at("first_call").i32();
  w.tensors = n.at("tensors").strings();
  w.mutated = n.at("mutated").strings();
  if (const Node t = n.at("trace"); !t.null()) w.trace = read_trace(t);
  return w;
}

}  // namespace

json config_head_json(const ConfigResult& c) {
  json switches = json::array();
  for (const auto& s : c.switches) switches.push_back(switch_json(s));
  json head = {{"config", c.name},
               {"verdict", to_string(c.verdict)},
               {"message", c.message},
               {"repeats", c.repeats},
               {"completed", c.completed},
               {"divergence",
                {{"diverging_repeats", c.diverging_repeats},
                 {"rate", c.divergence_rate},
                 {"ci95", {c.rate_ci_low, c.rate_ci_high}},
                 {"distinct_outcomes", c.distinct_outcomes}}},
               {"switches", switches}};
  if (c.op_stream) head["op_stream"] = op_stream_json(*c.op_stream);
  return head;
}

void read_config_head(const Node& n, ConfigResult& c) {
  c.name = n.at("config").str();
  c.verdict = verdict(n.at("verdict"));
  c.message = n.at("message").str();
  c.repeats = n.at("repeats").i32();
  c.completed = n.at("completed").i32();
  const Node d = n.at("divergence");
  c.diverging_repeats = d.at("diverging_repeats").i32();
  c.divergence_rate = d.at("rate").num();
  const Node ci = d.at("ci95");
  if (ci.size() != 2) ci.fail("expected two numbers");
  c.rate_ci_low = ci[0].num();
  c.rate_ci_high = ci[1].num();
  c.distinct_outcomes = d.at("distinct_outcomes").i32();
  c.switches = n.at("switches").list(read_switch);
  if (n.has("op_stream")) c.op_stream = read_op_stream(n.at("op_stream"));
}

json config_json(const ConfigResult& c) {
  json trials = json::array();
  for (const auto& t : c.trials) trials.push_back(trial_json(t));
  json j = config_head_json(c);
  j["tensor_count"] = c.tensor_count;
  if (c.compared) j["compared"] = {{"files", c.compared->files}, {"metrics", c.compared->metrics}};
  j["diverged_tensors"] = findings_json(c.diverged_tensors);
  j["reference_digests"] = digests_json(c.reference);
  j["trials"] = trials;
  j["trace"] = c.trace ? trace_json(*c.trace) : json(nullptr);
  j["fix_search"] = c.fix_search ? fix_search_json(*c.fix_search) : json(nullptr);
  j["allowed_by"] = c.allowed_by ? allowed_by_json(*c.allowed_by) : json(nullptr);
  j["within_tolerance"] = c.within_tolerance;
  j["tolerated"] = c.tolerated;
  if (!c.stopped_by.empty()) j["stopped_by"] = c.stopped_by;
  if (c.warm_up) j["warm_up"] = warm_up_json(*c.warm_up);
  if (c.referee) j["referee"] = config_referee_json(*c.referee);
  return j;
}

ConfigResult read_config(const Node& n) {
  ConfigResult c;
  read_config_head(n, c);
  c.tensor_count = size_t(n.at("tensor_count").u64());
  if (n.has("compared"))
    c.compared = ExecCompared{n.at("compared").at("files").i32(), n.at("compared").at("metrics").i32()};
  c.diverged_tensors = read_findings(n.at("diverged_tensors"));
  c.reference = read_digests(n.at("reference_digests"));
  c.trials = n.at("trials").list(read_trial);
  if (const Node t = n.at("trace"); !t.null()) c.trace = read_trace(t);
  if (const Node f = n.at("fix_search"); !f.null()) c.fix_search = read_fix_search(f);
  if (n.has("within_tolerance")) c.within_tolerance = n.at("within_tolerance").boolean();
  if (n.has("tolerated")) c.tolerated = n.at("tolerated").boolean();
  if (n.has("stopped_by")) c.stopped_by = n.at("stopped_by").str();
  if (n.has("warm_up")) c.warm_up = read_warm_up(n.at("warm_up"));
  if (n.has("referee")) c.referee = read_config_referee(n.at("referee"));
  if (const Node a = n.at("allowed_by"); !a.null()) c.allowed_by = read_allowed_by(a);
  return c;
}

namespace {

// The head every kind's target writes, with run's facts where the target is a model (`run`).
json head_json(const Target& t, std::string_view kind, const RunFacts* run, TargetDoc doc) {
  json j = {{"name", t.name}, {"kind", kind}};
  if (doc == TargetDoc::Report) j["path"] = t.path;
  j["model_digest"] = t.model_digest.empty() ? json(nullptr) : json(t.model_digest);
  j["input_digest"] = t.input_digest.empty() ? json(nullptr) : json(t.input_digest);
  if (!t.weights_digest.empty()) j["weights_digest"] = t.weights_digest;
  if (!t.graph_digest.empty()) j["graph_digest"] = t.graph_digest;
  j["device"] = t.device;
  j["mode"] = t.mode;
  j["steps"] = run ? run->steps : 0;
  j["optimizer"] = run && !run->optimizer.empty() ? json({{"name", run->optimizer}, {"lr", run->lr}}) : json(nullptr);
  j["seed"] = t.seed;
  j["inputs"] = t.inputs;
  if (doc == TargetDoc::Report && run && !run->input_names.empty()) j["input_names"] = run->input_names;
  if (doc == TargetDoc::Report && run && !run->package.empty()) j["package"] = run->package;
  if (doc == TargetDoc::Report && !t.notes.empty()) j["notes"] = t.notes;
  j["verdict"] = to_string(t.verdict);
  return j;
}

// The inverse of head_json. A target's "kind" must be its body's (`kind`); the run facts a head
// holds are read into `run` where the target is a model, and checked and left where it is not.
void read_head(const Node& n, Target& t, std::string_view kind, RunFacts* run, TargetDoc doc) {
  t.name = n.at("name").str();
  if (const std::string k = n.at("kind").str(); k != kind)
    n.at("kind").fail(fmt::format("'{}' in a file whose targets are '{}'", k, kind));
  if (doc == TargetDoc::Report) t.path = n.at("path").str();
  // Reports written before targets carried their identity have no digests; baselines always do.
  if (doc == TargetDoc::Baseline || n.has("model_digest")) t.model_digest = n.at("model_digest").str_or_null();
  if (doc == TargetDoc::Baseline || n.has("input_digest")) t.input_digest = n.at("input_digest").str_or_null();
  // Written since identities survive a re-save; without them a model is matched by its bytes.
  if (n.has("weights_digest")) t.weights_digest = n.at("weights_digest").str();
  if (n.has("graph_digest")) t.graph_digest = n.at("graph_digest").str();
  t.device = n.at("device").str();
  t.mode = n.at("mode").str();
  RunFacts none;
  RunFacts& facts = run ? *run : none;
  facts.steps = n.at("steps").i32();
  if (const Node o = n.at("optimizer"); !o.null()) {
    facts.optimizer = o.at("name").str();
    facts.lr = o.at("lr").num();
  }
  t.seed = n.at("seed").u64();
  t.inputs = n.at("inputs").strings();
  if (doc == TargetDoc::Report && n.has("package")) {
    const Node p = n.at("package");
    if (!p.v.is_object()) p.fail("expected an object of strings");
    for (const auto& item : p.v.items()) facts.package[item.key()] = p.at(item.key()).str();
  }
  if (doc == TargetDoc::Report && n.has("notes")) t.notes = n.at("notes").strings();
  if (doc == TargetDoc::Report && n.has("input_names")) {
    facts.input_names = n.at("input_names").strings();
    if (facts.input_names.size() != t.inputs.size()) n.at("input_names").fail("needs one name per input");
  }
  t.verdict = verdict(n.at("verdict"));
}

// What every kind's target holds in a report after its head: the configuration dependence and the
// configurations.
json results_json(const Target& t) {
  json configs = json::array();
  for (const auto& c : t.configs) configs.push_back(config_json(c));
  json target = json::object();
  target["configuration_dependent"] = t.dependence.has_value();
  target["configuration_dependence"] = t.dependence ? dependence_json(*t.dependence) : json(nullptr);
  target["configs"] = configs;
  return target;
}

void read_results(const Node& n, Target& t) {
  const bool dependent = n.at("configuration_dependent").boolean();
  if (const Node d = n.at("configuration_dependence"); !d.null()) t.dependence = read_dependence(d);
  if (dependent != t.dependence.has_value())
    n.at("configuration_dependent").fail("disagrees with configuration_dependence");
  t.configs = n.at("configs").list(read_config);
}

// A report's target: its head, then its results, then what its kind adds.
json report_target_json(json head, const Target& t) {
  head.update(results_json(t));
  return head;
}

}  // namespace

json target_head_json(const RunTarget& t, TargetDoc doc) {
  return head_json(t.common, kind_row<RunBody>().target, &t.facts, doc);
}
json target_head_json(const ExecTarget& t, TargetDoc doc) {
  return head_json(t.common, kind_row<ExecBody>().target, nullptr, doc);
}
json target_head_json(const ProbeTarget& t, TargetDoc doc) {
  return head_json(t.common, kind_row<ProbesBody>().target, nullptr, doc);
}

void read_target_head(const Node& n, RunTarget& t, TargetDoc doc) {
  read_head(n, t.common, kind_row<RunBody>().target, &t.facts, doc);
}
void read_target_head(const Node& n, ExecTarget& t, TargetDoc doc) {
  read_head(n, t.common, kind_row<ExecBody>().target, nullptr, doc);
}
void read_target_head(const Node& n, ProbeTarget& t, TargetDoc doc) {
  read_head(n, t.common, kind_row<ProbesBody>().target, nullptr, doc);
}

json target_json(const RunTarget& t) {
  json target = report_target_json(target_head_json(t, TargetDoc::Report), t.common);
  if (t.facts.replay) target["replay"] = replay_json(*t.facts.replay);
  if (t.common.referee) target["referee"] = referee_json(*t.common.referee);
  return target;
}

json target_json(const ExecTarget& t) {
  json target = report_target_json(target_head_json(t, TargetDoc::Report), t.common);
  target["exec"] = exec_json(t.facts);
  if (t.common.referee) target["referee"] = referee_json(*t.common.referee);
  return target;
}

json target_json(const ProbeTarget& t) {
  json target = report_target_json(target_head_json(t, TargetDoc::Report), t.common);
  if (t.facts.known()) target["probe"] = probe_json(t.facts);
  if (t.common.referee) target["referee"] = referee_json(*t.common.referee);
  return target;
}

void read_target(const Node& n, RunTarget& t) {
  read_target_head(n, t, TargetDoc::Report);
  read_results(n, t.common);
  if (n.has("replay")) t.facts.replay = read_replay(n.at("replay"));
  if (n.has("referee")) t.common.referee = read_referee(n.at("referee"));
}

void read_target(const Node& n, ExecTarget& t) {
  read_target_head(n, t, TargetDoc::Report);
  read_results(n, t.common);
  if (n.has("referee")) t.common.referee = read_referee(n.at("referee"));
  if (!n.has("exec")) return;
  t.facts = read_exec(n.at("exec"));
  // exec reports written before `compared` was recorded: counted from their digests
  for (auto& c : t.common.configs)
    if (!c.compared) c.compared = compared_from_digests(t.facts, c.reference);
}

void read_target(const Node& n, ProbeTarget& t) {
  read_target_head(n, t, TargetDoc::Report);
  read_results(n, t.common);
  if (n.has("probe")) t.facts = read_probe(n.at("probe"));
  if (n.has("referee")) t.common.referee = read_referee(n.at("referee"));
}

json auto_repeats_json(const AutoRepeats& a) { return {{"min", a.min}, {"max", a.max}, {"detect_rate", a.rate}}; }

AutoRepeats read_auto_repeats(const Node& a) {
  return AutoRepeats{a.at("min").i32(), a.at("max").i32(), a.at("detect_rate").num()};
}

}  // namespace ra::report::detail
