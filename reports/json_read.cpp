// SPDX-License-Identifier: Apache-2.0
// The inverse of reports/json.cpp. Every accessor takes the JSON path of the value it reads, so an
// error names the field ("targets[0].configs[1].trials[2].status: expected a string").
#include "reports/json_read.h"

#include "reports/json_node.h"
#include "reports/json_parts.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace ra::report {
namespace {

using json = nlohmann::ordered_json;
using detail::Node;
using detail::verdict;

TrialStatus trial_status(const Node& n) {
  const auto s = trial_status_from_string(n.str());
  if (!s) n.fail(fmt::format("unknown trial status '{}'", n.str()));
  return *s;
}

ReplayVerdict replay_verdict(const Node& n) {
  const std::string s = n.str();
  for (const auto v : {ReplayVerdict::Reproducible, ReplayVerdict::Diverged, ReplayVerdict::Inconclusive,
                       ReplayVerdict::Crashed})
    if (s == to_string(v)) return v;
  n.fail(fmt::format("unknown replay verdict '{}'", s));
}

DivergenceStats stats(const Node& n) {
  DivergenceStats s;
  s.numel = n.at("numel").i64();
  s.differing = n.at("differing").i64();
  s.first_index = n.at("first_index").i64();
  s.first_index_nd = n.at("first_index_nd").i64s();
  s.max_abs_diff = n.at("max_abs_diff").num_or_nan();
  s.max_ulp = n.at("max_ulp").num_or_nan();
  s.nan_mismatches = n.at("nan_mismatches").i64();
  // Reports written before these were added have no relative difference or tolerance count.
  if (n.has("max_rel_diff")) s.max_rel_diff = n.at("max_rel_diff").num_or_nan();
  if (n.has("sign_differs")) s.sign_differs = n.at("sign_differs").i64();
  if (n.has("tolerance")) s.tolerance = {n.at("tolerance").at("atol").num(), n.at("tolerance").at("rtol").num()};
  if (n.has("beyond_tolerance")) s.beyond_tolerance = n.at("beyond_tolerance").i64();
  s.note = n.at("note").str();
  return s;
}

std::optional<DivergenceStats> opt_stats(const Node& n) {
  return n.null() ? std::nullopt : std::optional<DivergenceStats>(stats(n));
}

TensorFinding finding(const Node& n) {
  TensorFinding f;
  f.name = n.at("name").str();
  f.dtype = n.at("dtype").str();
  f.shape = n.at("shape").i64s();
  f.reference_digest = n.at("reference_digest").str();
  f.other_digest = n.at("other_digest").str();
  f.diverging_trials = n.at("diverging_trials").i32();
  f.stats = opt_stats(n.at("stats"));
  return f;
}

std::vector<TensorFinding> findings(const Node& n) { return n.list(finding); }

RootCause root_cause(const Node& n) {
  RootCause r;
  r.op = n.at("op").str();
  r.direction = n.at("direction").str();
  r.node = n.at("node").str_or_null();
  r.forward_op = n.at("forward_op").str_or_null();
  r.module = n.at("module").str_or_null();
  r.source = n.at("source").str_or_null();
  r.phase = n.at("phase").str();
  r.step = n.at("step").i32();
  const uint64_t thread = n.at("thread").u64();
  if (thread > std::numeric_limits<uint32_t>::max()) n.at("thread").fail("integer out of range");
  r.thread = uint32_t(thread);
  r.position = n.at("position").u64();
  r.inputs = n.at("inputs").strings();
  r.outputs = n.at("outputs").strings();
  r.differing_outputs = n.at("differing_outputs").i32s();
  r.runs_diverged = n.at("runs_diverged").i32();
  r.runs_compared = n.at("runs_compared").i32();
  r.repeats = n.at("repeats").i32s();
  r.propagated = n.at("propagated").u64();
  r.independent_mismatches = n.at("independent_mismatches").u64();
  r.stats = opt_stats(n.at("stats"));
  r.fixed_by = n.at("fixed_by").sizes();
  return r;
}

StructuralSplit split(const Node& n) {
  StructuralSplit s;
  const uint64_t thread = n.at("thread").u64();
  if (thread > std::numeric_limits<uint32_t>::max()) n.at("thread").fail("integer out of range");
  s.thread = uint32_t(thread);
  s.reference_position = n.at("reference_position").u64();
  s.other_position = n.at("other_position").u64();
  s.reference_op = n.at("reference_op").str_or_null();
  s.other_op = n.at("other_op").str_or_null();
  s.unmatched_reference = n.at("unmatched_reference").u64();
  s.unmatched_other = n.at("unmatched_other").u64();
  s.reordered = n.at("reordered").u64();
  s.runs = n.at("runs").i32();
  s.repeats = n.at("repeats").i32s();
  return s;
}

TraceSummary trace(const Node& n) {
  TraceSummary t;
  t.records = n.at("records").u64();
  t.dropped = n.at("dropped").u64();
  t.capacity = n.at("capacity").u64();
  t.memory_bytes = n.at("memory_bytes").u64();
  t.runs_compared = n.at("runs_compared").i32();
  t.runs_identical = n.at("runs_identical").i32();
  t.root_causes = n.at("root_causes").list(root_cause);
  t.splits = n.at("splits").list(split);
  return t;
}

FixCandidate candidate(const Node& n) {
  FixCandidate c;
  c.config = n.at("config").str();
  c.stage = n.at("stage").str();
  const Node toggles = n.at("toggles");
  if (!toggles.v.is_object()) toggles.fail("expected an object");
  for (const auto& [key, value] : toggles.v.items()) c.toggles.emplace_back(key, Node{value, toggles.path + "." + key}.str());
  c.verdict = verdict(n.at("verdict"));
  c.message = n.at("message").str();
  c.fixes = n.at("fixes_root_causes").u64s();
  c.fixes_all = n.at("reproducible").boolean();
  c.minimal = n.at("minimal").boolean();
  c.cpp = n.at("snippet").at("cpp").str();
  c.python = n.at("snippet").at("python").str();
  return c;
}

FixSearch fix_search(const Node& n) {
  FixSearch f;
  f.from = n.at("from").str();
  f.repeats = n.at("repeats").i32();
  if (n.has("repeats_auto")) f.repeats_auto = n.at("repeats_auto").boolean();
  f.timed_runs = n.at("timed_runs").i32();
  f.conclusion = n.at("conclusion").str();
  f.best = n.at("minimal_fixes").sizes();
  f.no_deterministic = n.at("no_deterministic_implementation").list([](const Node& m) {
    return NoDeterministicImplementation{m.at("op").str(), m.at("message").str(), m.at("advice").str(),
                                         m.at("alternatives").strings()};
  });
  f.candidates = n.at("candidates").list(candidate);
  return f;
}

Trial trial(const Node& n) {
  Trial t;
  t.repeat = n.at("repeat").i32();
  t.status = trial_status(n.at("status"));
  t.exit_code = n.at("exit_code").i32();
  t.signal = n.at("signal").i32();
  t.message = n.at("message").str();
  t.stderr_tail = n.at("stderr_tail").str();
  t.outcome = n.at("outcome").str();
  if (n.has("device")) t.device = n.at("device").str();
  return t;
}

ConfigResult config(const Node& n) {
  ConfigResult c;
  detail::read_config_head(n, c);
  c.tensor_count = size_t(n.at("tensor_count").u64());
  c.diverged_tensors = findings(n.at("diverged_tensors"));
  c.reference = detail::read_digests(n.at("reference_digests"));
  c.trials = n.at("trials").list(trial);
  if (const Node t = n.at("trace"); !t.null()) c.trace = trace(t);
  if (const Node f = n.at("fix_search"); !f.null()) c.fix_search = fix_search(f);
  if (n.has("within_tolerance")) c.within_tolerance = n.at("within_tolerance").boolean();
  if (n.has("tolerated")) c.tolerated = n.at("tolerated").boolean();
  if (n.has("stopped_by")) c.stopped_by = n.at("stopped_by").str();
  if (const Node a = n.at("allowed_by"); !a.null())
    c.allowed_by = AllowedBy{a.at("entry").i32(), a.at("reason").str(), a.at("expires").str_or_null()};
  return c;
}

ProbeFacts probe(const Node& n) {
  ProbeFacts p;
  p.family = n.at("family").str();
  p.op = n.at("op").str();
  p.direction = n.at("direction").str();
  p.role = n.at("role").str();
  p.form = n.at("form").str();
  p.knowledge_id = n.at("knowledge_id").str_or_null();
  p.documented = n.at("documented").str();
  p.documented_device = n.at("documented_device").str_or_null();
  p.doc_row = n.at("doc_row").str();
  p.advice = n.at("advice").str();
  p.census = n.at("census").str_or_null();
  p.alerts = n.at("alerts").strings();
  p.disagreements = n.at("disagreements").strings();
  if (n.has("batch_classes"))
    p.batch_classes = n.at("batch_classes").list([](const Node& b) {
      return BatchClasses{b.at("config").str(), b.at("classes").list([](const Node& c) { return c.i64s(); })};
    });
  return p;
}

Replay replay(const Node& n) {
  Replay r;
  r.config = n.at("config").str_or_null();
  r.steps_before = n.at("steps_before").i32();
  r.steps_after = n.at("steps_after").i32();
  r.omit = n.at("omit").strings();
  r.verdict = replay_verdict(n.at("verdict"));
  r.reason = n.at("reason").str();
  r.components = n.at("components").list([](const Node& c) {
    ReplayComponent out;
    out.name = c.at("name").str();
    out.description = c.at("description").str();
    out.tensors = size_t(c.at("tensors").u64());
    out.in_checkpoint = c.at("in_checkpoint").boolean();
    out.saved_match = c.at("saved_match").boolean();
    out.restored_match = c.at("restored_match").boolean();
    out.differing = c.at("differing").strings();
    return out;
  });
  r.tensors_compared = size_t(n.at("tensors_compared").u64());
  r.differing = findings(n.at("differing_tensors"));
  return r;
}

ExecFacts exec_facts(const Node& n) {
  ExecFacts e;
  e.command = n.at("command").strings();
  e.executable = n.at("executable").str();
  e.working_directory = n.at("working_directory").str();
  e.artifacts = n.at("artifacts").list([](const Node& a) {
    return ExecArtifact{a.at("name").str(), a.at("pattern").str(), a.at("kind").str(), a.at("note").str(), a.at("bytes").i64()};
  });
  e.metrics = n.at("metrics").list([](const Node& m) { return ExecMetric{m.at("name").str(), m.at("regex").str(), m.at("occurrences").i32()}; });
  e.hook = n.at("hook").str();
  e.hook_note = n.at("hook_note").str();
  e.checklist = n.at("checklist").list([](const Node& c) {
    ChecklistItem item;
    item.id = c.at("id").str();
    item.status = c.at("status").str();
    if (item.status != "ok" && item.status != "missing" && item.status != "not-applicable")
      c.at("status").fail(fmt::format("unknown checklist status '{}'", item.status));
    item.text = c.at("text").str();
    item.where = c.at("where").str();
    item.ranks = c.at("ranks").list([](const Node& r) { return r.i32(); });
    item.artifact = c.at("artifact").str();
    return item;
  });
  e.world_size = n.at("world_size").i32();
  e.backend = n.at("backend").str();
  const Node launcher = n.at("launcher_set");
  if (!launcher.v.is_object()) launcher.fail("expected an object of strings");
  for (const auto& item : launcher.v.items()) e.launcher_set[item.key()] = launcher.at(item.key()).str();
  if (const Node r = n.at("ranks_equal"); !r.null())
    e.ranks_equal = RanksEqual{r.at("equal").boolean(), r.at("config").str(), r.at("repeat").i32(), r.at("artifact").str(),
                               r.at("rank").i32(), r.at("tensor").str(), r.at("compared").i32()};
  return e;
}

Target target(const Node& n) {
  Target t;
  detail::read_target_head(n, t, detail::TargetDoc::Report);
  const bool dependent = n.at("configuration_dependent").boolean();
  if (const Node d = n.at("configuration_dependence"); !d.null()) {
    ConfigDependence dep;
    const Node groups = d.at("groups");
    dep.groups = groups.list([](const Node& g) { return g.strings(); });
    dep.differing = findings(d.at("differing_tensors"));
    if (d.has("causes"))
      dep.causes = d.at("causes").list([](const Node& c) {
        ConfigCause cause;
        cause.reference_config = c.at("reference_config").str();
        cause.config = c.at("config").str();
        cause.switches = c.at("switches").list([](const Node& sw) {
          return SwitchChange{sw.at("key").str(), sw.at("reference").str(), sw.at("other").str()};
        });
        if (const Node tr = c.at("trace"); !tr.null()) cause.trace = trace(tr);
        cause.note = c.at("note").str();
        return cause;
      });
    t.dependence = dep;
  }
  if (dependent != t.dependence.has_value())
    n.at("configuration_dependent").fail("disagrees with configuration_dependence");
  t.configs = n.at("configs").list(config);
  if (n.has("probe")) t.probe = probe(n.at("probe"));
  if (n.has("replay")) t.replay = replay(n.at("replay"));
  if (n.has("exec")) t.exec = exec_facts(n.at("exec"));
  return t;
}

Census census(const Node& n) {
  Census c;
  c.config = n.at("config").str();
  c.alerted_diverged = n.at("alerted_diverged").strings();
  c.alerted_stable = n.at("alerted_stable").strings();
  c.silent_diverged = n.at("silent_diverged").strings();
  c.stable = n.at("stable").strings();
  c.not_run = n.at("not_run").strings();
  return c;
}

EnvironmentChange change(const Node& n, bool with_affects = true) {
  return {n.at("key").str(), n.at("baseline").str(), n.at("current").str(), with_affects ? n.at("affects").str() : ""};
}

std::optional<TensorDigest> tensor_digest(const Node& n, const std::string& name) {
  if (n.null()) return std::nullopt;
  return TensorDigest{name, n.at("dtype").str(), n.at("shape").i64s(), n.at("digest").str()};
}

std::optional<Verdict> opt_verdict(const Node& n) { return n.null() ? std::nullopt : std::optional<Verdict>(verdict(n)); }

BaselineResult baseline_result(const Node& n) {
  BaselineResult r;
  r.target = n.at("target").str();
  r.config = n.at("config").str();
  const Node status = n.at("status");
  const auto s = baseline_status_from_string(status.str());
  if (!s) status.fail(fmt::format("unknown baseline status '{}'", status.str()));
  r.status = *s;
  r.baseline_verdict = opt_verdict(n.at("baseline_verdict"));
  r.current_verdict = opt_verdict(n.at("verdict"));
  r.reason = n.at("reason").str();
  r.switch_changes = n.at("switch_changes").list([](const Node& c) { return change(c); });
  r.explained_by = n.at("explained_by").strings();
  r.tensors = size_t(n.at("tensors").u64());
  r.differing = size_t(n.at("differing").u64());
  r.differing_tensors = n.at("differing_tensors").list([](const Node& t) {
    const std::string name = t.at("name").str();
    return BaselineTensor{name, tensor_digest(t.at("baseline"), name), tensor_digest(t.at("current"), name)};
  });
  // Reports written before op streams have neither.
  if (n.has("first_changed_op") && !n.at("first_changed_op").null()) r.first_changed_op = root_cause(n.at("first_changed_op"));
  if (n.has("op_note")) r.op_note = n.at("op_note").str();
  return r;
}

BaselineComparison baseline(const Node& n) {
  BaselineComparison b;
  b.source = n.at("source").str();
  b.schema = n.at("schema").str();
  b.tool_version = n.at("tool_version").str();
  b.changes = n.at("environment_changes").list([](const Node& c) { return change(c); });
  b.ignored = n.at("ignored_changes").list([](const Node& c) { return change(c, false); });
  // Reports written before identities by content have none.
  if (n.has("models"))
    b.models = n.at("models").list([](const Node& m) {
      const std::string relation = m.at("relation").str();
      if (relation != "resaved" && relation != "other_weights") m.at("relation").fail("expected resaved or other_weights");
      return ModelChange{m.at("target").str(), relation, m.at("reason").str()};
    });
  b.results = n.at("results").list(baseline_result);
  if (n.has("fail_on_explained")) b.fail_on_explained = n.at("fail_on_explained").boolean();
  return b;
}

// timing.trials lists every trial in report order (target, configuration, repeat), as to_json writes it.
void read_trial_times(const Node& timing, Report& r) {
  const Node list = timing.at("trials");
  size_t i = 0;
  for (auto& t : r.targets)
    for (auto& c : t.configs)
      for (auto& trial : c.trials) {
        if (i >= list.size()) list.fail(fmt::format("no entry for {} / {} repeat {}", t.name, c.name, trial.repeat));
        const Node e = list[i++];
        if (e.at("target").str() != t.name || e.at("config").str() != c.name || e.at("repeat").i32() != trial.repeat)
          e.fail(fmt::format("expected the entry for {} / {} repeat {}", t.name, c.name, trial.repeat));
        trial.wall_ms = e.at("wall_ms").num();
        trial.startup_ms = e.at("startup_ms").num();
      }
  if (i != list.size()) list[i].fail("entry for no trial of the report");
}

// timing.fixes: one entry per fix search in report order, with the measured candidates by name.
void read_fix_times(const Node& timing, Report& r) {
  const Node list = timing.at("fixes");
  size_t i = 0;
  for (auto& t : r.targets)
    for (auto& c : t.configs) {
      if (!c.fix_search) continue;
      if (i >= list.size()) list.fail(fmt::format("no entry for the fix search of {} / {}", t.name, c.name));
      const Node e = list[i++];
      if (e.at("target").str() != t.name || e.at("config").str() != c.name)
        e.fail(fmt::format("expected the entry for the fix search of {} / {}", t.name, c.name));
      FixSearch& f = *c.fix_search;
      f.baseline_median_ms = e.at("baseline_median_ms").opt_num();
      const Node cands = e.at("candidates");
      for (size_t k = 0; k < cands.size(); ++k) {
        const Node m = cands[k];
        const std::string name = m.at("config").str();
        FixCandidate* found = nullptr;
        for (auto& cand : f.candidates)
          if (cand.config == name && !cand.median_ms) {
            found = &cand;
            break;
          }
        if (!found) m.at("config").fail(fmt::format("no candidate '{}' in the fix search", name));
        found->median_ms = m.at("median_ms").num();
        found->cost_ratio = m.at("cost_ratio").opt_num();
        if (m.has("cost_low")) found->cost_low = m.at("cost_low").opt_num();
        if (m.has("cost_high")) found->cost_high = m.at("cost_high").opt_num();
      }
    }
  if (i != list.size()) list[i].fail("entry for no fix search of the report");
}

}  // namespace

