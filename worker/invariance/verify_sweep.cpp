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
  VerifySweep(targets::Target& target, const BatchRows& rows, const c10::Device& device, int64_t length, int64_t window)
      : target_(target), rows_(rows), device_(device), length_(length), first_(length - window) {}

  void prefix(int anchor, int64_t tokens);
  bool steady(int anchor);
  void complete(int64_t tokens) { complete_ = tokens; }
  void fill(InvarianceMeasurement& m, const std::set<int64_t>& blocks);
  std::string nondeterministic;

 private:
  std::vector<at::Tensor> call(int anchor, int64_t tokens);
  std::vector<Token> tokens_at(const std::vector<at::Tensor>& out, int64_t position) const;
  RowComparison compare(int anchor, size_t output, const Token& want, const Token& got) const;
  void block_cells(int64_t size, int64_t start, std::vector<InvarianceCell>& cells) const;

  targets::Target& target_;
  const BatchRows& rows_;
  c10::Device device_;
  int64_t length_;                     // S: the anchor rows' tokens
  int64_t first_;                      // F: the window's first token (from 0); the first prefix holds F+1 tokens
  int64_t complete_ = 0;               // the longest prefix measured for every anchor
  std::vector<std::string> names_;     // every output
  std::vector<std::string> excluded_;  // "" where compared
  std::vector<std::vector<std::vector<Token>>> decode_;  // [anchor][token - F][output]: its decode step's
  // [anchor][prefix tokens][token - F][output]: the token in that call against its decode step
  // ("block"), and the call's second run against its first ("second-call").
  std::vector<std::map<int64_t, std::vector<std::vector<RowComparison>>>> block_, again_;
  std::vector<std::vector<RowComparison>> steady_;  // [anchor][output]: the first prefix's second call
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
                                      names_.size(), first_ + 1));
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

// `got` against `want` (a row whose position is filled in later, for the block it sits in).
RowComparison VerifySweep::compare(int anchor, size_t output, const Token& want, const Token& got) const {
  RowComparison row{anchor, names_[output], 0, got.digest, got.digest == want.digest, 0, 0};
  if (!row.equal) {
    const report::DivergenceStats s = tensor_difference(want.t, got.t);
    row.max_abs = s.max_abs_diff, row.max_ulp = s.max_ulp;
  }
  return row;
}

// The call of the anchor's first `tokens` tokens, twice: its last token is the decode step that ends
// there, and each token of the window in it is compared with its own decode step (measured by a
// shorter prefix before) and with the second call.
void VerifySweep::prefix(int anchor, int64_t tokens) {
  const auto a = static_cast<size_t>(anchor);
  if (decode_.size() <= a) decode_.resize(a + 1), block_.resize(a + 1), again_.resize(a + 1), steady_.resize(a + 1);
  // The first call's tokens are copies, taken before the second call: a token is a view of what the
  // model returned, which may be its own buffer that the next call writes again.
  std::vector<std::vector<Token>> first;
  {
    const std::vector<at::Tensor> out = call(anchor, tokens);
    for (int64_t p = first_; p < tokens; ++p) {
      first.push_back(tokens_at(out, p));
      for (Token& t : first.back())
        if (t.t.defined()) t.t = t.t.clone();
    }
  }
  const std::vector<at::Tensor> second = call(anchor, tokens);
  decode_[a].push_back(first.back());
  auto& block = block_[a][tokens];
  auto& again = again_[a][tokens];
  for (int64_t p = first_; p < tokens; ++p) {
    const std::vector<Token>& got = first[static_cast<size_t>(p - first_)];
    const std::vector<Token> repeat = tokens_at(second, p);
    const std::vector<Token>& want = decode_[a][static_cast<size_t>(p - first_)];
    block.emplace_back(), again.emplace_back();
    for (size_t i = 0; i < names_.size(); ++i) {
      if (!excluded_[i].empty()) continue;
      if (want[i].t.sizes() != got[i].t.sizes() || want[i].t.scalar_type() != got[i].t.scalar_type())
        throw TrialInputError(
            fmt::format("the model's {} changes shape with the sequence: token {} is {}[{}] in a call of {} tokens "
                        "but {}[{}] at its decode step",
                        names_[i], p + 1, dtype_name(got[i].t.scalar_type()), fmt::join(got[i].t.sizes(), "x"), tokens,
                        dtype_name(want[i].t.scalar_type()), fmt::join(want[i].t.sizes(), "x")));
      block.back().push_back(compare(anchor, i, want[i], got[i]));
      again.back().push_back(compare(anchor, i, got[i], repeat[i]));
    }
  }
  if (tokens == first_ + 1) steady_[a] = again.back();
}

