// SPDX-License-Identifier: Apache-2.0
#include "worker/invariance/batch_rows.h"

#include "worker/digest/digest.h"
#include "worker/runtime/child_support.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace ra::invariance {
namespace {

std::string describe(const at::Tensor& t) {
  return fmt::format("{}[{}]", dtype_name(t.scalar_type()), fmt::join(t.sizes(), "x"));
}

// The batch dim of input `i`: the one asked, else 0 for a tensor with dimensions, else none.
int64_t batch_dim_of(const InvarianceRequest& rq, size_t i, const c10::IValue& v) {
  const bool tensor = v.isTensor() && v.toTensor().dim() > 0;
  if (i >= rq.batch_dims.size()) return tensor ? 0 : -1;
  const int64_t d = rq.batch_dims[i];
  if (d < 0) return -1;
  if (!tensor || d >= v.toTensor().dim())
    throw TrialInputError(
        fmt::format("input {} ({}) has no dimension {}: give --batch-dim none for an input passed whole", i,
                    v.isTensor() ? describe(v.toTensor()) : v.tagKind(), d));
  return d;
}

// `count` seeded random rows shaped like the input's rows: normal values for floating types, values
// drawn from the input's own elements for the others (token ids stay valid ids).
at::Tensor random_rows(const at::Tensor& t, int64_t dim, int64_t count, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed ^ 0xf111e5ull);
  std::vector<int64_t> shape = t.sizes().vec();
  shape[static_cast<size_t>(dim)] = count;
  const at::Tensor cpu = t.to(at::kCPU);
  if (at::isFloatingType(t.scalar_type()))
    return at::randn(shape, gen, at::TensorOptions().dtype(at::kFloat)).to(t.scalar_type()).to(t.device());
  const at::Tensor flat = cpu.flatten();
  const at::Tensor pick = at::randint(0, flat.numel(), shape, gen, at::TensorOptions().dtype(at::kLong));
  return flat.index({pick}).to(t.device());
}

void check_counts(const BatchRows& b) {
  if (std::all_of(b.dims.begin(), b.dims.end(), [](int64_t d) { return d < 0; }))
    throw TrialInputError(
        "no input has a batch dimension: invariance needs at least one input whose rows it can batch");
  if (b.count == 0) throw TrialInputError("the input holds no rows along its batch dimension");
}

}  // namespace

BatchRows split_rows(const InvarianceRequest& rq, const targets::Inputs& in, int64_t max_size,
                     const c10::Device& device) {
  if (!in.kwargs.empty())
    throw TrialInputError(
        "invariance passes inputs by position: save a tensor, or a tuple or list of tensors, not a dict");
  // More --batch-dim values than inputs name inputs that do not exist: a slip in the command line.
  if (rq.batch_dims.size() > in.args.size())
    throw TrialInputError(fmt::format("--batch-dim gives {} values, but the rows file holds {} input{}: give one value "
                                      "per input, in order (missing ones are 0)",
                                      rq.batch_dims.size(), in.args.size(), in.args.size() == 1 ? "" : "s"),
                          "usage");
  BatchRows b;
  b.anchors = rq.rows;
  for (size_t i = 0; i < in.args.size(); ++i) {
    const int64_t d = batch_dim_of(rq, i, in.args[i]);
    b.whole.push_back(in.args[i]);
    b.dims.push_back(d);
    if (d < 0) {
      b.descriptions.push_back(
          fmt::format("input/{}={} (passed whole)", i,
                      in.args[i].isTensor() ? describe(in.args[i].toTensor()) : in.args[i].tagKind()));
      continue;
    }
    const at::Tensor t = in.args[i].toTensor();
    const int64_t n = t.size(d);
    if (b.count > 0 && n != b.count)
      throw TrialInputError(
          fmt::format("the inputs' rows do not match: {} rows along the batch dim in one input, {} in input {} ({}); "
                      "give every batched input the same rows, or --batch-dim none for one passed whole",
                      b.count, n, i, describe(t)));
    if (n > 0 && t.numel() == 0)  // zero-width rows: ATen's own message came out of the first slice
      throw TrialInputError(
          fmt::format("input {} ({}) has rows of no elements: invariance compares rows, and these "
                      "hold nothing",
                      i, describe(t)));
    b.count = n;
    b.descriptions.push_back(fmt::format("input/{}={} (batch dim {})", i, describe(t), d));
  }
  check_counts(b);
  if (rq.rows > b.count)
    throw TrialInputError(
        fmt::format("--rows {} is larger than the input, which holds {} row{}: give --rows {} or fewer, or more rows",
                    rq.rows, b.count, b.count == 1 ? "" : "s", b.count));
  for (size_t i = 0; i < b.whole.size(); ++i) {
    if (b.dims[i] < 0) {
      b.pools.emplace_back();
      continue;
    }
    const at::Tensor t = b.whole[i].toTensor().to(device);
    if (rq.filler == Filler::Random)
      b.pools.push_back(
          at::cat({t.narrow(b.dims[i], 0, rq.rows), random_rows(t, b.dims[i], max_size, rq.spec.seed + i)}, b.dims[i]));
    else
      b.pools.push_back(t);
  }
  const int64_t first = rq.filler == Filler::Random || b.count > rq.rows ? rq.rows : 0;
  const int64_t end = rq.filler == Filler::Random ? rq.rows + max_size : b.count;
  for (int64_t r = first; r < end; ++r) b.fillers.push_back(r);
  if (rq.filler == Filler::Input && b.count == rq.rows)
    b.notes.push_back(
        "the input holds no rows beyond the anchors: the anchors themselves fill the batches (--filler random, "
        "or more rows, gives other neighbours)");
  return b;
}

