// SPDX-License-Identifier: Apache-2.0
// The sweep (see batch_sweep.h for the essay). `Sweep` holds the reference slices and the cells;
// each of its steps is one size, one placement or one comparison.
#include "worker/invariance/batch_sweep.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "worker/digest/digest.h"
#include "worker/digest/tensor_stats.h"
#include "worker/invariance/batch_rows.h"
#include "worker/invariance/negative_control.h"
#include "worker/invariance/row_trace.h"
#include "worker/invariance/verify_sweep.h"
#include "worker/runtime/child_support.h"
#include "worker/runtime/fingerprint.h"
#include "worker/runtime/switches.h"
#include "worker/targets/export_archive.h"
#include "worker/targets/target.h"
#include "worker/tensor_io/kept_read.h"
#include "worker/trace/precision_guard.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/DefaultDtype.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_set>

namespace ra::invariance {
namespace {

using report::InvarianceCell;
using report::RowComparison;

struct Slice {
  at::Tensor t;
  std::string digest;
};
using Slices = std::vector<std::vector<Slice>>;  // [anchor][output]

// The model raised on a batch of some size (its own failure, not ours): the sweep stops there and
// keeps the sizes measured before (issue 39: "internal error", and everything measured lost).
struct ModelFailure : TrialInputError {
  using TrialInputError::TrialInputError;
};

// Where a batch's anchors sit: anchor index -> row of the batch.
using Placement = std::vector<std::pair<int, int64_t>>;

int placement_index(const std::string& p) {
  constexpr int count = static_cast<int>(std::size(report::kPlacements));
  for (int i = 0; i < count; ++i)
    if (p == report::kPlacements[i]) return i;
  return count;
}

// The sweep's progress file (SweepProgress): rewritten whole as each size starts and ends, so that
// the front can say "sizes 3/9, size 8". The time left is the sum over the sizes left of a + b*m,
// fitted by least squares to the sizes above 1 measured (a call's fixed cost, and its cost per row:
// a batch of 512 costs more than one of 8, though rarely 64 times as much); none before the first.
// Failing to write the file costs the front its detail, never the sweep.
class ProgressFile {
 public:
  ProgressFile(std::string path, const std::vector<int64_t>& sizes) : path_(std::move(path)) {
    for (const int64_t m : sizes) plan(m);
  }
  void plan(int64_t m) {
    ++p_.planned;
    left_.insert(m);
  }
  void start(int64_t m) {
    p_.current = m;
    started_ = now_ms();
    write();
  }
  void end(int64_t m) {
    ++p_.done;
    p_.current = 0;
    if (const auto it = left_.find(m); it != left_.end()) left_.erase(it);
    if (m > 1) {  // size 1 is the reference, whose calls are not a batch's
      const double x = static_cast<double>(m), y = now_ms() - started_;
      n_ += 1, sx_ += x, sy_ += y, sxx_ += x * x, sxy_ += x * y;
    }
    if (n_ == 0) {
      write();
      return;
    }
    double b = 0, a = sy_ / n_;
    if (const double spread = sxx_ - sx_ * sx_ / n_; spread > 0) {
      b = std::max(0.0, (sxy_ - sx_ * sy_ / n_) / spread);
      a = std::max(0.0, (sy_ - b * sx_) / n_);
    }
    double ms = 0;
    for (const int64_t k : left_)
      if (k > 1) ms += a + b * static_cast<double>(k);
    p_.eta_s = ms / 1000;
    write();
  }

 private:
  void write() const {
    if (path_.empty()) return;
    try {
      write_file_atomic(path_, to_text(p_));
    } catch (const std::exception&) {
      // no detail for the front: the sweep goes on
    }
  }

  std::string path_;
  SweepProgress p_;
  std::multiset<int64_t> left_;  // sizes planned and not measured
  double started_ = 0;
  double n_ = 0, sx_ = 0, sy_ = 0, sxx_ = 0, sxy_ = 0;  // sums over the sizes measured (m, ms)
};

class Sweep {
 public:
  Sweep(targets::Target& target, BatchRows rows, const c10::Device& device)
      : target_(target),
        rows_(std::move(rows)),
        device_(device),
        export_(target.kind().find("torch.export") != std::string::npos) {}

