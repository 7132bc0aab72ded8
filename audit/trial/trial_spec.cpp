// SPDX-License-Identifier: Apache-2.0
#include "audit/trial/trial_spec.h"

#include "audit/common/errors.h"
#include "reports/utf8.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <set>

namespace ra {
namespace {

const std::set<std::string> kDtypes = {"float32", "float64", "float16", "bfloat16", "int8",
                                       "uint8",   "int16",   "int32",   "int64",    "bool"};

uint64_t fnv1a(uint64_t h, const std::string& s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

const char* task_name(ChildTask t) {
  switch (t) {
    case ChildTask::Preflight:
      return "preflight";
    case ChildTask::Probes:
      return "probes";
    case ChildTask::Referee:
      return "referee";
    case ChildTask::Trial:
      break;
  }
  return "trial";
}

nlohmann::json digests_json(const std::vector<report::TensorDigest>& tensors) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : tensors)
    out.push_back({{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"digest", t.digest}});
  return out;
}

std::vector<report::TensorDigest> digests_from_json(const nlohmann::json& j) {
  std::vector<report::TensorDigest> out;
  for (const auto& t : j)
    out.push_back({t.at("name"), t.at("dtype"), t.at("shape").get<std::vector<int64_t>>(), t.at("digest")});
  return out;
}

}  // namespace

ShapeSpec parse_shape(const std::string& text) {
  ShapeSpec spec;
  std::string dims = text;
  if (const size_t colon = text.find(':'); colon != std::string::npos) {
    dims = text.substr(0, colon);
    spec.dtype = text.substr(colon + 1);
    if (!kDtypes.count(spec.dtype))
      throw UsageError(
          fmt::format("unknown dtype '{}' in --shape '{}' (dtypes: {})", spec.dtype, text, fmt::join(kDtypes, ", ")));
  }
  size_t start = 0;
  while (true) {
    const size_t x = dims.find('x', start);
    const std::string d = dims.substr(start, x - start);
    char* end = nullptr;
    const long long v = std::strtoll(d.c_str(), &end, 10);
    if (d.empty() || *end != '\0' || v < 0 || v > (1ll << 40))
      throw UsageError(fmt::format("bad --shape '{}': expected sizes like 8x3x224x224[:float32]", text));
    spec.sizes.push_back(v);
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return spec;
}

double default_learning_rate(const std::string& optimizer) { return optimizer == "adam" ? 0.001 : 0.01; }

std::string to_string(const ShapeSpec& s) {
  return s.dtype.empty() ? fmt::format("{}", fmt::join(s.sizes, "x"))
                         : fmt::format("{}:{}", fmt::join(s.sizes, "x"), s.dtype);
}

namespace {

// Paths are bytes. A spec carries them exactly: as a JSON string when they are UTF-8, else as
// {"bytes": HEX} (JSON strings cannot hold other bytes, and the child must open the same file).
nlohmann::json exact(const std::string& s) {
  if (report::valid_utf8(s)) return s;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (const unsigned char c : s) (hex += kHex[c >> 4]) += kHex[c & 15];
  return {{"bytes", hex}};
}

nlohmann::json exact(const std::vector<std::string>& v) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : v) out.push_back(exact(s));
  return out;
}

std::string exact_string(const nlohmann::json& j) {
  if (!j.is_object()) return j.get<std::string>();
  const std::string hex = j.at("bytes").get<std::string>();
  if (hex.size() % 2 != 0) throw std::invalid_argument("odd number of hex digits in a path");
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

std::vector<std::string> exact_strings(const nlohmann::json& j) {
  std::vector<std::string> out;
  for (const auto& item : j) out.push_back(exact_string(item));
  return out;
}

}  // namespace

