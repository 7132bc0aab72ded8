// SPDX-License-Identifier: Apache-2.0
#include "audit/trial/probe_protocol.h"

#include <fstream>

namespace ra {
namespace {

using nlohmann::json;

std::string line_of(json j) { return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

}  // namespace

std::string probe_begin_line(const TrialResult& header) {
  json j = to_json(header);
  j["event"] = "begin";
  return line_of(j);
}

std::string probe_start_line(const std::string& probe) { return line_of({{"event", "start"}, {"probe", probe}}); }

std::string probe_result_line(const std::string& probe, const TrialResult& result) {
  json j = to_json(result);
  j["event"] = "probe";
  j["probe"] = probe;
  return line_of(j);
}

std::string probe_end_line() { return line_of({{"event", "end"}}); }
std::string probe_restart_line(const std::string& reason) {
  return line_of({{"event", "restart"}, {"reason", reason}});
}

ProbeLog read_probe_log(const std::string& path) {
  ProbeLog log;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    json j;
    try {
      j = json::parse(line);
      const std::string event = j.at("event").get<std::string>();
      if (event == "begin") {
        log.begin = trial_result_from_json(j);
      } else if (event == "start") {
        log.running = j.at("probe").get<std::string>();
      } else if (event == "probe") {
        const std::string probe = j.at("probe").get<std::string>();
        log.done[probe] = trial_result_from_json(j);
        if (log.running == probe) log.running.clear();
      } else if (event == "end") {
        log.ended = true;
      } else if (event == "restart") {
        log.restart = j.at("reason").get<std::string>();
        if (log.restart.empty()) log.restart = "restart";
      }
    } catch (const std::exception&) {
      break;  // a torn line: the child died while writing it
    }
  }
  return log;
}

}  // namespace ra
