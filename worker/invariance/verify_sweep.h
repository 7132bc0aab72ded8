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
// share/export_hf.py writes it), so a decode step is a call whose sequence ends at the token, and a
// verify block of b tokens that ends at token e is the call that ends there too: the call of the
// row's first e+1 tokens, whose last b positions are compared, token by token, with the decode
// steps that end at each. A block holds at one place, but speculative decoding verifies at every
// place of a generation (issue 54: blocks of 2…4 tokens were advised from the blocks that start at
// token 28, and every block ending at token 32 differed). So the sweep measures a window: the
// row's last W = draft + positions tokens, from token F = S - W (from 0). For each anchor row of S
// tokens it calls every prefix of F+1, F+2, …, S tokens, each twice (warm-up: the second call
// against the first), and keeps every token of the window in each; each call is the decode step of
// its last token. A block length b is then measured at every place inside the window: its S-F-b+1
// places (`positions` for the longest block, draft+1 tokens), and holds only where every token of
// every place got its decode step's bits. Every batched input is cut along dim 1 (a mask and
// position ids are cut with the ids), one row per call, so the batch plays no part. The first
// prefix is called a third time (a model that draws new numbers on every call is nondeterministic,
// as on the batch axis).
//
// The cost. 2W + 1 calls per anchor of at most S tokens: with the default draft of 4 and 3
// positions, 15 calls (as many as the single place took before: each block was its own call), and
// W²/2 token digests.
#pragma once

#include "audit/invariance/invariance_protocol.h"
#include "worker/invariance/batch_rows.h"
#include "worker/targets/target.h"

#include <c10/core/Device.h>

#include <cstdint>
#include <functional>

namespace ra::invariance {

// The sweep's steps for the progress file, each a prefix length: planned once, then started and ended.
enum class StepEvent { Plan, Start, End };
using StepProgress = std::function<void(int64_t tokens, StepEvent event)>;

// Sweeps the prefixes of the window and fills `m`'s outputs, excluded, cells (for the block lengths
// 1…draft+1, or those of `request.sizes` when it names some: the fix search's sweeps; a block
// length's cells one per place, InvarianceCell::start), control, calls and times, and its
// nondeterministic or stopped sentence. Throws TrialInputError for inputs without a sequence
// dimension, rows shorter than draft + positions tokens, or an archive with a static sequence length.
void sweep_verify(targets::Target& target, const BatchRows& rows, const InvarianceRequest& request,
                  const c10::Device& device, InvarianceMeasurement& m, const StepProgress& progress);

}  // namespace ra::invariance
