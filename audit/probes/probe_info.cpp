// SPDX-License-Identifier: Apache-2.0
#include "audit/probes/probe_info.h"

#include <stdexcept>

namespace ra::probes {

const char* to_string(Direction d) { return d == Direction::Forward ? "forward" : "backward"; }
const char* to_string(Role r) { return r == Role::Probe ? "probe" : "control"; }

nlohmann::json to_json(const ProbeInfo& i) {
  return {{"name", i.name}, {"family", i.family},
          {"op", i.op},     {"cpu", i.cpu},
          {"cuda", i.cuda}, {"direction", to_string(i.direction)},
          {"kb", i.kb},     {"role", to_string(i.role)},
          {"form", i.form}, {"isolated", i.isolated}};
}

ProbeInfo probe_info_from_json(const nlohmann::json& j) {
  try {
    ProbeInfo i;
    i.name = j.at("name").get<std::string>();
    i.family = j.at("family").get<std::string>();
    i.op = j.at("op").get<std::string>();
    i.cpu = j.at("cpu").get<bool>();
    i.cuda = j.at("cuda").get<bool>();
    i.direction = j.at("direction").get<std::string>() == "backward" ? Direction::Backward : Direction::Forward;
    i.kb = j.at("kb").get<std::string>();
    i.role = j.at("role").get<std::string>() == "control" ? Role::Control : Role::Probe;
    i.form = j.at("form").get<std::string>();
    i.isolated = j.value("isolated", false);
    return i;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("malformed probe description: ") + e.what());
  }
}

}  // namespace ra::probes