nlohmann::json to_json(const TrialSpec& s) {
  nlohmann::json shapes = nlohmann::json::array();
  for (const auto& sh : s.shapes) shapes.push_back({{"sizes", sh.sizes}, {"dtype", sh.dtype}});
  return {{"task", task_name(s.task)},
          {"model", exact(s.model)},
          {"input_file", exact(s.input_file)},
          {"shapes", shapes},
          {"vocab", s.vocab},
          {"device", s.device.to_string()},
          {"mode", s.mode},
          {"steps", s.steps},
          {"optimizer", s.optimizer},
          {"lr", s.lr},
          {"seed", s.seed},
          {"config", {{"name", s.config.name}, {"values", s.config.values}}},
          {"load_libraries", exact(s.load_libraries)},
          {"dump_path", exact(s.dump_path)},
          {"dump_only_differing", s.dump_only_differing},
          {"repeat", s.repeat},
          {"probes", s.probes},
          {"time_probes", s.time_probes},
          {"trace_path", exact(s.trace_path)},
          {"trace_capacity", s.trace_capacity},
          {"capture_order", s.capture_order},
          {"capture_path", exact(s.capture_path)},
          {"timed_runs", s.timed_runs},
          {"calls", s.calls},
          {"state_step", s.state_step},
          {"checkpoint",
           {{"save_path", exact(s.checkpoint.save_path)},
            {"resume_path", exact(s.checkpoint.resume_path)},
            {"resume_step", s.checkpoint.resume_step},
            {"omit", s.checkpoint.omit}}},
          {"precision", s.precision},
          {"reference_dump", exact(s.reference_dump)}};
}

TrialSpec trial_spec_from_json(const nlohmann::json& j) {
  TrialSpec s;
  const std::string task = j.at("task").get<std::string>();
  s.task = task == "preflight" ? ChildTask::Preflight
           : task == "probes"  ? ChildTask::Probes
           : task == "referee" ? ChildTask::Referee
                               : ChildTask::Trial;
  s.model = exact_string(j.at("model"));
  s.input_file = exact_string(j.at("input_file"));
  for (const auto& sh : j.at("shapes"))
    s.shapes.push_back({sh.at("sizes").get<std::vector<int64_t>>(), sh.at("dtype").get<std::string>()});
  s.vocab = j.value("vocab", int64_t{0});
  const std::string device = j.at("device").get<std::string>();
  const std::optional<Device> parsed = Device::from_string(device);  // the worker's edge: parsed once
  if (!parsed) throw InputError(fmt::format("malformed trial spec: unknown device '{}' (use cpu or cuda[:N])", device));
  s.device = *parsed;
  s.mode = j.at("mode").get<std::string>();
  s.steps = j.at("steps").get<int>();
  s.seed = j.at("seed").get<uint64_t>();
  s.config.name = j.at("config").at("name").get<std::string>();
  s.config.values = j.at("config").at("values").get<std::map<std::string, std::string>>();
  s.load_libraries = exact_strings(j.at("load_libraries"));
  s.dump_path = exact_string(j.at("dump_path"));
  if (j.contains("dump_only_differing"))
    s.dump_only_differing =
        j.at("dump_only_differing").get<std::map<std::string, std::map<std::string, std::string>>>();
  s.repeat = j.at("repeat").get<int>();
  s.probes = j.value("probes", std::vector<std::string>{});
  s.time_probes = j.value("time_probes", false);
  s.trace_path = j.contains("trace_path") ? exact_string(j.at("trace_path")) : std::string();
  s.trace_capacity = j.value("trace_capacity", uint64_t{0});
  s.capture_order = j.value("capture_order", int64_t{-1});
  s.capture_path = j.contains("capture_path") ? exact_string(j.at("capture_path")) : std::string();
  s.timed_runs = j.value("timed_runs", 0);
  s.calls = j.value("calls", 1);
  s.optimizer = j.value("optimizer", std::string("sgd"));
  s.lr = j.value("lr", 0.01);
  s.state_step = j.value("state_step", 0);
  if (j.contains("checkpoint")) {
    const auto& c = j.at("checkpoint");
    s.checkpoint.save_path = exact_string(c.at("save_path"));
    s.checkpoint.resume_path = exact_string(c.at("resume_path"));
    s.checkpoint.resume_step = c.at("resume_step").get<int>();
    s.checkpoint.omit = c.at("omit").get<std::vector<std::string>>();
  }
  s.precision = j.value("precision", std::string());
  s.reference_dump = j.contains("reference_dump") ? exact_string(j.at("reference_dump")) : std::string();
  return s;
}