DivergenceStats stats_from_json(const json& j) { return stats(Node{j, ""}); }

Report report_from_json(const json& j) {
  const Node root{j, ""};
  if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string() ||
      j["schema"].get<std::string>() != "repro-audit/report") {
    if (j.is_object() && j.contains("schema") && j["schema"].is_string())
      throw ReportError(fmt::format("not a repro-audit report (its schema is '{}')", j["schema"].get<std::string>()));
    throw ReportError("not a repro-audit report (no \"schema\": \"repro-audit/report\")");
  }
  const Node version = root.at("schema_version");
  if (!version.v.is_number_integer()) version.fail("expected an integer");
  if (version.v.get<int64_t>() != kSchemaVersion)
    throw ReportError(fmt::format("report schema version {} is not supported by this repro-audit (it reads version {})",
                                  version.v.dump(), kSchemaVersion));
  Report r;
  r.tool_version = root.at("tool").at("version").str();
  r.command = root.at("command").strings();
  r.verdict = verdict(root.at("verdict"));
  r.exit_code = root.at("exit_code").i32();
  const Node environment = root.at("environment");
  if (!environment.v.is_object() && !environment.v.is_null())
    environment.fail("expected an object (the environment fingerprint)");
  r.environment = environment.v;  // opaque: whatever the fingerprint held
  r.targets = root.at("targets").list(target);
  if (root.has("census")) r.census = census(root.at("census"));
  if (root.has("baseline")) r.baseline = baseline(root.at("baseline"));
  if (root.has("selftest")) {
    const Node st = root.at("selftest");
    SelfTest self;
    self.device = st.at("device").str();
    self.checks = st.at("checks").list([](const Node& n) {
      SelfCheck c;
      c.name = n.at("name").str();
      c.passed = n.at("passed").boolean();
      c.evidence = n.at("evidence").str();
      return c;
    });
    if (!r.targets.empty()) root.at("targets").fail("a self-test report has no targets");
    r.selftest = std::move(self);
  }
  r.allowlist_expired = root.at("allowlist_expired").strings();
  if (root.has("allowlist_notes")) r.allowlist_notes = root.at("allowlist_notes").strings();
  if (root.has("tolerance")) {
    const Node t = root.at("tolerance");
    if (!t.at("atol").null()) r.tolerance = Tolerance{t.at("atol").num(), t.at("rtol").num()};
    r.tolerant = t.at("tolerant").boolean();
  }
  if (root.has("auto_repeats")) {
    const Node a = root.at("auto_repeats");
    r.auto_repeats = AutoRepeats{a.at("min").i32(), a.at("max").i32(), a.at("detect_rate").num()};
  }
  if (root.has("shard")) {
    const Node n = root.at("shard");
    ShardInfo sh;
    sh.plan = n.at("plan").str();
    sh.index = n.at("index").i32();
    sh.count = n.at("count").i32();
    if (sh.count < 1 || sh.index < 1 || sh.index > sh.count) n.at("index").fail("not a shard K of N with 1 <= K <= N");
    sh.plan_cells = n.at("plan_cells").u64();
    sh.configs = n.at("configs").strings();
    if (sh.configs.empty() ? sh.plan_cells != 0 : sh.plan_cells % sh.configs.size() != 0)
      n.at("plan_cells").fail("not a whole number of targets x configurations");
    sh.first_cell = n.at("first_cell").u64();
    sh.last_cell = n.at("last_cell").u64();
    if (sh.first_cell > sh.last_cell || sh.last_cell > sh.plan_cells) n.at("last_cell").fail("not a range of the plan's cells");
    sh.source = n.at("source").str();
    const Node variables = n.at("variables");
    if (!variables.v.is_object()) variables.fail("expected an object");
    for (const auto& item : variables.v.items()) sh.variables.emplace_back(item.key(), variables.at(item.key()).str());
    sh.host = n.at("host").str();
    sh.tensors = n.at("tensors").str();
    sh.census = n.at("census").list([](const Node& c) {
      return CensusRecord{c.at("target").str(), c.at("completed").boolean(), c.at("alerts").strings()};
    });
    r.shard = std::move(sh);
  }
  if (root.has("fleet")) {
    const Node n = root.at("fleet");
    Fleet f;
    f.count = n.at("count").i32();
    f.plan = n.at("plan").str();
    f.replicated = n.at("replicated").boolean();
    f.shards = n.at("shards").list([](const Node& s) {
      return FleetShard{s.at("index").i32(), s.at("host").str(), s.at("source").str(), s.at("first_cell").u64(),
                        s.at("last_cell").u64(), s.at("machine").i32(), s.at("wall_ms").num()};
    });
    f.machines = n.at("machines").list([](const Node& m) {
      FleetMachine out;
      out.shards = m.at("shards").list([](const Node& k) { return k.i32(); });
      out.changes = m.at("changes").list([](const Node& c) { return change(c); });
      const Node env = m.at("environment");
      if (!env.v.is_object()) env.fail("expected an object (the environment fingerprint)");
      out.environment = env.v;
      return out;
    });
    f.failures = n.at("failures").list([](const Node& x) {
      return FleetFailure{x.at("target").str(), x.at("config").str(), x.at("status").str(), x.at("host").str(),
                          x.at("shard").i32(), x.at("machine").i32()};
    });
    f.cells = n.at("cells").list([](const Node& c) {
      return FleetCell{c.at("target").str(), c.at("config").str(), c.at("outcomes").strings(), c.at("same").boolean()};
    });
    f.notes = n.at("notes").strings();
    r.fleet = std::move(f);
  }
  const Node timing = root.at("timing");
  r.wall_ms = timing.at("wall_ms").num();
  if (timing.has("contention")) r.contention = timing.at("contention").str();
  timing.at("configs").size();  // derived from the trials' times: checked, not read
  read_trial_times(timing, r);
  read_fix_times(timing, r);
  // The verdict and the exit code follow from the targets: a CI gate must not trust a stored
  // number that a hand edit or a corruption could change. Recompute them; refuse a disagreement.
  Report check = r;
  finalize(check);
  if (check.exit_code != r.exit_code)
    root.at("exit_code").fail(fmt::format("{} disagrees with the report's verdicts, which give exit code {}", r.exit_code,
                                          check.exit_code));
  if (check.verdict != r.verdict)
    root.at("verdict").fail(fmt::format("'{}' disagrees with the targets' verdicts, which give '{}'", to_string(r.verdict),
                                        to_string(check.verdict)));
  return r;
}

