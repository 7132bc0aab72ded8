// SPDX-License-Identifier: Apache-2.0
// The verify axis's sweep (see verify_sweep.h for the essay).
#include "worker/invariance/verify_sweep.h"

#include "audit/common/errors.h"
#include "worker/digest/digest.h"
#include "worker/digest/tensor_stats.h"
#include "worker/invariance/negative_control.h"
#include "worker/runtime/child_support.h"
#include "worker/targets/export_archive.h"

#include <ATen/ATen.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

namespace ra::invariance {
namespace {

using report::InvarianceCell;
using report::RowComparison;

struct Token {
  at::Tensor t;  // one output's slice at one position
  std::string digest;
};

// The model raised on a prefix of some length: the sweep stops there, the lengths before it kept.
struct BlockFailure : TrialInputError {
  using TrialInputError::TrialInputError;
};

class VerifySweep {
 public:
  VerifySweep(targets::Target& target, const BatchRows& rows, const c10::Device& device, int64_t length, int draft)
      : target_(target), rows_(rows), device_(device), length_(length), draft_(draft), first_(length - draft) {}

  void decode_steps(int anchor);
  bool steady(int anchor);
  void block(int anchor, int64_t tokens);
  void drop(int64_t tokens);
  void fill(InvarianceMeasurement& m);
  std::string nondeterministic;

 private:
  std::vector<at::Tensor> call(int anchor, int64_t tokens);
  std::vector<Token> tokens_at(const std::vector<at::Tensor>& out, int64_t position) const;
  InvarianceCell& cell(int64_t size, const char* placement);