  void reference();
  void measure(int64_t m);
  // With the float64 referee's dump (TrialSpec::reference_dump): each distinct start slice of an
  // anchor is measured against the referee's row at the anchor's place (RowError); an unreadable
  // dump gives every slice a note instead of figures.
  void compare_with_referee(const std::string& dump);
  std::string signature(int64_t m) const;
  report::NegativeControl control() const;
  void fill(InvarianceMeasurement& out) const;
  std::optional<RowTraceCall> trace_call() const;
  double forward_ms = 0;
  int64_t calls = 0;
  std::string nondeterministic;  // one sentence when a row alone changes from call to call

 private:
  std::vector<at::Tensor> call(const std::vector<int64_t>& batch);
  void check_outputs(const std::vector<at::Tensor>& out, int64_t m);
  void record(int64_t m, const char* placement, const std::vector<at::Tensor>& out, const Placement& where,
              const Slices* against, Slices* keep);
  void chunk(int64_t m, const std::vector<int>& anchors);
  std::vector<int64_t> filled(int64_t m) const;

  targets::Target& target_;
  BatchRows rows_;
  c10::Device device_;
  bool export_;
  std::vector<std::string> names_;     // every output, in order
  std::vector<std::string> excluded_;  // "" where compared, else why not
  bool decided_ = false;               // outputs checked against a batch of 2 or more
  Slices reference_;
  std::map<std::pair<int64_t, int>, InvarianceCell> cells_;
  bool referee_asked_ = false;
  std::map<std::string, at::Tensor> referee_;  // the referee's tensors by name (float64, on the CPU)
  std::string referee_problem_;                // why the dump could not be read, "" when it was
  std::map<std::tuple<int, std::string, std::string>, report::ReferenceError> errors_;  // (anchor, output, digest)
  void measure_against_referee(int anchor, size_t output, const at::Tensor& slice, const std::string& digest);
};

void Sweep::compare_with_referee(const std::string& dump) {
  if (dump.empty()) return;
  referee_asked_ = true;
  std::string problem;
  auto tensors = read_own_dump(dump, problem);
  if (tensors)
    referee_ = std::move(*tensors);
  else
    referee_problem_ =
        fmt::format("the referee's dump could not be read{}", problem.empty() ? "" : fmt::format(" ({})", problem));
}

// One anchor's slice of an output against the referee's row of that anchor (the referee called each
// anchor alone in float64: referee_rows), once per distinct bits. Integer and bool outputs are
// compared bit for bit only.
void Sweep::measure_against_referee(int anchor, size_t output, const at::Tensor& slice, const std::string& digest) {
  if (!referee_asked_ || !(at::isFloatingType(slice.scalar_type()) || slice.is_complex())) return;
  const auto key = std::make_tuple(anchor, names_[output], digest);
  if (errors_.count(key) != 0) return;
  report::ReferenceError e;
  const auto it = referee_.find(names_[output]);
  if (!referee_problem_.empty() || it == referee_.end() || it->second.dim() == 0 || it->second.size(0) <= anchor) {
    e.name = names_[output];
    e.dtype = dtype_name(slice.scalar_type());
    e.numel = slice.numel();
    e.note = !referee_problem_.empty() ? referee_problem_
             : it == referee_.end()    ? std::string("the referee has no tensor of this name")
             : it->second.dim() == 0
                 ? std::string("the referee's tensor has no batch dimension")
                 : fmt::format("the referee's tensor has {} rows, not anchor {}'s", it->second.size(0), anchor);
  } else {
    e = reference_error(names_[output], slice, it->second.select(0, anchor));
  }
  errors_.emplace(key, std::move(e));
}

std::vector<at::Tensor> Sweep::call(const std::vector<int64_t>& batch) {
  const int64_t m = static_cast<int64_t>(batch.size());
  NamedTensors flat =
      timed_call(target_, make_batch(rows_, batch, device_), device_, forward_ms, calls, [&](const std::exception& e) {
        if (export_ && m != rows_.count)
          throw TrialInputError(fmt::format(
              "the torch.export archive takes a static batch of {} (a batch of {} failed): export it with a "
              "dynamic batch, torch.export.export(model, args, dynamic_shapes=({{0: torch.export.Dim(\"batch\")}},)), "
              "and audit that archive",
              rows_.count, m));
        // The model's own failure at one size is the model's, not ours: the size and its message, exit 3.
        throw ModelFailure(fmt::format("the model fails on a batch of {}: {}", m, error_text(e)));
      });
  if (names_.empty())
    for (const auto& [name, t] : flat) names_.push_back(name), excluded_.emplace_back();
  if (flat.size() != names_.size())
    throw TrialInputError(fmt::format("the model returns {} tensors for a batch of {} but {} for a batch of 1",
                                      flat.size(), m, names_.size()));
  std::vector<at::Tensor> tensors;
  for (auto& [name, t] : flat) tensors.push_back(std::move(t));
  check_outputs(tensors, m);
  return tensors;
}

// An output compared must keep the batch at dim 0; one that does not is left out, named, when first
// seen (size 1 or the first batch of 2 or more); a later change is an error of the model.
void Sweep::check_outputs(const std::vector<at::Tensor>& out, int64_t m) {
  for (size_t i = 0; i < out.size(); ++i) {
    if (!excluded_[i].empty()) continue;
    const at::Tensor& t = out[i];
    if (t.dim() > 0 && t.size(0) == m) continue;
    const std::string shape = fmt::format("{}[{}]", dtype_name(t.scalar_type()), fmt::join(t.sizes(), "x"));
    if (decided_)
      throw TrialInputError(fmt::format("the model's {} is {} for a batch of {}: its shape does not follow the batch",
                                        names_[i], shape, m));
    excluded_[i] = fmt::format("{}: {} for a batch of {}; it does not keep the batch at dim 0", names_[i], shape, m);
  }
  if (m >= 2) decided_ = true;
  if (std::all_of(excluded_.begin(), excluded_.end(), [](const std::string& e) { return !e.empty(); }))
    throw TrialInputError(
        fmt::format("no output of the model follows the batch ({}): invariance compares the rows of outputs "
                    "that keep the batch at dim 0",
                    excluded_.front()));
}

// The anchors' slices of `out` at `where`, compared with `against` (the reference, or the first call
// of the same batch); each slice is kept in `keep` when asked.
void Sweep::record(int64_t m, const char* placement, const std::vector<at::Tensor>& out, const Placement& where,
                   const Slices* against, Slices* keep) {
  InvarianceCell& cell = cells_[{m, placement_index(placement)}];
  cell.size = m;
  cell.placement = placement;
  for (const auto& [anchor, pos] : where) {
    for (size_t i = 0; i < out.size(); ++i) {
      if (!excluded_[i].empty()) continue;
      const at::Tensor slice = out[i].select(0, pos);
      RowComparison row{anchor, names_[i], pos, digest(slice), true, 0, 0};
      if (std::string_view(placement) == "start") measure_against_referee(anchor, i, slice, row.digest);
      if (against != nullptr) {
        const Slice& ref = (*against)[static_cast<size_t>(anchor)][i];
        if (ref.t.defined() && (ref.t.scalar_type() != slice.scalar_type() || ref.t.sizes() != slice.sizes()))
          throw TrialInputError(fmt::format(
              "the model's {} changes with the batch: a row is {}[{}] in a batch of {} ({}) but {}[{}] in the one it "
              "is compared with",
              names_[i], dtype_name(slice.scalar_type()), fmt::join(slice.sizes(), "x"), m, placement,
              dtype_name(ref.t.scalar_type()), fmt::join(ref.t.sizes(), "x")));
        row.equal = row.digest == ref.digest;
        if (!row.equal) {
          const report::DivergenceStats s = tensor_difference(ref.t, slice);
          row.max_abs = s.max_abs_diff, row.max_ulp = s.max_ulp;
        }
      }
      // A copy: the slice is a view of what the model returned, which may be its own buffer that
      // the next call writes again (the reference's statistics then measured the latest call).
      if (keep != nullptr) (*keep)[static_cast<size_t>(anchor)][i] = {slice.clone(), row.digest};
      cell.rows.push_back(std::move(row));
    }
  }
}

void Sweep::reference() {
  reference_.assign(static_cast<size_t>(rows_.anchors), {});
  for (int a = 0; a < rows_.anchors; ++a) {
    const std::vector<at::Tensor> out = call({a});
    for (auto& r : reference_) r.resize(out.size());
    record(1, "start", out, {{a, 0}}, nullptr, &reference_);
  }
  Slices second(reference_.size(), std::vector<Slice>(names_.size()));
  for (int a = 0; a < rows_.anchors; ++a) record(1, "second-call", call({a}), {{a, 0}}, &reference_, &second);
  // A third call of each anchor alone: a model whose first call differs from its second (a cache
  // filled) gives its second call's bits again; one that draws random numbers every call does not,
  // and no batch size, padding or bucketing can give its rows stable bits: it is nondeterministic.
  for (int a = 0; a < rows_.anchors && nondeterministic.empty(); ++a) {
    const std::vector<at::Tensor> out = call({a});
    for (size_t i = 0; i < out.size() && nondeterministic.empty(); ++i)
      if (excluded_[i].empty() && digest(out[i].select(0, 0)) != second[static_cast<size_t>(a)][i].digest)
        nondeterministic = fmt::format(
            "anchor {}'s {} alone gets other bits on every call in one process (call 3 differs from call 2): the model "
            "is nondeterministic (random numbers drawn on every call, or state it changes), so no batch size gives a "
            "row stable bits",
            a, names_[i]);
  }
}

// Filler rows for a batch of m, the same rows at the same places whatever the anchors.
std::vector<int64_t> Sweep::filled(int64_t m) const {
  std::vector<int64_t> rows(static_cast<size_t>(m));
  for (int64_t j = 0; j < m; ++j)
    rows[static_cast<size_t>(j)] = rows_.fillers[static_cast<size_t>(j) % rows_.fillers.size()];
  return rows;
}

// One group of anchors (all of them when they fit) in every placement of a batch of m.
void Sweep::chunk(int64_t m, const std::vector<int>& anchors) {
  const int64_t k = static_cast<int64_t>(anchors.size());
  const auto batch_at = [&](int64_t offset, Placement& where) {
    std::vector<int64_t> rows = filled(m);
    for (int64_t j = 0; j < k; ++j)
      rows[static_cast<size_t>(offset + j)] = anchors[static_cast<size_t>(j)],
                                        where.push_back({anchors[static_cast<size_t>(j)], offset + j});
    return rows;
  };
  Placement start;
  const std::vector<int64_t> first = batch_at(0, start);
  Slices first_call(reference_.size(), std::vector<Slice>(names_.size()));
  record(m, "start", call(first), start, &reference_, &first_call);
  record(m, "second-call", call(first), start, &first_call, nullptr);
  const int64_t middle = (m - k) / 2, end = m - k;
  if (middle != 0 && middle != end) {
    Placement where;
    const auto rows = batch_at(middle, where);
    record(m, "middle", call(rows), where, &reference_, nullptr);
  }
  if (end != 0) {
    Placement where;
    const auto rows = batch_at(end, where);
    record(m, "end", call(rows), where, &reference_, nullptr);
  }
  std::vector<int64_t> perm(static_cast<size_t>(m));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937_64(static_cast<uint64_t>(m) * 0x9e3779b97f4a7c15ull));
  if (std::is_sorted(perm.begin(), perm.end())) std::reverse(perm.begin(), perm.end());
  std::vector<int64_t> rows(static_cast<size_t>(m));
  Placement where;
  for (int64_t j = 0; j < m; ++j)
    rows[static_cast<size_t>(j)] = first[static_cast<size_t>(perm[static_cast<size_t>(j)])];
  for (const auto& [anchor, pos] : start)
    where.push_back({anchor, std::find(perm.begin(), perm.end(), pos) - perm.begin()});
  record(m, "permuted", call(rows), where, &reference_, nullptr);
}

void Sweep::measure(int64_t m) {
  if (m <= 1 || cells_.count({m, 0})) return;
  const int per = static_cast<int>(std::min<int64_t>(m, rows_.anchors));
  try {
    for (int a = 0; a < rows_.anchors; a += per) {
      std::vector<int> anchors;
      for (int b = a; b < std::min(a + per, rows_.anchors); ++b) anchors.push_back(b);
      chunk(m, anchors);
    }
  } catch (const ModelFailure&) {
    std::erase_if(cells_, [m](const auto& cell) { return cell.first.first == m; });  // a size is measured whole
    throw;
  }
}

// --trace: the smallest size whose start bits differ from the anchor alone, its first differing
// anchor, and the arguments of both calls (the batch as the sweep built it); none when every size
// matched at the start.
std::optional<RowTraceCall> Sweep::trace_call() const {
  for (const auto& [key, cell] : cells_) {  // by size, then placement
    if (key.first <= 1 || key.second != 0) continue;
    for (const auto& r : cell.rows) {
      if (r.equal) continue;
      const int64_t m = key.first;
      const int per = static_cast<int>(std::min<int64_t>(m, rows_.anchors)), first = (r.anchor / per) * per;
      std::vector<int64_t> rows = filled(m);
      for (int b = first; b < std::min(first + per, rows_.anchors); ++b) rows[static_cast<size_t>(b - first)] = b;
      return RowTraceCall{make_batch(rows_, {r.anchor}, device_), make_batch(rows_, rows, device_), m, r.anchor,
                          r.position};
    }
  }
  return std::nullopt;
}

// What bisection compares between neighbouring sizes: the start placement's bits, and whether the size
// depends on a row's place or on warm-up. A size whose start bits match its neighbours' can still
// give a row at the end of the batch other bits (issue 43: 10 and 11 between 9 and 15), so a change
// of either finding is a boundary too.
std::string Sweep::signature(int64_t m) const {
  const auto it = cells_.find({m, 0});
  std::string s;
  if (it == cells_.end()) return s;
  const auto compared = [&](const std::string& output) {
    const auto n = std::find(names_.begin(), names_.end(), output);
    return n != names_.end() && excluded_[static_cast<size_t>(n - names_.begin())].empty();
  };
  std::map<std::pair<int, std::string>, std::string> start;
  for (const auto& r : it->second.rows)
    if (compared(r.output))
      s += fmt::format("{}:{}:{};", r.anchor, r.output, r.digest), start[{r.anchor, r.output}] = r.digest;
  bool position = false, warmup = false;
  for (int p = 1; p < 5; ++p) {
    const auto cell = cells_.find({m, p});
    if (cell == cells_.end()) continue;
    for (const auto& r : cell->second.rows) {
      if (!compared(r.output)) continue;
      if (p == 4) {
        warmup |= !r.equal;
      } else if (const auto at = start.find({r.anchor, r.output}); at != start.end() && at->second != r.digest) {
        position = true;
      }
    }
  }
  return s + (position ? "|position" : "") + (warmup ? "|warm-up" : "");
}

// The comparison must see a one-bit change: the first compared output's first reference slice.
report::NegativeControl Sweep::control() const {
  size_t out = 0;
  while (out < excluded_.size() && !excluded_[out].empty()) ++out;
  const Slice& ref = reference_.front()[out];
  return negative_control(ref.t, ref.digest, names_[out], device_);
}

void Sweep::fill(InvarianceMeasurement& m) const {
  for (size_t i = 0; i < names_.size(); ++i)
    (excluded_[i].empty() ? m.outputs : m.excluded).push_back(excluded_[i].empty() ? names_[i] : excluded_[i]);
  const std::unordered_set<std::string> kept(m.outputs.begin(), m.outputs.end());  // a model may have many outputs
  for (const auto& [key, cell] : cells_) {
    InvarianceCell c{cell.size, cell.placement, {}};
    for (const auto& r : cell.rows)
      if (kept.count(r.output) != 0) c.rows.push_back(r);
    m.cells.push_back(std::move(c));
  }
  for (const auto& [key, e] : errors_)
    if (kept.count(std::get<1>(key)) != 0)
      m.errors.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), e});
  m.control = control();
  m.forward_ms = forward_ms;
  m.calls = calls;
}

