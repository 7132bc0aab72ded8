// SPDX-License-Identifier: Apache-2.0
// The JSON writer and reader of a self-test (reports/selftest_model.h), side by side: the reader is
// the inverse of the writer above it, and names the JSON path of whatever it refuses.
#include "reports/json_parts.h"

namespace ra::report::detail {

json selftest_json(const SelfTest& s) {
  json checks = json::array();
  for (const auto& c : s.checks) checks.push_back({{"name", c.name}, {"passed", c.passed}, {"evidence", c.evidence}});
  return {{"device", s.device}, {"checks", checks}};
}

SelfTest read_selftest(const Node& st) {
  SelfTest self;
  self.device = st.at("device").str();
  self.checks = st.at("checks").list([](const Node& n) {
    SelfCheck c;
    c.name = n.at("name").str();
    c.passed = n.at("passed").boolean();
    c.evidence = n.at("evidence").str();
    return c;
  });
  return self;
}

}  // namespace ra::report::detail
