// SPDX-License-Identifier: Apache-2.0
// `repro-audit probes`: the parent side of the probe suite.
//
// The design is told at the top of audit/probes/probe_audit.cpp; what its loop also handles:
//   * a sticky device error (c10::AcceleratorError: an illegal address, a device-side assert)
//     poisons the CUDA context, so the child files that probe, logs `restart` and exits; the probes
//     left run in a new child and nobody is charged a crash;
//   * a probe marked `isolated` (audit/probes/probe_info.h) runs in a child of its own in every
//     configuration, repeat and the census;
//   * a probe that does not run on the device gets `skipped` verdicts without a child; one that
//     throws ProbeSkip gets `skipped` trials;
//   * the preflight is a probe child with no probes: it checks the device and the plugins and
//     brings back the fingerprint.
#pragma once

#include "audit/fleet/shard_run.h"
#include "audit/knowledge/knowledge.h"
#include "audit/trial/config.h"
#include "audit/trial/trials.h"
#include "reports/model.h"

#include <optional>
#include <string>
#include <vector>

#include "audit/probes/probe_info.h"

namespace ra {

struct ProbeRunOptions : SessionOptions {
  std::vector<std::string> only;  // shell globs on probe or family names; empty = every probe
  bool census = true;             // run each probe once more under det-warn and collect alerts
  bool time_probes = true;        // time unrecorded runs of each probe: the cost of each configuration
  std::string knowledge_digest;   // of the knowledge base the findings are judged against (part of a shard's plan)
  std::optional<fleet::ShardOptions> shard;  // --shard: run only this shard's cells (audit/fleet/shard_run.h)
};

// Every probe, built in and from the --load-library plugins, in suite order, as the worker
// describes them (audit/trial/worker_client.h). Throws InputError for an unreadable or unusable library.
std::vector<probes::ProbeInfo> probe_catalogue(const std::vector<std::string>& libraries);

// The probes `only` selects, in suite order: a glob matches a probe's name or its family. Throws
// UsageError naming a glob that matches nothing.
std::vector<probes::ProbeInfo> select_probes(const std::vector<probes::ProbeInfo>& all,
                                             const std::vector<std::string>& only);

// Runs the preflight (device and plugins; throws UsageError/InputError), then every configuration
// x repeat in its own child running all selected probes, plus the census child, and returns the
// finished report: one target per probe.
report::Report run_probe_suite(const ProbeRunOptions& options, const KnowledgeBase& kb);

// The configurations `probes` uses when --configs is not given.
std::vector<std::string> default_probe_config_names(const Device& device);

}  // namespace ra