namespace detail {

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
  c.switches = n.at("switches").list([](const Node& s) {
    return SwitchValue{s.at("key").str(), s.at("requested").str_or_null(), s.at("effective").str(),
                       s.has("set_at") ? s.at("set_at").str() : std::string()};
  });
  if (n.has("op_stream")) {
    const Node o = n.at("op_stream");
    if (o.at("format").i32() != 1) o.at("format").fail("unknown op stream format");
    OpStream stream;
    if (o.has("ops"))
      stream.ops = o.at("ops").list([](const Node& op) {
        return OpStreamOp{op.at("op").str(), op.at("phase").str(), op.at("direction").str(), op.at("node").str(),
                          op.at("forward_op").str(), op.at("module").str(), op.at("source").str()};
      });
    stream.threads = o.at("threads").list([](const Node& t) {
      OpStreamThread th;
      const uint64_t thread = t.at("thread").u64();
      if (thread > UINT32_MAX) t.at("thread").fail("expected a thread number below 2^32");
      th.thread = static_cast<uint32_t>(thread);
      th.records = t.at("records").u64();
      th.packed = t.at("packed").str();
      // 24 bytes a record in base64 without padding: 32 characters each; names 4 each.
      if (th.packed.size() % 32 != 0 || th.packed.size() / 32 != th.records)
        t.at("packed").fail("length does not match the record count");
      if (t.has("names")) {
        th.names = t.at("names").str();
        if (th.names.size() % 4 != 0 || th.names.size() / 4 != th.records)
          t.at("names").fail("length does not match the record count");
      }
      return th;
    });
    c.op_stream = std::move(stream);
  }
}