// --sizes auto: between neighbouring sizes whose signatures differ (start bits, position or warm-up
// dependence), the size halfway, until every such pair is adjacent.
void bisect(Sweep& sweep, std::set<int64_t> done, ProgressFile& progress) {
  for (bool more = true; more;) {
    more = false;
    const std::vector<int64_t> sizes(done.begin(), done.end());
    for (size_t i = 0; i + 1 < sizes.size(); ++i) {
      const int64_t a = sizes[i], b = sizes[i + 1];
      if (b - a < 2 || sweep.signature(a) == sweep.signature(b)) continue;
      const int64_t mid = a + (b - a) / 2;
      progress.plan(mid);
      progress.start(mid);
      sweep.measure(mid);
      progress.end(mid);
      done.insert(mid);
      more = true;
    }
  }
}

// A torch.export archive traced with a static batch runs other batch sizes through kernels
// specialised for its own: one line naming the size, and how to export with a dynamic batch.
void check_dynamic_batch(const TrialSpec& spec, const targets::Target& target, const BatchRows& rows) {
  if (target.kind().find("torch.export") == std::string::npos) return;
  const targets::ExportArchive archive = targets::read_export_archive(spec.model);
  for (size_t i = 0; i < rows.dims.size() && i < archive.input_sizes.size(); ++i) {
    const auto& sizes = archive.input_sizes[i];
    const int64_t d = rows.dims[i];
    if (d < 0 || static_cast<size_t>(d) >= sizes.size() || sizes[static_cast<size_t>(d)] < 0) continue;
    const std::string name = i < archive.input_names.size() ? archive.input_names[i] : fmt::format("input {}", i);
    throw TrialInputError(
        fmt::format("the torch.export archive has a static batch: its input {} is fixed at {} rows along dim {}; "
                    "export it with a dynamic "
                    "batch, torch.export.export(model, args, dynamic_shapes={{\"{}\": {{{}: "
                    "torch.export.Dim(\"batch\")}}}}), and audit that archive",
                    name, sizes[static_cast<size_t>(d)], d, name, d));
  }
}

