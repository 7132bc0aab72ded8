// SPDX-License-Identifier: Apache-2.0
// The worker's side of `repro-audit invariance` (`repro-audit-worker __invariance REQUEST RESULT`).
//
// The problem. A row's output can depend on the batch it shares: a GEMM library picks another
// blocking for another M, a reduction another split, a kernel another tile. Users meet it as "the
// same prompt gives other logits in a batch". Finding the sizes by hand means writing a harness per
// model; comparing whole outputs costs a copy of every output to the host.
//
// The approach. In one process (the configuration's switches applied first, as a trial child does),
// the target is loaded through the target seam (any kind that implements Target::call), each anchor
// row is run alone (size 1: the reference), then for each size M the anchors are placed at the
// start, middle and end of a batch of filler rows and in a permuted batch, and the start batch is
// called twice (warm-up). Only the anchor rows' slices of each output are looked at: digested where
// they lie (worker/digest/digest.h), statistics only for a slice whose digest differs (a slice, not an
// output, reaches the host). `--sizes auto` then bisects between neighbouring sizes that disagree in
// their start bits or in whether a row's place or a second call changes them, so each boundary of a
// class and of position dependence is exact.
//
// Unusual models (issue 39). Each anchor alone is called a third time: when call 3 differs from call
// 2, the model draws new numbers on every call (or changes state it reads), no size can be judged,
// and the sweep ends there, `nondeterministic`. A model that raises at some size stops the sweep at
// that size: the sizes measured before it are returned with the size and message (`stopped`).
//
// The cost. Three calls per anchor alone, then five per size (four placements and the warm-up), each
// on a batch built by one index_select per input on the device, plus a digest per anchor row and
// output: the model's own forward passes dominate (bench/invariance_overhead.sh).
#pragma once

#include "audit/invariance/invariance_protocol.h"

namespace ra::invariance {

// Applies the request's configuration, loads its target, and sweeps. Throws InputError for a bad
// model or input, UsageError for a bad request, anything else for a failure of the model. When
// `progress_path` is given, the sweep's progress is rewritten there as each size starts and ends
// (SweepProgress, invariance_protocol.h).
InvarianceMeasurement run_sweep(const InvarianceRequest& request, const std::string& scratch,
                                const std::string& progress_path = "");

}  // namespace ra::invariance
