// SPDX-License-Identifier: Apache-2.0
// `repro-audit invariance --axis verify`, the worker's sweep (issue 41, item 6).
//
// The problem. A serving engine with speculative decoding runs a verify pass: the last accepted
// token and k draft tokens in one call of k+1 positions, whose logits decide which drafts to
// accept. Decoding one token at a time would have produced each of those tokens' logits in a call
// that ends at it. When the two calls give a token other bits (a GEMM whose blocking follows the
// row count, an attention reduction split by the key length), the engine accepts other tokens than
// plain decoding would: "the same prompt gives other text with speculative decoding on".
//
// The approach. The model is one without a KV cache (an export of forward(input_ids, ...), as
// share/export_hf.py writes it), so a decode step is a call whose sequence ends at the token. For
// each anchor row of S tokens and L = S - draft: the decode steps are the calls of the row's first
// L, L+1, …, L+draft tokens, each keeping the output at its last position; the verify block of
// k+1 tokens (k = 1…draft) is the call of the first L+k tokens, whose last k+1 positions are
// compared, token by token, with those decode steps. Every batched input is cut along dim 1 (a
// mask and position ids are cut with the ids), one row per call, so the batch plays no part. A
// block is called twice (warm-up), and the first decode step three times (a model that draws new
// numbers on every call is nondeterministic, as on the batch axis).
//
// The cost. 3 + draft calls for the decode steps and 2 per block length, per anchor: with the
// default draft of 4, 11 calls per anchor of at most S tokens.
#pragma once

#include "audit/invariance/invariance_protocol.h"
#include "worker/invariance/batch_rows.h"
#include "worker/targets/target.h"

#include <c10/core/Device.h>

#include <cstdint>
#include <functional>

namespace ra::invariance {

// Called as each block length starts (true) and ends (false), for the progress file.
using BlockProgress = std::function<void(int64_t tokens, bool starting)>;

// Sweeps the block lengths 1…draft+1 (only those of `request.sizes`, when it names some: the fix
// search's sweeps) and fills `m`'s outputs, excluded, cells, control, calls and times, and its
// nondeterministic or stopped sentence. Throws TrialInputError for inputs without a sequence
// dimension, rows too short for the draft, or an archive with a static sequence length.
void sweep_verify(targets::Target& target, const BatchRows& rows, const InvarianceRequest& request,
                  const c10::Device& device, InvarianceMeasurement& m, const BlockProgress& progress);

}  // namespace ra::invariance