  targets::Target& target_;
  const BatchRows& rows_;
  c10::Device device_;
  int64_t length_;  // S: the anchor rows' tokens
  int draft_;
  int64_t first_;                                            // L: the first decode step's tokens
  std::vector<std::string> names_;                           // every output
  std::vector<std::string> excluded_;                        // "" where compared
  std::vector<std::vector<std::vector<Token>>> decode_;      // [anchor][step j][output]
  std::map<std::pair<int64_t, int>, InvarianceCell> cells_;  // by size, then second-call before block
  double forward_ms_ = 0;
  int64_t calls_ = 0;
};

// The anchor's first `tokens` tokens alone: every batched input cut along dim 1.
std::vector<at::Tensor> VerifySweep::call(int anchor, int64_t tokens) {
  std::vector<c10::IValue> args = make_batch(rows_, {anchor}, device_);
  for (size_t i = 0; i < args.size(); ++i)
    if (rows_.dims[i] >= 0) args[i] = args[i].toTensor().narrow(1, 0, tokens);
  const NamedTensors flat = timed_call(target_, args, device_, forward_ms_, calls_, [&](const std::exception& e) {
    throw BlockFailure(fmt::format("the model fails on a sequence of {} tokens: {}", tokens, error_text(e)));
  });
  const bool first = names_.empty();
  if (first)
    for (const auto& [name, t] : flat) names_.push_back(name), excluded_.emplace_back();
  if (flat.size() != names_.size())
    throw TrialInputError(fmt::format("the model returns {} tensors for {} tokens but {} for {}", flat.size(), tokens,
                                      names_.size(), first_));
  std::vector<at::Tensor> tensors;
  for (size_t i = 0; i < flat.size(); ++i) {
    const at::Tensor& t = flat[i].second;
    const bool follows = t.dim() >= 2 && t.size(0) == 1 && t.size(1) == tokens;
    if (excluded_[i].empty() && !follows) {
      const std::string shape = fmt::format("{}[{}]", dtype_name(t.scalar_type()), fmt::join(t.sizes(), "x"));
      if (!first)
        throw TrialInputError(fmt::format("the model's {} is {} for {} tokens: its shape does not follow the sequence",
                                          names_[i], shape, tokens));
      excluded_[i] = fmt::format("{}: {} for 1 row of {} tokens; it does not keep the sequence at dim 1", names_[i],
                                 shape, tokens);
    }
    tensors.push_back(t);
  }
  if (std::all_of(excluded_.begin(), excluded_.end(), [](const std::string& e) { return !e.empty(); }))
    throw TrialInputError(
        fmt::format("no output of the model follows the sequence ({}): --axis verify compares the tokens of outputs "
                    "shaped [batch x sequence x ...], such as logits",
                    excluded_.front()));
  return tensors;
}

std::vector<Token> VerifySweep::tokens_at(const std::vector<at::Tensor>& out, int64_t position) const {
  std::vector<Token> tokens(out.size());
  for (size_t i = 0; i < out.size(); ++i)
    if (excluded_[i].empty()) {
      const at::Tensor slice = out[i].select(0, 0).select(0, position);
      tokens[i] = {slice, digest(slice)};
    }
  return tokens;
}

InvarianceCell& VerifySweep::cell(int64_t size, const char* placement) {
  InvarianceCell& c = cells_[{size, std::string(placement) == "block" ? 1 : 0}];
  c.size = size, c.placement = placement;
  return c;
}

// The decode steps that end at tokens L-1 … L-1+draft; the first is the block of one token.
void VerifySweep::decode_steps(int anchor) {
  if (decode_.size() <= static_cast<size_t>(anchor)) decode_.resize(static_cast<size_t>(anchor) + 1);
  auto& steps = decode_[static_cast<size_t>(anchor)];
  for (int j = 0; j <= draft_; ++j) {
    // Kept as copies: a token is a view of what the model returned, which may be its own buffer
    // that the next call writes again.
    std::vector<Token> tokens = tokens_at(call(anchor, first_ + j), first_ + j - 1);
    for (Token& t : tokens)
      if (t.t.defined()) t.t = t.t.clone();
    steps.push_back(std::move(tokens));
  }
  for (size_t i = 0; i < names_.size(); ++i)
    if (excluded_[i].empty())
      cell(1, "block").rows.push_back({anchor, names_[i], 0, steps.front()[i].digest, true, 0, 0});
}

// The first decode step twice more: the second call against the first ("second-call" of size 1),
// the third against the second (false, with `nondeterministic` said, when they differ).
bool VerifySweep::steady(int anchor) {
  const auto& first = decode_[static_cast<size_t>(anchor)].front();
  const std::vector<Token> second = tokens_at(call(anchor, first_), first_ - 1);
  const std::vector<Token> third = tokens_at(call(anchor, first_), first_ - 1);
  for (size_t i = 0; i < names_.size(); ++i) {
    if (!excluded_[i].empty()) continue;
    RowComparison row{anchor, names_[i], 0, second[i].digest, second[i].digest == first[i].digest, 0, 0};
    if (!row.equal) {
      const report::DivergenceStats s = tensor_difference(first[i].t, second[i].t);
      row.max_abs = s.max_abs_diff, row.max_ulp = s.max_ulp;
    }
    cell(1, "second-call").rows.push_back(std::move(row));
    if (third[i].digest != second[i].digest && nondeterministic.empty())
      nondeterministic = fmt::format(
          "anchor {}'s {} at the decode step of {} tokens gets other bits on every call in one process (call 3 "
          "differs from call 2): the model is nondeterministic (random numbers drawn on every call, or state it "
          "changes), so no block length gives a token stable bits",
          anchor, names_[i], first_);
  }
  return nondeterministic.empty();
}

// The block of `tokens` = k+1 tokens ending at L-1+k, twice: each of its tokens against the decode
// step that ends there ("block"), and the second call against the first ("second-call").
void VerifySweep::block(int anchor, int64_t tokens) {
  const int64_t k = tokens - 1, end = first_ + k;
  const std::vector<at::Tensor> out = call(anchor, end), again = call(anchor, end);
  const auto& steps = decode_[static_cast<size_t>(anchor)];
  for (int64_t j = 0; j <= k; ++j) {
    const std::vector<Token> got = tokens_at(out, first_ - 1 + j), second = tokens_at(again, first_ - 1 + j);
    for (size_t i = 0; i < names_.size(); ++i) {
      if (!excluded_[i].empty()) continue;
      const Token& want = steps[static_cast<size_t>(j)][i];
      if (want.t.sizes() != got[i].t.sizes() || want.t.scalar_type() != got[i].t.scalar_type())
        throw TrialInputError(
            fmt::format("the model's {} changes shape with the sequence: a token is {}[{}] in a "
                        "block of {} but {}[{}] at its decode step",
                        names_[i], dtype_name(got[i].t.scalar_type()), fmt::join(got[i].t.sizes(), "x"), tokens,
                        dtype_name(want.t.scalar_type()), fmt::join(want.t.sizes(), "x")));
      RowComparison row{anchor, names_[i], j, got[i].digest, got[i].digest == want.digest, 0, 0};
      if (!row.equal) {
        const report::DivergenceStats s = tensor_difference(want.t, got[i].t);
        row.max_abs = s.max_abs_diff, row.max_ulp = s.max_ulp;
      }
      cell(tokens, "block").rows.push_back(std::move(row));
      RowComparison warm{anchor, names_[i], j, second[i].digest, second[i].digest == got[i].digest, 0, 0};
      if (!warm.equal) {
        const report::DivergenceStats s = tensor_difference(got[i].t, second[i].t);
        warm.max_abs = s.max_abs_diff, warm.max_ulp = s.max_ulp;
      }
      cell(tokens, "second-call").rows.push_back(std::move(warm));
    }
  }
}

// A block length the model failed on is measured whole or not at all.
void VerifySweep::drop(int64_t tokens) {
  std::erase_if(cells_, [&](const auto& c) { return c.first.first == tokens; });
}

void VerifySweep::fill(InvarianceMeasurement& m) {
  for (size_t i = 0; i < names_.size(); ++i)
    (excluded_[i].empty() ? m.outputs : m.excluded).push_back(excluded_[i].empty() ? names_[i] : excluded_[i]);
  for (auto& [key, c] : cells_) m.cells.push_back(std::move(c));
  size_t out = 0;
  while (out < excluded_.size() && !excluded_[out].empty()) ++out;
  if (!decode_.empty() && out < names_.size()) {
    const Token& ref = decode_.front().front()[out];
    m.control = negative_control(ref.t, ref.digest, names_[out], device_);
  }
  m.forward_ms = forward_ms_;
  m.calls = calls_;
}

// The batched inputs' sequence length (dim 1), the same in each; the batch must be at dim 0.
int64_t sequence_length(const BatchRows& rows) {
  int64_t length = -1;
  for (size_t i = 0; i < rows.dims.size(); ++i) {
    if (rows.dims[i] < 0) continue;
    const at::Tensor& t = rows.pools[i];
    if (rows.dims[i] != 0 || t.dim() < 2)
      throw TrialInputError(fmt::format(
          "--axis verify cuts every batched input along its sequence (dim 1, the batch at dim 0): {} is not shaped "
          "[batch x sequence ...]; give such inputs (input_ids, attention_mask), or --batch-dim none for one passed "
          "whole",
          rows.descriptions[i].substr(0, rows.descriptions[i].find(" ("))));
    if (length >= 0 && t.size(1) != length)
      throw TrialInputError(
          fmt::format("--axis verify needs every batched input to hold the same tokens: {} has {} "
                      "along dim 1, another {}",
                      rows.descriptions[i].substr(0, rows.descriptions[i].find(" (")), t.size(1), length));
    length = t.size(1);
  }
  return length;
}

// An archive exported with a fixed sequence length cannot be called on a prefix: one line naming the
// input and how to export it.
void check_dynamic_sequence(const TrialSpec& spec, const targets::Target& target, const BatchRows& rows) {
  if (target.kind().find("torch.export") == std::string::npos) return;
  const targets::ExportArchive archive = targets::read_export_archive(spec.model);
  for (size_t i = 0; i < rows.dims.size() && i < archive.input_sizes.size(); ++i) {
    const auto& sizes = archive.input_sizes[i];
    if (rows.dims[i] < 0 || sizes.size() < 2 || sizes[1] < 0) continue;
    const std::string name = i < archive.input_names.size() ? archive.input_names[i] : fmt::format("input {}", i);
    throw TrialInputError(fmt::format(
        "--axis verify calls the model on shorter sequences, but the torch.export archive fixes its input {} at {} "
        "tokens along dim 1: export it with a dynamic sequence (share/export_hf.py --seq-dim dynamic, or "
        "dynamic_shapes={{\"{}\": {{0: torch.export.Dim.DYNAMIC, 1: torch.export.Dim.DYNAMIC}}}}) and audit that "
        "archive",
        name, sizes[1], name));
  }
}

}  // namespace

void sweep_verify(targets::Target& target, const BatchRows& rows, const InvarianceRequest& request,
                  const c10::Device& device, InvarianceMeasurement& m, const BlockProgress& progress) {
  const int64_t length = sequence_length(rows);
  if (length <= request.draft)
    throw TrialInputError(fmt::format(
        "--axis verify with --draft {} needs rows of more than {} tokens (a decode step before the first draft): the "
        "input's rows hold {}; give longer rows or a smaller --draft",
        request.draft, request.draft, length));
  check_dynamic_sequence(request.spec, target, rows);
  std::set<int64_t> blocks;
  for (int64_t b = 2; b <= request.draft + 1; ++b)
    if (request.sizes.empty() || std::binary_search(request.sizes.begin(), request.sizes.end(), b)) blocks.insert(b);
  VerifySweep sweep(target, rows, device, length, request.draft);
  int64_t at = 1;
  try {
    progress(1, true);
    for (int a = 0; a < rows.anchors; ++a) sweep.decode_steps(a);
    for (int a = 0; a < rows.anchors; ++a)
      if (!sweep.steady(a)) break;
    progress(1, false);
    if (sweep.nondeterministic.empty())
      for (const int64_t b : blocks) {
        at = b;
        progress(b, true);
        for (int a = 0; a < rows.anchors; ++a) sweep.block(a, b);
        progress(b, false);
      }
  } catch (const BlockFailure& e) {
    if (at == 1) throw;  // nothing measured: the model's error is the run's (exit 3)
    sweep.drop(at);
    m.stopped = e.what();
  }
  m.nondeterministic = sweep.nondeterministic;
  m.notes.push_back(fmt::format(
      "verify axis: each anchor's tokens {}…{} (of {}) compared in blocks of 2…{} tokens with the decode step that "
      "ends at each, one row per call; the model keeps no cache, so a decode step is a call of the row's tokens up "
      "to the one it ends at",
      length - request.draft, length, length, request.draft + 1));
  sweep.fill(m);
}

}  // namespace ra::invariance