// The first prefix a third time, against its second call (false, with `nondeterministic` said, when
// they differ: the first and second call differing alone is warm-up).
bool VerifySweep::steady(int anchor) {
  const std::vector<at::Tensor> out = call(anchor, first_ + 1);
  const std::vector<Token> third = tokens_at(out, first_);
  for (const RowComparison& second : steady_[static_cast<size_t>(anchor)]) {
    size_t i = 0;
    while (names_[i] != second.output) ++i;
    if (third[i].digest != second.digest && nondeterministic.empty())
      nondeterministic = fmt::format(
          "anchor {}'s {} at the decode step of {} tokens gets other bits on every call in one process (call 3 "
          "differs from call 2): the model is nondeterministic (random numbers drawn on every call, or state it "
          "changes), so no block length gives a token stable bits",
          anchor, names_[i], first_ + 1);
  }
  return nondeterministic.empty();
}

// The cells of the block of `size` tokens that starts at token `start`: its call is the prefix that
// ends at its last token, each of its tokens a row ("block", against the decode step; "second-call",
// the call's second run against its first).
void VerifySweep::block_cells(int64_t size, int64_t start, std::vector<InvarianceCell>& cells) const {
  InvarianceCell block{size, "block", {}, start}, warm{size, "second-call", {}, start};
  const int64_t tokens = start + size;  // the prefix that ends at the block's last token
  for (size_t a = 0; a < block_.size(); ++a)
    for (int64_t j = 0; j < size; ++j) {
      const auto k = static_cast<size_t>(start + j - first_);
      for (const auto& [from, into] : {std::pair{&block_, &block.rows}, std::pair{&again_, &warm.rows}})
        for (RowComparison row : (*from)[a].at(tokens)[k]) {
          row.position = j;  // the token's place in the block
          into->push_back(std::move(row));
        }
    }
  cells.push_back(std::move(warm)), cells.push_back(std::move(block));
}

void VerifySweep::fill(InvarianceMeasurement& m, const std::set<int64_t>& blocks) {
  for (size_t i = 0; i < names_.size(); ++i)
    (excluded_[i].empty() ? m.outputs : m.excluded).push_back(excluded_[i].empty() ? names_[i] : excluded_[i]);
  if (complete_ > first_) {
    // The decode step itself (size 1) at the window's first token: its own bits, and its second call.
    InvarianceCell decode{1, "block", {}, first_}, warm{1, "second-call", {}, first_};
    for (size_t a = 0; a < decode_.size(); ++a)
      for (RowComparison row : steady_[a]) {
        warm.rows.push_back(row);
        size_t i = 0;
        while (names_[i] != row.output) ++i;
        decode.rows.push_back({row.anchor, row.output, 0, decode_[a].front()[i].digest, true, 0, 0});
      }
    m.cells.push_back(std::move(warm)), m.cells.push_back(std::move(decode));
  }
  for (const int64_t b : blocks)
    for (int64_t start = first_; start + b <= complete_; ++start) block_cells(b, start, m.cells);
  size_t out = 0;
  while (out < excluded_.size() && !excluded_[out].empty()) ++out;
  if (!decode_.empty() && !decode_.front().empty() && out < names_.size()) {
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
                  const c10::Device& device, InvarianceMeasurement& m, const StepProgress& progress) {
  const int64_t length = sequence_length(rows);
  const int64_t window = int64_t{request.draft} + request.positions;
  if (length < window)
    throw TrialInputError(fmt::format(
        "--axis verify with --draft {} and --positions {} needs rows of at least {} tokens (blocks of up to {} tokens, "
        "the longest at {} place{}): the input's rows hold {}; give longer rows, a smaller --draft or fewer "
        "--positions",
        request.draft, request.positions, window, request.draft + 1, request.positions,
        request.positions == 1 ? "" : "s", length));
  check_dynamic_sequence(request.spec, target, rows);
  std::set<int64_t> blocks;
  for (int64_t b = 2; b <= request.draft + 1; ++b)
    if (request.sizes.empty() || std::binary_search(request.sizes.begin(), request.sizes.end(), b)) blocks.insert(b);
  VerifySweep sweep(target, rows, device, length, window);
  const int64_t first = length - window + 1;  // the first prefix's tokens
  for (int64_t n = first; n <= length; ++n) progress(n, StepEvent::Plan);
  int64_t at = first;
  try {
    for (int64_t n = first; n <= length && sweep.nondeterministic.empty(); ++n) {
      at = n;
      progress(n, StepEvent::Start);
      for (int a = 0; a < rows.anchors; ++a) sweep.prefix(a, n);
      if (n == first)
        for (int a = 0; a < rows.anchors; ++a)
          if (!sweep.steady(a)) break;
      sweep.complete(n);
      progress(n, StepEvent::End);
    }
  } catch (const BlockFailure& e) {
    if (at == first) throw;  // nothing measured: the model's error is the run's (exit 3)
    m.stopped = e.what();
  }
  m.nondeterministic = sweep.nondeterministic;
  m.notes.push_back(fmt::format(
      "verify axis: each anchor's tokens {}…{} (of {}) compared, in every block of 2…{} tokens at every place among "
      "them ({} places for the longest), with the decode step that ends at each, one row per call; the model keeps "
      "no cache, so a decode step is a call of the row's tokens up to the one it ends at, and a block is the call "
      "that ends at its last token",
      first, length, length, request.draft + 1, request.positions));
  sweep.fill(m, blocks);
}

}  // namespace ra::invariance
