// SPDX-License-Identifier: Apache-2.0
// The report as JSON (reports/render.h) and back (reports/json_read.h), side by side: `to_json`
// joins the concerns' writers (json_parts.h) and keeps every clock figure in "timing";
// `report_from_json` is its inverse. The kind of a file is read here once (`read_kind`, which the
// baseline file's reader shares), and each kind's body by its own reader. Every accessor takes the JSON path of the value it reads, so
// an error names the field ("targets[0].configs[1].trials[2].status: expected a string").
#include "reports/json_read.h"
#include "reports/render.h"
#include "reports/utf8.h"

#include "reports/json_node.h"
#include "reports/json_parts.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <utility>

namespace ra::report {
namespace {

using json = nlohmann::ordered_json;
using detail::Node;
using detail::verdict;

// timing.trials lists every trial in report order (target, configuration, repeat), as to_json writes it.
void read_trial_times(const Node& timing, const Targets& targets) {
  const Node list = timing.at("trials");
  size_t i = 0;
  for (auto& t : targets)
    for (auto& c : t.configs)
      for (auto& trial : c.trials) {
        if (i >= list.size()) list.fail(fmt::format("no entry for {} / {} repeat {}", t.name, c.name, trial.repeat));
        const Node e = list[i++];
        if (e.at("target").str() != t.name || e.at("config").str() != c.name || e.at("repeat").i32() != trial.repeat)
          e.fail(fmt::format("expected the entry for {} / {} repeat {}", t.name, c.name, trial.repeat));
        detail::read_trial_times(e, trial);
      }
  if (i != list.size()) list[i].fail("entry for no trial of the report");
}

// timing.fixes: one entry per fix search in report order, with the measured candidates by name.
void read_fix_times(const Node& timing, const Targets& targets) {
  const Node list = timing.at("fixes");
  size_t i = 0;
  for (auto& t : targets)
    for (auto& c : t.configs) {
      if (!c.fix_search) continue;
      if (i >= list.size()) list.fail(fmt::format("no entry for the fix search of {} / {}", t.name, c.name));
      const Node e = list[i++];
      if (e.at("target").str() != t.name || e.at("config").str() != c.name)
        e.fail(fmt::format("expected the entry for the fix search of {} / {}", t.name, c.name));
      detail::read_fix_times(e, *c.fix_search);
    }
  if (i != list.size()) list[i].fail("entry for no fix search of the report");
}

// The targets of a body, each read by its kind's reader (target_json.cpp).
template <class Element>
std::vector<Element> read_targets(const Node& list) {
  return list.list([](const Node& n) {
    Element t;
    detail::read_target(n, t);
    return t;
  });
}

template <class Element>
json targets_json(const std::vector<Element>& targets) {
  json out = json::array();
  for (const auto& t : targets) out.push_back(detail::target_json(t));
  return out;
}

void no_targets(const Node& targets, const char* what) {
  if (targets.size() != 0) targets.fail(fmt::format("{} has no targets", what));
}

// The body of the file's kind (read_kind, once, here at the edge), read by that kind's reader.
Body read_body(const Node& root) {
  Body body = detail::read_kind(root);
  const Node targets = root.at("targets");
  std::visit(overloaded{[&](RunBody& b) { b.targets = read_targets<RunTarget>(targets); },
                        [&](ExecBody& b) { b.targets = read_targets<ExecTarget>(targets); },
                        [&](ProbesBody& b) {
                          b.targets = read_targets<ProbeTarget>(targets);
                          if (root.has("census")) b.census = detail::read_census(root.at("census"));
                        },
                        [&](Invariance& inv) {
                          no_targets(targets, "an invariance report");
                          inv = invariance_from_json(root.at("invariance").v);
                        },
                        [&](SelfTest& self) {
                          no_targets(targets, "a self-test report");
                          self = detail::read_selftest(root.at("selftest"));
                        }},
             body);
  return body;
}

}  // namespace

json to_json(const Report& r) {
  json timing_trials = json::array();
  json timing_costs = json::array();
  json timing_fixes = json::array();
  for (const auto& t : r.targets()) {
    for (size_t i = 0; i < t.configs.size(); ++i) {
      const ConfigResult& c = t.configs[i];
      if (const auto median = median_wall_ms(c)) {
        const auto ratio = cost_ratio(t, i);
        timing_costs.push_back({{"target", t.name},
                                {"config", c.name},
                                {"median_ms", *median},
                                {"ratio_to_first", ratio ? json(*ratio) : json(nullptr)}});
      }
      if (c.fix_search) {
        json entry = {{"target", t.name}, {"config", c.name}};
        detail::add_fix_times(entry, *c.fix_search);
        timing_fixes.push_back(std::move(entry));
      }
      for (const auto& trial : c.trials) {
        json entry = {{"target", t.name}, {"config", c.name}, {"repeat", trial.repeat}};
        detail::add_trial_times(entry, trial);
        timing_trials.push_back(std::move(entry));
      }
    }
  }
  // The body's targets (none for invariance and selftest) and its own keys, which keep the order
  // the schema's examples have: census, baseline, selftest, fleet, invariance.
  json targets = json::array(), census, selftest, invariance;
  std::visit(overloaded{[&](const RunBody& b) { targets = targets_json(b.targets); },
                        [&](const ExecBody& b) { targets = targets_json(b.targets); },
                        [&](const ProbesBody& b) {
                          targets = targets_json(b.targets);
                          if (b.census) census = detail::census_json(*b.census);
                        },
                        [&](const Invariance& inv) { invariance = invariance_to_json(inv); },
                        [&](const SelfTest& self) { selftest = detail::selftest_json(self); }},
             r.body);
  json j = {{"schema", "repro-audit/report"},
            {"schema_version", kSchemaVersion},
            {"kind", std::string(kind_of(r.body).name)},
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
  if (r.auto_repeats) j["auto_repeats"] = detail::auto_repeats_json(*r.auto_repeats);
  if (r.shard) j["shard"] = detail::shard_json(*r.shard);
  if (!census.is_null()) j["census"] = std::move(census);
  if (r.baseline) j["baseline"] = detail::baseline_json(*r.baseline);
  if (!selftest.is_null()) j["selftest"] = std::move(selftest);
  if (r.fleet) j["fleet"] = detail::fleet_json(*r.fleet);
  if (!invariance.is_null()) j["invariance"] = std::move(invariance);
  j["timing"] = {{"wall_ms", r.wall_ms}, {"configs", timing_costs}, {"fixes", timing_fixes}, {"trials", timing_trials}};
  if (!r.contention.empty()) j["timing"]["contention"] = r.contention;
  return j;
}

std::string render_json(const Report& r) {
  auto j = to_json(r);
  make_printable(j);  // paths are bytes: shown as \xNN where they are not UTF-8
  return j.dump(2) + "\n";
}

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
  r.body = read_body(root);
  if (root.has("baseline")) r.baseline = detail::read_baseline(root.at("baseline"));
  r.allowlist_expired = root.at("allowlist_expired").strings();
  if (root.has("allowlist_notes")) r.allowlist_notes = root.at("allowlist_notes").strings();
  if (root.has("tolerance")) {
    const Node t = root.at("tolerance");
    if (!t.at("atol").null()) r.tolerance = Tolerance{t.at("atol").num(), t.at("rtol").num()};
    r.tolerant = t.at("tolerant").boolean();
  }
  if (root.has("auto_repeats")) r.auto_repeats = detail::read_auto_repeats(root.at("auto_repeats"));
  if (root.has("shard")) r.shard = detail::read_shard(root.at("shard"));
  if (root.has("fleet")) r.fleet = detail::read_fleet(root.at("fleet"));
  const Node timing = root.at("timing");
  r.wall_ms = timing.at("wall_ms").num();
  if (timing.has("contention")) r.contention = timing.at("contention").str();
  timing.at("configs").size();            // derived from the trials' times: checked, not read
  read_trial_times(timing, r.targets());  // none for invariance and selftest
  read_fix_times(timing, r.targets());
  // The verdict and the exit code follow from the targets: a CI gate must not trust a stored
  // number that a hand edit or a corruption could change. Recompute them; refuse a disagreement.
  Report check = r;
  finalize(check);
  if (check.exit_code != r.exit_code)
    root.at("exit_code")
        .fail(fmt::format("{} disagrees with the report's verdicts, which give exit code {}", r.exit_code,
                          check.exit_code));
  if (check.verdict != r.verdict)
    root.at("verdict").fail(fmt::format("'{}' disagrees with the targets' verdicts, which give '{}'",
                                        to_string(r.verdict), to_string(check.verdict)));
  return r;
}

namespace detail {

std::string legacy_kind(const Node& root) {
  if (root.has("selftest")) return "selftest";
  if (root.has("invariance")) return "invariance";
  if (root.has("census")) return "probes";
  const Node targets = root.at("targets");
  if (!targets.v.is_array() || targets.v.empty() || !targets.v.front().is_object()) return "run";
  const json& kind = targets.v.front().value("kind", json());
  if (kind == "probe") return "probes";
  if (kind == "command") return "exec";
  return "run";
}

Body read_kind(const Node& root) {
  const std::string name = root.has("kind") ? root.at("kind").str() : legacy_kind(root);
  if (std::optional<Body> body = body_of_kind(name)) return std::move(*body);
  std::vector<std::string> names;
  for (const auto& k : kKinds) names.emplace_back(k.name);
  root.at("kind").fail(
      fmt::format("'{}' is not a kind this repro-audit reads (it reads {})", name, fmt::join(names, ", ")));
}

}  // namespace detail

}  // namespace ra::report
