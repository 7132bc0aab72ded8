// SPDX-License-Identifier: Apache-2.0
// The JSON writer and reader of the core structs (reports/core_model.h), side by side: each reader
// is the inverse of the writer above it, and names the JSON path of whatever it refuses.
#include "reports/json_parts.h"
#include "reports/render.h"

#include <fmt/format.h>

#include <cmath>

namespace ra::report {
namespace {

using json = nlohmann::ordered_json;
using detail::Node;
using detail::number_or_null;

TrialStatus trial_status(const Node& n) {
  const auto s = trial_status_from_string(n.str());
  if (!s) n.fail(fmt::format("unknown trial status '{}'", n.str()));
  return *s;
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

DivergenceStats stats_from_json(const json& j) { return detail::read_stats(Node{j, ""}); }

namespace detail {

DivergenceStats read_stats(const Node& n) {
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

std::optional<DivergenceStats> read_opt_stats(const Node& n) {
  return n.null() ? std::nullopt : std::optional<DivergenceStats>(read_stats(n));
}

json finding_json(const TensorFinding& f) {
  json j = {{"name", f.name},
            {"dtype", f.dtype},
            {"shape", f.shape},
            {"reference_digest", f.reference_digest},
            {"other_digest", f.other_digest},
            {"diverging_trials", f.diverging_trials}};
  j["stats"] = f.stats ? stats_to_json(*f.stats) : json(nullptr);
  if (f.referee) j["referee"] = classified_json(*f.referee);
  return j;
}

TensorFinding read_finding(const Node& n) {
  TensorFinding f;
  f.name = n.at("name").str();
  f.dtype = n.at("dtype").str();
  f.shape = n.at("shape").i64s();
  f.reference_digest = n.at("reference_digest").str();
  f.other_digest = n.at("other_digest").str();
  f.diverging_trials = n.at("diverging_trials").i32();
  f.stats = read_opt_stats(n.at("stats"));
  if (n.has("referee")) f.referee = read_classified(n.at("referee"));
  return f;
}

json findings_json(const std::vector<TensorFinding>& findings) {
  json out = json::array();
  for (const auto& f : findings) out.push_back(finding_json(f));
  return out;
}

std::vector<TensorFinding> read_findings(const Node& n) { return n.list(read_finding); }

json digests_json(const std::vector<TensorDigest>& digests) {
  json out = json::array();
  for (const auto& t : digests)
    out.push_back({{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"digest", t.digest}});
  return out;
}

std::vector<TensorDigest> read_digests(const Node& n) {
  return n.list([](const Node& t) {
    return TensorDigest{t.at("name").str(), t.at("dtype").str(), t.at("shape").i64s(), t.at("digest").str()};
  });
}

json switch_json(const SwitchValue& s) {
  json j = {{"key", s.key},
            {"requested", s.requested.empty() ? json(nullptr) : json(s.requested)},
            {"effective", s.effective}};
  if (!s.set_at.empty()) j["set_at"] = s.set_at;
  return j;
}

SwitchValue read_switch(const Node& s) {
  return SwitchValue{s.at("key").str(), s.at("requested").str_or_null(), s.at("effective").str(),
                     s.has("set_at") ? s.at("set_at").str() : std::string()};
}

json trial_json(const Trial& t) {
  json j = {{"repeat", t.repeat},   {"status", to_string(t.status)}, {"exit_code", t.exit_code}, {"signal", t.signal},
            {"message", t.message}, {"stderr_tail", t.stderr_tail},  {"outcome", t.outcome}};
  if (!t.device.empty()) j["device"] = t.device;
  return j;
}

Trial read_trial(const Node& n) {
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

void add_trial_times(json& entry, const Trial& t) {
  entry["wall_ms"] = t.wall_ms;
  entry["startup_ms"] = t.startup_ms;
}

void read_trial_times(const Node& entry, Trial& t) {
  t.wall_ms = entry.at("wall_ms").num();
  t.startup_ms = entry.at("startup_ms").num();
}

json allowed_by_json(const AllowedBy& a) {
  return {{"entry", a.entry}, {"reason", a.reason}, {"expires", a.expires.empty() ? json(nullptr) : json(a.expires)}};
}

AllowedBy read_allowed_by(const Node& a) {
  return AllowedBy{a.at("entry").i32(), a.at("reason").str(), a.at("expires").str_or_null()};
}

json change_json(const EnvironmentChange& c, bool with_affects) {
  json j = {{"key", c.key}, {"baseline", c.baseline}, {"current", c.current}};
  if (with_affects) j["affects"] = c.affects;
  return j;
}

EnvironmentChange read_change(const Node& n, bool with_affects) {
  return {n.at("key").str(), n.at("baseline").str(), n.at("current").str(), with_affects ? n.at("affects").str() : ""};
}

}  // namespace detail

}  // namespace ra::report