// The preflight's one call (Target::check) runs the inputs load() reads, the whole --input: a 4,096-row
// input with --budget 8 asked for 4,096 rows at once (16 GB; on a GPU, out of memory). When the input
// holds more rows than the largest batch the sweep makes, the target loads a copy cut to that many
// rows instead (written into the trial's scratch folder), so that no call exceeds the largest batch asked for.
void cut_input(TrialSpec& spec, const targets::Inputs& in, const BatchRows& rows, int64_t largest) {
  if (rows.count <= largest || spec.input_file.empty() || !in.kwargs.empty()) return;
  std::vector<c10::IValue> cut;
  for (size_t i = 0; i < in.args.size(); ++i) {
    const int64_t d = i < rows.dims.size() ? rows.dims[i] : -1;
    if (d < 0 || !in.args[i].isTensor()) {
      cut.push_back(in.args[i]);
      continue;
    }
    const at::Tensor t = in.args[i].toTensor();
    cut.emplace_back(t.narrow(d, 0, std::min(largest, t.size(d))).contiguous().cpu());
  }
  const c10::IValue value = cut.size() == 1 && cut.front().isTensor() ? cut.front() : c10::ivalue::Tuple::create(cut);
  const std::vector<char> bytes = torch::jit::pickle_save(value);
  const std::string path = spec.scratch + "/invariance-check-input.pt";
  write_file_atomic(path, std::string(bytes.begin(), bytes.end()));
  spec.input_file = path;
}

