// SPDX-License-Identifier: Apache-2.0
// From a probe's measured verdicts to what they mean against the documentation: the census class
// and the disagreements. Torch-free, so the rules are unit-tested on hand-made verdicts.
//
// The rules, for a probe on device type D whose knowledge-base entry E applies to D:
//   * under a configuration with use_deterministic_algorithms on (deterministic=on read back):
//     E documented "raises" but the probe completed without raising -> disagreement; not
//     documented to raise but it raised -> disagreement; documented "made deterministic" but it
//     diverged -> disagreement;
//   * under configurations with it off: E documented nondeterministic (either list) but never
//     diverged in any of them with at least two completed repeats each -> "not observed"; a probe
//     without an applicable entry, or a control, that diverged -> disagreement;
//   * census (warn_only run): an alert where none is documented, or no alert where E raises.
//   * E's measurements of this probe on D (another machine's run): a verdict under a
//     configuration that differs from the one measured there.
// An entry that does not apply to D (a CUDA row probed on the CPU) documents nothing for D: the
// op is expected to be deterministic and silent there.
#pragma once

#include "audit/knowledge/knowledge.h"
#include "reports/model.h"

#include <optional>
#include <string>
#include <vector>

namespace ra {

struct CensusRun {
  bool completed = false;           // the census trial of this probe finished (ok or raised)
  std::vector<std::string> alerts;  // determinism alerts it raised as warnings
};

// Fills the probe's facts' census, alerts and disagreements from its configurations.
void judge_probe(report::ProbeTarget& probe, const KnowledgeEntry* entry, const Device& device,
                 const std::optional<CensusRun>& census);

// Why each configuration of a probe that does not run on `device` is skipped ("the probe does not
// run on cuda": its type); such a probe is not judged.
std::string probe_off_device_message(const Device& device);

// Cross-tabulates the census over probe targets, in their order.
report::Census cross_tabulate(const std::vector<report::ProbeTarget>& targets, const std::string& config_name);

}  // namespace ra