void pad_fillers(BatchRows& b, const std::vector<std::string>& names, bool left) {
  const auto index = [&](const char* name) {
    const auto it = std::find(names.begin(), names.end(), name);
    const auto i = static_cast<size_t>(it - names.begin());
    return it == names.end() || i >= b.dims.size() || b.dims[i] < 0 ? -1 : static_cast<int64_t>(i);
  };
  const int64_t mask = index("attention_mask"), ids = index("input_ids"), positions = index("position_ids");
  if (mask < 0)
    throw TrialInputError(fmt::format(
        "--pad-others pads the other rows through the model's attention_mask, and the model has no batched input of "
        "that name (its inputs: {}): export it with one (share/export_hf.py --mask)",
        names.empty() ? "unnamed" : fmt::format("{}", fmt::join(names, ", "))));
  const at::Tensor& m = b.pools[static_cast<size_t>(mask)];
  if (b.dims[static_cast<size_t>(mask)] != 0 || m.dim() != 2 || m.size(1) < 2)
    throw TrialInputError(
        fmt::format("--pad-others needs attention_mask shaped [batch x sequence] with 2 or more "
                    "tokens, the batch at dim 0; it is {}",
                    describe(m)));
  const int64_t length = m.size(1), base = m.size(0), count = static_cast<int64_t>(b.fillers.size());
  // The padded copies' masks: row t keeps `kept` tokens on the unpadded side.
  at::Tensor kept_mask = at::ones({count, length}, m.options());
  for (int64_t t = 0; t < count; ++t) {
    const int64_t kept = length - 1 - t % (length - 1), pad = length - kept;
    kept_mask[t].narrow(0, left ? 0 : kept, pad).zero_();
  }
  const at::Tensor rows = at::tensor(b.fillers, at::TensorOptions().dtype(at::kLong)).to(m.device());
  for (size_t i = 0; i < b.pools.size(); ++i) {
    if (b.dims[i] < 0) continue;
    at::Tensor copy = b.pools[i].index_select(b.dims[i], rows).clone();
    const auto here = static_cast<int64_t>(i);
    if (here == mask) copy = copy * kept_mask;
    if (here == ids && copy.dim() == 2) copy.masked_fill_(kept_mask.to(at::kBool).logical_not(), 0);
    if (here == positions && copy.dim() == 2)
      copy = (kept_mask.to(at::kLong).cumsum(1) - 1).clamp_min(0).to(copy.scalar_type());
    b.pools[i] = at::cat({b.pools[i], copy}, b.dims[i]);
  }
  for (int64_t t = 0; t < count; ++t) b.fillers[static_cast<size_t>(t)] = base + t;
  b.notes.push_back(fmt::format(
      "the filler rows are padded on the {}: filler t keeps {}-(t mod {}) of its {} tokens, and its {} 0 on the "
      "padded side{}; the anchors are not padded",
      left ? "left" : "right", length - 1, length - 1, length,
      ids >= 0 ? "attention_mask and input_ids are" : "attention_mask is",
      positions >= 0 ? "; its position_ids count from its first real token" : ""));
}

std::vector<c10::IValue> make_batch(const BatchRows& b, const std::vector<int64_t>& rows, const c10::Device& device) {
  const at::Tensor index = at::tensor(rows, at::TensorOptions().dtype(at::kLong)).to(device);
  std::vector<c10::IValue> args;
  for (size_t i = 0; i < b.whole.size(); ++i)
    args.push_back(b.dims[i] < 0 ? b.whole[i] : c10::IValue(b.pools[i].index_select(b.dims[i], index)));
  return args;
}

NamedTensors timed_call(targets::Target& target, const std::vector<c10::IValue>& args, const c10::Device& device,
                        double& forward_ms, int64_t& calls, const std::function<void(const std::exception&)>& failed) {
  c10::IValue out;
  synchronize(device);
  const double t0 = now_ms();
  try {
    out = target.call(args);
  } catch (const TrialInputError&) {
    throw;
  } catch (const std::exception& e) {
    failed(e);
    throw;
  }
  synchronize(device);
  forward_ms += now_ms() - t0;
  ++calls;
  NamedTensors flat;
  targets::collect_tensors(out, "output", flat, "the model's output");
  return flat;
}

}  // namespace ra::invariance