// A trial child's first steps (worker/child/trial_child.cpp): switches, then the model.
std::vector<report::SwitchValue> apply_configuration(const TrialSpec& spec) {
  try {
    apply_switches(spec.config);
  } catch (const std::exception& e) {
    throw TrialInputError("cannot apply configuration: " + error_text(e), "usage");
  }
  std::vector<report::SwitchValue> switches = read_switches(spec.config);
  if (const std::string mismatch = switch_mismatches(switches); !mismatch.empty())
    throw TrialInputError(mismatch, "usage");
  disable_jit_optimisations();
  load_libraries(spec.load_libraries);
  return switches;
}

std::vector<std::string> named(std::vector<std::string> descriptions, const std::vector<std::string>& names) {
  for (size_t i = 0; i < descriptions.size() && i < names.size(); ++i)
    descriptions[i].replace(0, descriptions[i].find('='), names[i]);
  return descriptions;
}

// --axis verify (verify_sweep.h): the window's prefixes in place of the batch sizes; --trace follows a
// batch, so it names no op here.
InvarianceMeasurement verify_measurement(const InvarianceRequest& request, targets::Target& target,
                                         const BatchRows& rows, const c10::Device& device,
                                         const std::string& progress_path, InvarianceMeasurement& m) {
  ProgressFile progress(progress_path, {});  // the steps are the window's prefixes, which sweep_verify plans
  const double t0 = now_ms();
  {
    c10::InferenceMode guard;
    sweep_verify(target, rows, request, device, m, [&](int64_t tokens, StepEvent event) {
      if (event == StepEvent::Plan) progress.plan(tokens);
      if (event == StepEvent::Start) progress.start(tokens);
      if (event == StepEvent::End) progress.end(tokens);
    });
  }
  m.sweep_ms = now_ms() - t0;
  if (request.trace)
    m.trace = not_traced("--trace follows a row through a batch; on the verify axis it names no op yet");
  return std::move(m);
}

