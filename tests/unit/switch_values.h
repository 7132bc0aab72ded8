// SPDX-License-Identifier: Apache-2.0
// The values the tests try for a switch of the table (audit/trial/config.h): a Bool's on and off, a
// Choice's choices, and two thread counts.
#pragma once

#include "audit/trial/config.h"

#include <string>
#include <vector>

namespace ra::test {

inline std::vector<std::string> switch_values(const SwitchInfo& s) {
  switch (s.kind) {
    case SwitchKind::Bool:
      return {"on", "off"};
    case SwitchKind::Threads:
      return {"1", "2"};
    case SwitchKind::Choice:
      break;
  }
  return s.choices;
}

}  // namespace ra::test