nlohmann::json to_json(const TrialResult& r) {
  nlohmann::json switches = nlohmann::json::array();
  for (const auto& sw : r.switches)
    switches.push_back({{"key", sw.key}, {"requested", sw.requested}, {"effective", sw.effective}});
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : r.tensors)
    tensors.push_back({{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"digest", t.digest}});
  nlohmann::json later = nlohmann::json::array();
  for (const auto& call : r.later_calls) later.push_back(digests_json(call));
  nlohmann::json errors = nlohmann::json::array();
  for (const auto& e : r.errors) errors.push_back(nlohmann::json(report::reference_error_to_json(e)));
  return {{"status", report::to_string(r.status)},
          {"message", r.message},
          {"error_kind", r.error_kind},
          {"switches", switches},
          {"tensors", tensors},
          {"state", digests_json(r.state)},
          {"alerts", r.alerts},
          {"environment", r.environment},
          {"inputs", r.input_descriptions},
          {"input_names", r.input_names},
          {"package", r.package},
          {"weights_digest", r.weights_digest},
          {"graph_digest", r.graph_digest},
          {"untraceable", r.untraceable},
          {"warnings", r.warnings},
          {"startup_ms", r.startup_ms},
          {"wall_ms", r.wall_ms},
          {"run_ms", r.run_ms},
          {"dump_error", r.dump_error},
          {"later_calls", later},
          {"mutated", r.mutated},
          {"traced_call", r.traced_call},
          {"errors", errors}};
}

TrialResult trial_result_from_json(const nlohmann::json& j) {
  TrialResult r;
  const auto status = report::trial_status_from_string(j.at("status").get<std::string>());
  if (!status) throw std::runtime_error("unknown trial status");
  r.status = *status;
  r.message = j.at("message").get<std::string>();
  r.error_kind = j.at("error_kind").get<std::string>();
  for (const auto& sw : j.at("switches"))
    r.switches.push_back({sw.at("key"), sw.at("requested"), sw.at("effective"), ""});
  for (const auto& t : j.at("tensors"))
    r.tensors.push_back({t.at("name"), t.at("dtype"), t.at("shape").get<std::vector<int64_t>>(), t.at("digest")});
  if (j.contains("state")) r.state = digests_from_json(j.at("state"));
  r.alerts = j.value("alerts", std::vector<std::string>{});
  r.environment = nlohmann::ordered_json::parse(j.at("environment").dump());
  r.input_descriptions = j.at("inputs").get<std::vector<std::string>>();
  r.input_names = j.value("input_names", std::vector<std::string>{});
  r.package = j.value("package", std::map<std::string, std::string>{});
  r.weights_digest = j.value("weights_digest", std::string());
  r.graph_digest = j.value("graph_digest", std::string());
  r.untraceable = j.value("untraceable", std::string());
  r.warnings = j.value("warnings", std::vector<std::string>{});
  r.startup_ms = j.at("startup_ms").get<double>();
  r.wall_ms = j.at("wall_ms").get<double>();
  r.run_ms = j.value("run_ms", std::vector<double>{});
  r.dump_error = j.value("dump_error", std::string());
  if (j.contains("later_calls"))
    for (const auto& call : j.at("later_calls")) r.later_calls.push_back(digests_from_json(call));
  r.mutated = j.value("mutated", std::vector<std::string>{});
  r.traced_call = j.value("traced_call", 0);
  if (j.contains("errors"))
    for (const auto& e : j.at("errors"))
      r.errors.push_back(report::reference_error_from_json(nlohmann::ordered_json(e)));
  return r;
}

std::string call_trace_path(const std::string& trace_path) { return trace_path + ".call"; }

std::string outcome_digest(const std::vector<report::TensorDigest>& tensors) {
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  for (const auto& t : tensors) {
    const std::string line = fmt::format("{}|{}|{}|{}\n", t.name, t.dtype, fmt::join(t.shape, "x"), t.digest);
    a = fnv1a(a, line);
    b = fnv1a(b ^ a, line);
  }
  return fmt::format("{:016x}{:016x}", a, b);
}

}  // namespace ra