InvarianceMeasurement sweep_measurement(const InvarianceRequest& request, const std::string& scratch,
                                        const std::string& progress_path) {
  InvarianceMeasurement m;
  TrialSpec spec = request.spec;
  spec.scratch = scratch;
  m.switches = apply_configuration(spec);
  const c10::Device device = checked_device(spec.device);
  if (request.fingerprint) m.environment = environment_fingerprint();
  seed_generators(spec.seed);
  const std::unique_ptr<targets::Target> target = targets::open_model_target(spec);
  const std::vector<int64_t> sizes = request.sizes.empty() ? auto_sizes(request.budget) : request.sizes;
  // The largest batch asked for: --sizes' largest, or with auto the largest size of --budget's. No call
  // exceeds it, the first check's included (--sizes 1,2 once made it call the model on --budget's rows:
  // 4 GB for a model of 4 MB per row; an archive exported for batches up to 64 refused --sizes 1,2,3).
  const int64_t largest = sizes.empty() ? 1 : *std::max_element(sizes.begin(), sizes.end());
  // The rows first (their counts, --rows), then the archive's batch, then one call of at most the
  // largest batch's rows (cut_input).
  const targets::Inputs inputs = targets::load_inputs(spec, device);
  BatchRows rows = split_rows(request, inputs, largest, device);
  cut_input(spec, inputs, rows, largest);
  (void)target->load(spec, device);
  m.kind = target->kind();
  // A torch.export archive's runtime, as run's report names it (worker/targets/export.cpp).
  if (const auto p = target->package(); p.size() == 1 && p.count("runtime")) m.runtime = p.at("runtime");
  check_dynamic_batch(spec, *target, rows);
  (void)target->check();
  m.inputs = named(rows.descriptions, target->input_names());
  if (request.axis == Axis::PadRight || request.axis == Axis::PadLeft)
    pad_fillers(rows, target->input_names(), request.axis == Axis::PadLeft);
  m.notes = rows.notes;
  if (request.axis == Axis::Verify) return verify_measurement(request, *target, rows, device, progress_path, m);
  Sweep sweep(*target, std::move(rows), device);
  sweep.compare_with_referee(spec.reference_dump);
  ProgressFile progress(progress_path, sizes);
  const double t0 = now_ms();
  {
    c10::InferenceMode guard;
    progress.start(1);
    sweep.reference();
    try {
      if (sweep.nondeterministic.empty())
        for (const int64_t s : sizes) {
          if (s > 1) progress.start(s);
          sweep.measure(s);
          progress.end(s);
        }
      if (sweep.nondeterministic.empty() && (request.sizes.empty() || request.bisect))
        bisect(sweep, {sizes.begin(), sizes.end()}, progress);
    } catch (const ModelFailure& e) {
      m.stopped = e.what();
    }
  }
  m.nondeterministic = sweep.nondeterministic;
  sweep.fill(m);
  m.sweep_ms = now_ms() - t0;
  if (request.trace) {
    c10::InferenceMode guard;
    if (!m.nondeterministic.empty())
      m.trace = not_traced("a row alone gets other bits on every call (nondeterministic): no batch size to trace");
    else if (std::any_of(request.batch_dims.begin(), request.batch_dims.end(), [](int64_t d) { return d > 0; }))
      m.trace =
          not_traced("--trace follows the batch at dim 0 and an input has it elsewhere (--batch-dim): no op named");
    else if (const auto call = sweep.trace_call())
      m.trace = trace_row(*target, *call, device);
    else
      m.trace = not_traced(
          "every batch size tried gives the anchor rows their bits alone at the start of the batch: "
          "no op to trace");
  }
  return m;
}

