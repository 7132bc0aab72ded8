// SPDX-License-Identifier: Apache-2.0
#include "audit/invariance/invariance_protocol.h"

#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>

namespace ra {

std::string axis_name(Axis a) {
  switch (a) {
    case Axis::Batch:
      return "batch";
    case Axis::PadRight:
      return "pad-right";
    case Axis::PadLeft:
      return "pad-left";
    case Axis::Verify:
      return "verify";
  }
  return "batch";
}

std::optional<Axis> axis_named(const std::string& name) {
  for (const Axis a : {Axis::Batch, Axis::PadRight, Axis::PadLeft, Axis::Verify})
    if (axis_name(a) == name) return a;
  return std::nullopt;
}

nlohmann::json to_json(const InvarianceRequest& r) {
  return {{"spec", to_json(r.spec)},
          {"rows", r.rows},
          {"filler", r.filler == Filler::Random ? "random" : "input"},
          {"sizes", r.sizes},
          {"budget", r.budget},
          {"batch_dims", r.batch_dims},
          {"fingerprint", r.fingerprint},
          {"bisect", r.bisect},
          {"trace", r.trace},
          {"axis", axis_name(r.axis)},
          {"draft", r.draft},
          {"positions", r.positions},
          {"referee", r.referee}};
}

InvarianceRequest invariance_request_from_json(const nlohmann::json& j) {
  InvarianceRequest r;
  r.spec = trial_spec_from_json(j.at("spec"));
  r.rows = j.at("rows").get<int>();
  r.filler = j.at("filler").get<std::string>() == "random" ? Filler::Random : Filler::Input;
  r.sizes = j.at("sizes").get<std::vector<int64_t>>();
  r.budget = j.at("budget").get<int64_t>();
  r.batch_dims = j.at("batch_dims").get<std::vector<int64_t>>();
  r.fingerprint = j.at("fingerprint").get<bool>();
  r.bisect = j.value("bisect", false);
  r.trace = j.at("trace").get<bool>();
  const auto axis = axis_named(j.value("axis", std::string("batch")));
  if (!axis) throw std::invalid_argument("unknown axis " + j.value("axis", std::string()));
  r.axis = *axis;
  r.draft = j.value("draft", 4);
  r.positions = j.value("positions", 3);
  r.referee = j.value("referee", false);
  return r;
}

nlohmann::ordered_json to_json(const InvarianceMeasurement& m) {
  nlohmann::ordered_json switches = nlohmann::ordered_json::array();
  for (const auto& s : m.switches)
    switches.push_back({{"key", s.key}, {"requested", s.requested}, {"effective", s.effective}});
  nlohmann::ordered_json errors = nlohmann::ordered_json::array();
  for (const auto& e : m.errors)
    errors.push_back({{"anchor", e.anchor},
                      {"output", e.output},
                      {"digest", e.digest},
                      {"error", report::reference_error_to_json(e.error)}});
  return {{"kind", m.kind},
          {"runtime", m.runtime},
          {"inputs", m.inputs},
          {"switches", switches},
          {"outputs", m.outputs},
          {"excluded", m.excluded},
          {"notes", m.notes},
          {"control", {{"detected", m.control.detected}, {"evidence", m.control.evidence}}},
          {"cells", report::cells_to_json(m.cells)},
          {"forward_ms", m.forward_ms},
          {"calls", m.calls},
          {"sweep_ms", m.sweep_ms},
          {"nondeterministic", m.nondeterministic},
          {"stopped", m.stopped},
          {"trace", m.trace ? report::row_trace_to_json(*m.trace) : nlohmann::ordered_json(nullptr)},
          {"environment", m.environment},
          {"errors", errors}};
}

InvarianceMeasurement invariance_measurement_from_json(const nlohmann::ordered_json& j) {
  InvarianceMeasurement m;
  m.kind = j.at("kind").get<std::string>();
  m.runtime = j.value("runtime", std::string());
  m.inputs = j.at("inputs").get<std::vector<std::string>>();
  for (const auto& s : j.at("switches"))
    m.switches.push_back(
        {s.at("key").get<std::string>(), s.at("requested").get<std::string>(), s.at("effective").get<std::string>()});
  m.outputs = j.at("outputs").get<std::vector<std::string>>();
  m.excluded = j.at("excluded").get<std::vector<std::string>>();
  m.notes = j.at("notes").get<std::vector<std::string>>();
  m.control = {j.at("control").at("detected").get<bool>(), j.at("control").at("evidence").get<std::string>()};
  m.cells = report::cells_from_json(j.at("cells"));
  m.forward_ms = j.at("forward_ms").get<double>();
  m.calls = j.at("calls").get<int64_t>();
  m.sweep_ms = j.at("sweep_ms").get<double>();
  m.nondeterministic = j.value("nondeterministic", std::string());
  m.stopped = j.value("stopped", std::string());
  if (!j.at("trace").is_null()) m.trace = report::row_trace_from_json(j.at("trace"));
  m.environment = j.at("environment");
  if (j.contains("errors"))
    for (const auto& e : j.at("errors"))
      m.errors.push_back({e.at("anchor").get<int>(), e.at("output").get<std::string>(),
                          e.at("digest").get<std::string>(), report::reference_error_from_json(e.at("error"))});
  return m;
}

std::string sweep_progress_path(const std::string& result_path) { return result_path + ".progress"; }

std::string to_text(const SweepProgress& p) {
  return nlohmann::json{{"done", p.done}, {"planned", p.planned}, {"current", p.current}, {"eta_s", p.eta_s}}.dump();
}

std::optional<SweepProgress> read_sweep_progress(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > 4096) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  SweepProgress p;
  for (auto [key, field] : {std::pair{"done", &p.done}, {"planned", &p.planned}, {"current", &p.current}}) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer() || it->get<int64_t>() < 0) return std::nullopt;
    *field = it->get<int64_t>();
  }
  if (p.done > p.planned) return std::nullopt;
  if (const auto it = j.find("eta_s"); it != j.end() && it->is_number()) p.eta_s = it->get<double>();
  return p;
}

std::vector<int64_t> auto_sizes(int64_t budget) {
  std::set<int64_t> s;
  for (int64_t m = 1; m <= 9 && m <= budget; ++m) s.insert(m);
  for (int64_t p = 8; p <= budget; p *= 2)
    for (const int64_t m : {p - 1, p, p + 1})
      if (m <= budget) s.insert(m);
  return {s.begin(), s.end()};
}

}  // namespace ra
