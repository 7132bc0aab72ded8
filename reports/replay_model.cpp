// SPDX-License-Identifier: Apache-2.0
// The restart-replay verdict's name (reports/replay_model.h).
#include "reports/replay_model.h"

namespace ra::report {

const char* to_string(ReplayVerdict v) {
  switch (v) {
    case ReplayVerdict::Reproducible:
      return "reproducible";
    case ReplayVerdict::Diverged:
      return "diverged";
    case ReplayVerdict::Inconclusive:
      return "inconclusive";
    case ReplayVerdict::Crashed:
      return "crashed";
  }
  return "?";
}

}  // namespace ra::report