// The float64 referee of `invariance` (InvarianceRequest::referee): each anchor row alone in float64,
// as the sweep's reference calls it in the audited precision, under the precision guard (a model that
// computes below float64 itself is no reference: its op named, and no dump), with float64 the default
// dtype of factory functions as in run's referee. Each output that keeps the batch at dim 0 is written
// to the dump as its anchors' rows, stacked in anchor order. A failure is the worker's one line (exit
// 3), which the front reports as the referee's note ("its float64 run raised: ...").
InvarianceMeasurement referee_rows(const InvarianceRequest& request, const std::string& scratch) {
  InvarianceMeasurement m;
  TrialSpec spec = request.spec;
  spec.scratch = scratch;
  m.switches = apply_configuration(spec);
  const c10::Device device = checked_device(spec.device);
  seed_generators(spec.seed);
  c10::set_default_dtype(caffe2::TypeMeta::Make<double>());
  const std::unique_ptr<targets::Target> target = targets::open_model_target(spec);
  const targets::Inputs inputs = targets::load_inputs(spec, device);
  BatchRows rows = split_rows(request, inputs, 1, device);
  (void)target->load(spec, device);
  m.kind = target->kind();
  std::map<std::string, std::vector<at::Tensor>> slices;
  std::vector<std::string> order;
  {
    c10::InferenceMode guard;
    trace::PrecisionGuard precision;
    for (int a = 0; a < rows.anchors; ++a) {
      const NamedTensors out = timed_call(*target, make_batch(rows, {a}, device), device, m.forward_ms, m.calls,
                                          [](const std::exception& e) { throw InputError(error_text(e)); });
      for (const auto& [name, t] : out) {
        if (t.dim() == 0 || t.size(0) != 1) continue;  // not an output the sweep compares
        if (a == 0) order.push_back(name);
        slices[name].push_back(t.select(0, 0).detach().to(at::kCPU).clone());
      }
    }
    if (const std::string below = precision.first_below(); !below.empty()) throw InputError(below);
  }
  Recorder rec(true);
  for (const auto& name : order)
    if (slices[name].size() == static_cast<size_t>(rows.anchors)) rec.add(name, at::stack(slices[name]));
  if (const std::string why = rec.write_dump(spec.dump_path); !why.empty())
    throw InputError(fmt::format("its tensors could not be written ({})", why));
  m.outputs = order;
  return m;
}

}  // namespace

InvarianceMeasurement run_sweep(const InvarianceRequest& request, const std::string& scratch,
                                const std::string& progress_path) {
  try {
    if (request.referee) return referee_rows(request, scratch);
    return sweep_measurement(request, scratch, progress_path);
  } catch (const TrialInputError& e) {
    if (e.kind == "usage") throw UsageError(e.what());
    throw InputError(e.what());
  }
}

}  // namespace ra::invariance