std::vector<TensorDigest> read_digests(const Node& n) {
  return n.list([](const Node& t) { return TensorDigest{t.at("name").str(), t.at("dtype").str(), t.at("shape").i64s(), t.at("digest").str()}; });
}

void read_target_head(const Node& n, Target& t, TargetDoc doc) {
  t.name = n.at("name").str();
  t.kind = n.at("kind").str();
  if (doc == TargetDoc::Report) t.path = n.at("path").str();
  // Reports written before targets carried their identity have no digests; baselines always do.
  if (doc == TargetDoc::Baseline || n.has("model_digest")) t.model_digest = n.at("model_digest").str_or_null();
  if (doc == TargetDoc::Baseline || n.has("input_digest")) t.input_digest = n.at("input_digest").str_or_null();
  // Written since identities survive a re-save; without them a model is matched by its bytes.
  if (n.has("weights_digest")) t.weights_digest = n.at("weights_digest").str();
  if (n.has("graph_digest")) t.graph_digest = n.at("graph_digest").str();
  t.device = n.at("device").str();
  t.mode = n.at("mode").str();
  t.steps = n.at("steps").i32();
  if (const Node o = n.at("optimizer"); !o.null()) {
    t.optimizer = o.at("name").str();
    t.lr = o.at("lr").num();
  }
  t.seed = n.at("seed").u64();
  t.inputs = n.at("inputs").strings();
  if (doc == TargetDoc::Report && n.has("package")) {
    const Node p = n.at("package");
    if (!p.v.is_object()) p.fail("expected an object of strings");
    for (const auto& item : p.v.items()) t.package[item.key()] = p.at(item.key()).str();
  }
  if (doc == TargetDoc::Report && n.has("notes")) t.notes = n.at("notes").strings();
  if (doc == TargetDoc::Report && n.has("input_names")) {
    t.input_names = n.at("input_names").strings();
    if (t.input_names.size() != t.inputs.size()) n.at("input_names").fail("needs one name per input");
  }
  t.verdict = verdict(n.at("verdict"));
}

}  // namespace detail

}  // namespace ra::report
