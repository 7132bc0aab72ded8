// SPDX-License-Identifier: Apache-2.0
// The probe registry: every built-in probe, in a fixed order (families in the order of
// registry.cpp, probes in the order their family registers them), plus probes added at run time
// by a `--load-library` plugin (see ra_probe_plugin_v1 below).
#pragma once

#include "probes/probe.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ra::probes {

using ProbeList = std::vector<std::unique_ptr<Probe>>;

// One function per family file; each appends its probes.
void register_convolution(ProbeList& out);
void register_scatter_index(ProbeList& out);
void register_pooling(ProbeList& out);
void register_resampling(ProbeList& out);
void register_losses(ProbeList& out);
void register_recurrent(ProbeList& out);
void register_embedding(ProbeList& out);
void register_reductions(ProbeList& out);
void register_linear_algebra(ProbeList& out);
void register_attention(ProbeList& out);
void register_memory(ProbeList& out);
void register_batch_invariance(ProbeList& out);

// Every registered probe. The first call builds the list; plugins append to it.
const ProbeList& all_probes();
const Probe* find_probe(std::string_view name);

// Adds probes from a plugin; throws std::invalid_argument for a name that is already taken or
// not of the form [a-z0-9_.-]+.
void add_probes(ProbeList extra);

// Checks a probe name's form; returns "" or the reason it is invalid.
std::string check_probe_name(std::string_view name);

}  // namespace ra::probes

// A shared library given with --load-library may export this C-linkage function to add probes
// (tests use it for a deliberately nondeterministic positive control). It must be built against
// the same headers and compiler as repro-audit.
extern "C" {
using ra_probe_plugin_v1_fn = void (*)(ra::probes::ProbeList& out);
}
