// SPDX-License-Identifier: Apache-2.0
#include "audit/trace/trace_align.h"

#include "audit/common/log.h"
#include "audit/trace/trace_io.h"
#include "audit/trial/analysis.h"

#include <fmt/format.h>
#include <optional>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

namespace ra::trace {
namespace {

using Keys = std::vector<uint32_t>;
using Pairs = std::vector<std::pair<size_t, size_t>>;

constexpr size_t kNone = static_cast<size_t>(-1);

size_t index_of_order(const Trace& t, uint64_t order) {
  const auto it = std::lower_bound(t.records.begin(), t.records.end(), order,
                                   [](const Record& r, uint64_t o) { return r.order < o; });
  return it != t.records.end() && it->order == order ? static_cast<size_t>(it - t.records.begin()) : kNone;
}

uint64_t end_order(const Trace& t) { return t.records.empty() ? 0 : t.records.back().order + 1; }

// ---- Myers' difference algorithm, linear space -------------------------------------------------

struct Range {
  size_t a0, a1, b0, b1;
};

// A point (x, y), relative to the range, that a shortest edit path through it passes (Myers'
// middle snake, searched from both ends at once), or the furthest point the forward search
// reached once kMaxEditCost steps are spent; nullopt when the ranges have nothing in common.
// Follows the bisection of diff-match-patch (Neil Fraser), on integer keys.
std::optional<std::pair<ptrdiff_t, ptrdiff_t>> middle_snake(const Keys& ka, const Keys& kb, const Range& r) {
  const ptrdiff_t n = static_cast<ptrdiff_t>(r.a1 - r.a0), m = static_cast<ptrdiff_t>(r.b1 - r.b0);
  const uint32_t* a = ka.data() + r.a0;
  const uint32_t* b = kb.data() + r.b0;
  const ptrdiff_t full = (n + m + 1) / 2;
  const ptrdiff_t cap = static_cast<ptrdiff_t>(kMaxEditCost);
  const ptrdiff_t max_d = std::min(full, cap);
  const ptrdiff_t off = max_d + 1;
  std::vector<ptrdiff_t> v1(static_cast<size_t>(2 * max_d + 3), -1), v2(v1);
  v1[static_cast<size_t>(off + 1)] = 0;
  v2[static_cast<size_t>(off + 1)] = 0;
  const auto at = [](std::vector<ptrdiff_t>& v, ptrdiff_t i) -> ptrdiff_t& { return v[static_cast<size_t>(i)]; };
  const ptrdiff_t len = static_cast<ptrdiff_t>(v1.size());
  const ptrdiff_t delta = n - m;
  const bool front = delta % 2 != 0;  // the forward path meets the reverse one on odd deltas
  ptrdiff_t k1start = 0, k1end = 0, k2start = 0, k2end = 0;
  ptrdiff_t best_x = 0, best_y = 0;
  for (ptrdiff_t d = 0; d < full && d <= cap; ++d) {
    for (ptrdiff_t k1 = -d + k1start; k1 <= d - k1end; k1 += 2) {
      const ptrdiff_t k1o = off + k1;
      ptrdiff_t x1 =
          (k1 == -d || (k1 != d && at(v1, k1o - 1) < at(v1, k1o + 1))) ? at(v1, k1o + 1) : at(v1, k1o - 1) + 1;
      ptrdiff_t y1 = x1 - k1;
      while (x1 < n && y1 < m && a[x1] == b[y1]) ++x1, ++y1;
      at(v1, k1o) = x1;
      if (x1 > n) {
        k1end += 2;  // ran off the right
      } else if (y1 > m) {
        k1start += 2;  // ran off the bottom
      } else {
        if (x1 + y1 > best_x + best_y) best_x = x1, best_y = y1;
        const ptrdiff_t k2o = off + delta - k1;
        if (front && k2o >= 0 && k2o < len && at(v2, k2o) != -1 && x1 >= n - at(v2, k2o)) return std::pair{x1, y1};
      }
    }
    for (ptrdiff_t k2 = -d + k2start; k2 <= d - k2end; k2 += 2) {
      const ptrdiff_t k2o = off + k2;
      ptrdiff_t x2 =
          (k2 == -d || (k2 != d && at(v2, k2o - 1) < at(v2, k2o + 1))) ? at(v2, k2o + 1) : at(v2, k2o - 1) + 1;
      ptrdiff_t y2 = x2 - k2;
      while (x2 < n && y2 < m && a[n - x2 - 1] == b[m - y2 - 1]) ++x2, ++y2;
      at(v2, k2o) = x2;
      if (x2 > n) {
        k2end += 2;
      } else if (y2 > m) {
        k2start += 2;
      } else if (!front) {
        const ptrdiff_t k1o = off + delta - k2;
        if (k1o >= 0 && k1o < len && at(v1, k1o) != -1) {
          const ptrdiff_t x1 = at(v1, k1o), y1 = off + x1 - k1o;
          if (x1 >= n - x2) return std::pair{x1, y1};
        }
      }
    }
  }
  if (full <= cap) return std::nullopt;  // searched everything: no key in common
  return std::pair{best_x, best_y};      // too expensive: settle for the furthest forward point
}

// ---- Keys and per-thread streams ---------------------------------------------------------------

// Interns "what makes two records the same op" (never values) as small integers.
class KeyTable {
 public:
  uint32_t id(const Trace& t, const Record& r) {
    std::string k;
    k.reserve(96);
    k += r.kind;
    k += '\x1f';
    k += r.op;
    k += '\x1f';
    k += r.phase;
    k += '\x1f';
    k += std::to_string(r.step);
    k += '\x1f';
    if (r.parent >= 0) {
      const size_t p = index_of_order(t, static_cast<uint64_t>(r.parent));
      k += p == kNone ? std::string("?") : t.records[p].op;
    }
    for (const auto& in : r.inputs) {
      k += '\x1f';
      k += in.dtype;
      for (const int64_t s : in.shape) {
        k += ',';
        k += std::to_string(s);
      }
    }
    return ids_.try_emplace(std::move(k), static_cast<uint32_t>(ids_.size())).first->second;
  }

 private:
  std::unordered_map<std::string, uint32_t> ids_;
};

struct Gap {
  size_t a_begin, a_end, b_begin, b_end;
  uint64_t reordered = 0;
};

// Pairs unmatched records of equal key that sit within kReorderWindow of where their gap is in
// the other stream (nearest first); adds them to `pairs` (as stream positions).
void pair_reordered(const Keys& ka, const Keys& kb, std::vector<Gap>& gaps, Pairs& pairs) {
  std::unordered_map<uint32_t, std::vector<size_t>> free_b;  // key -> unmatched positions, ascending
  std::vector<size_t> gap_of_b(kb.size(), kNone);
  for (size_t g = 0; g < gaps.size(); ++g)
    for (size_t j = gaps[g].b_begin; j < gaps[g].b_end; ++j) {
      free_b[kb[j]].push_back(j);
      gap_of_b[j] = g;
    }
  if (free_b.empty()) return;
  std::vector<char> used(kb.size(), 0);
  for (size_t g = 0; g < gaps.size(); ++g)
    for (size_t i = gaps[g].a_begin; i < gaps[g].a_end; ++i) {
      const auto it = free_b.find(ka[i]);
      if (it == free_b.end()) continue;
      const std::vector<size_t>& cand = it->second;
      const size_t target = gaps[g].b_begin;
      const auto lo = std::lower_bound(cand.begin(), cand.end(), target);
      size_t right = kNone, left = kNone;
      for (auto r = lo; r != cand.end() && *r - target <= kReorderWindow; ++r)
        if (!used[*r]) {
          right = *r;
          break;
        }
      for (auto l = lo; l != cand.begin() && target - *(l - 1) <= kReorderWindow; --l)
        if (!used[*(l - 1)]) {
          left = *(l - 1);
          break;
        }
      const size_t j = right == kNone ? left : left == kNone ? right : (target - left < right - target ? left : right);
      if (j == kNone) continue;
      used[j] = 1;
      pairs.emplace_back(i, j);
      ++gaps[g].reordered;
      ++gaps[gap_of_b[j]].reordered;
    }
}

bool inputs_match(const Record& a, const Record& b) {
  if (a.scalars != b.scalars || a.inputs.size() != b.inputs.size()) return false;
  for (size_t i = 0; i < a.inputs.size(); ++i)
    if (a.inputs[i].digest != b.inputs[i].digest || a.inputs[i].dtype != b.inputs[i].dtype ||
        a.inputs[i].shape != b.inputs[i].shape)
      return false;
  return true;
}

std::vector<int> differing_outputs(const Record& a, const Record& b) {
  std::vector<int> out;
  if (returns_uninitialised(a.op) && a.op == b.op) return out;
  const size_t n = std::max(a.outputs.size(), b.outputs.size());
  for (size_t i = 0; i < n; ++i)
    if (i >= a.outputs.size() || i >= b.outputs.size() || a.outputs[i].digest != b.outputs[i].digest ||
        a.outputs[i].dtype != b.outputs[i].dtype || a.outputs[i].shape != b.outputs[i].shape)
      out.push_back(static_cast<int>(i));
  return out;
}

// The forward record (kind op, top level, seq >= 0, phase forward, same step) with the greatest
// sequence number <= seq; the later one in order on a tie.
size_t forward_of(const Trace& t, int64_t seq, int step) {
  size_t best = kNone;
  for (size_t i = 0; i < t.records.size(); ++i) {
    const Record& r = t.records[i];
    if (r.kind != "op" || r.parent != -1 || r.seq < 0 || r.seq > seq || r.step != step || r.phase != "forward")
      continue;
    if (best == kNone || r.seq >= t.records[best].seq) best = i;
  }
  return best;
}

}  // namespace

// (trace_align.h) Ops that return uninitialised memory: their outputs' bits are whatever the allocator held, and
// differ between runs without meaning anything (unless fill_uninitialized_memory is on). What is
// written into them later is compared where it is read.
bool returns_uninitialised(const std::string& op) {
  static const std::set<std::string> ops = {"aten::empty",     "aten::empty_like",        "aten::empty_strided",
                                            "aten::new_empty", "aten::new_empty_strided", "aten::empty_permuted"};
  return ops.count(op) > 0;
}

std::vector<std::pair<size_t, size_t>> align_sequences(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  Pairs out;
  std::vector<Range> work{{0, a.size(), 0, b.size()}};
  while (!work.empty()) {
    Range r = work.back();
    work.pop_back();
    while (r.a0 < r.a1 && r.b0 < r.b1 && a[r.a0] == b[r.b0]) out.emplace_back(r.a0++, r.b0++);
    while (r.a0 < r.a1 && r.b0 < r.b1 && a[r.a1 - 1] == b[r.b1 - 1]) out.emplace_back(--r.a1, --r.b1);
    if (r.a0 == r.a1 || r.b0 == r.b1) continue;
    const auto split = middle_snake(a, b, r);
    if (!split) continue;
    const auto x = static_cast<size_t>(split->first), y = static_cast<size_t>(split->second);
    if ((x == 0 && y == 0) || (r.a0 + x == r.a1 && r.b0 + y == r.b1)) continue;  // no progress: give up here
    work.push_back({r.a0 + x, r.a1, r.b0 + y, r.b1});
    work.push_back({r.a0, r.a0 + x, r.b0, r.b0 + y});
  }
  std::sort(out.begin(), out.end());
  return out;
}

Alignment align_traces(const Trace& reference, const Trace& other) {
  std::map<uint32_t, std::pair<std::vector<size_t>, std::vector<size_t>>> threads;
  for (size_t i = 0; i < reference.records.size(); ++i) threads[reference.records[i].thread].first.push_back(i);
  for (size_t j = 0; j < other.records.size(); ++j) threads[other.records[j].thread].second.push_back(j);

  KeyTable table;
  Alignment result;
  for (const auto& [thread, streams] : threads) {
    const auto& [sa, sb] = streams;
    Keys ka(sa.size()), kb(sb.size());
    for (size_t i = 0; i < sa.size(); ++i) ka[i] = table.id(reference, reference.records[sa[i]]);
    for (size_t j = 0; j < sb.size(); ++j) kb[j] = table.id(other, other.records[sb[j]]);
    Pairs pairs = align_sequences(ka, kb);

    std::vector<Gap> gaps;
    size_t pa = 0, pb = 0;
    for (const auto& [i, j] : pairs) {
      if (i > pa || j > pb) gaps.push_back({pa, i, pb, j});
      pa = i + 1;
      pb = j + 1;
    }
    if (pa < sa.size() || pb < sb.size()) gaps.push_back({pa, sa.size(), pb, sb.size()});
    pair_reordered(ka, kb, gaps, pairs);

    for (const auto& [i, j] : pairs) result.pairs.emplace_back(sa[i], sb[j]);
    for (const Gap& g : gaps) {
      Split s;
      s.thread = thread;
      const bool a_end = g.a_begin == sa.size(), b_end = g.b_begin == sb.size();
      s.reference_index = a_end ? reference.records.size() : sa[g.a_begin];
      s.other_index = b_end ? other.records.size() : sb[g.b_begin];
      s.reference_position = a_end ? (sa.empty() ? end_order(reference) : reference.records[sa.back()].order + 1)
                                   : reference.records[s.reference_index].order;
      s.other_position = b_end ? (sb.empty() ? end_order(other) : other.records[sb.back()].order + 1)
                               : other.records[s.other_index].order;
      s.unmatched_reference = g.a_end - g.a_begin;
      s.unmatched_other = g.b_end - g.b_begin;
      s.reordered = g.reordered;
      result.splits.push_back(s);
    }
  }
  std::sort(result.pairs.begin(), result.pairs.end());
  std::stable_sort(result.splits.begin(), result.splits.end(), [](const Split& x, const Split& y) {
    return std::pair(x.reference_position, x.thread) < std::pair(y.reference_position, y.thread);
  });
  return result;
}

namespace {

// For each tensor digest, the first record that wrote it (aten::empty and kin write nothing).
std::map<std::string, size_t> first_outputs(const Trace& t) {
  std::map<std::string, size_t> first;
  for (size_t i = 0; i < t.records.size(); ++i)
    if (!returns_uninitialised(t.records[i].op))
      for (const auto& o : t.records[i].outputs) first.emplace(o.digest, i);
  return first;
}

// Whether the pair's inputs differ only in bits that no traced op wrote: a tensor of the same
// dtype and shape on both sides whose digest no earlier record output, in either run. Memory left
// uninitialised, by aten::empty or by an untraced kernel (NativeRT's static CPU kernels allocate
// without the dispatcher, before a traced fill_ or view), differs run to run without meaning
// anything; what is computed from it later is compared there.
bool differs_only_in_unwritten_memory(const Record& a, size_t i, const std::map<std::string, size_t>& fa,
                                      const Record& b, size_t j, const std::map<std::string, size_t>& fb) {
  if (a.scalars != b.scalars || a.inputs.size() != b.inputs.size()) return false;
  const auto unwritten = [](const std::map<std::string, size_t>& first, const std::string& digest, size_t at) {
    const auto it = first.find(digest);
    return it == first.end() || it->second >= at;
  };
  bool any = false;
  for (size_t k = 0; k < a.inputs.size(); ++k) {
    const TensorRef &x = a.inputs[k], &y = b.inputs[k];
    if (x.digest == y.digest && x.dtype == y.dtype && x.shape == y.shape) continue;
    if (x.dtype != y.dtype || x.shape != y.shape || !unwritten(fa, x.digest, i) || !unwritten(fb, y.digest, j))
      return false;
    any = true;
  }
  return any;
}

}  // namespace

RunComparison compare_runs(const Trace& reference, const Trace& other) {
  RunComparison c;
  c.alignment = align_traces(reference, other);
  // Who wrote each digest: indexed only when a pair with differing inputs and outputs needs it
  // (identical runs, the common case, never do).
  std::optional<std::map<std::string, size_t>> first_a, first_b;
  for (const auto& [i, j] : c.alignment.pairs) {
    const Record& a = reference.records[i];
    const Record& b = other.records[j];
    std::vector<int> differing = differing_outputs(a, b);
    if (differing.empty()) continue;
    const bool matched = inputs_match(a, b);
    if (!matched) {
      if (!first_a) first_a = first_outputs(reference), first_b = first_outputs(other);
      if (differs_only_in_unwritten_memory(a, i, *first_a, b, j, *first_b)) continue;
    }
    ++c.output_mismatches;
    if (!c.root_cause) {
      if (matched) {
        c.root_cause = i;
        c.root_cause_other = j;
        c.differing_outputs = std::move(differing);
      }
      continue;
    }
    ++c.propagated;
    if (matched) ++c.independent_mismatches;
  }
  return c;
}

Provenance provenance(const Trace& trace, size_t index) {
  Provenance p;
  const Record& r = trace.records.at(index);
  if (r.phase == "optimizer") {
    p.direction = "optimizer";
    p.module = r.module;
    p.source = r.source;
    return p;
  }
  if (r.kind != "node" && r.parent < 0 && r.phase != "backward") {
    p.direction = "forward";
    p.module = r.module;
    p.source = r.source;
    return p;
  }
  p.direction = "backward";
  const size_t node = r.kind == "node" ? index
                      : r.parent >= 0  ? index_of_order(trace, static_cast<uint64_t>(r.parent))
                                       : kNone;
  if (node == kNone) return p;
  const Record& n = trace.records[node];
  p.node = n.op;
  if (n.seq < 0) return p;
  const size_t fwd = forward_of(trace, n.seq, n.step);
  if (fwd == kNone) return p;
  p.forward_op = trace.records[fwd].op;
  p.module = trace.records[fwd].module;
  p.source = trace.records[fwd].source;
  return p;
}

std::string describe(const TensorRef& t) {
  if (t.dtype.empty()) return "None";
  std::string out = t.dtype + "[";
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (i > 0) out += 'x';
    out += std::to_string(t.shape[i]);
  }
  return out + "]";
}

report::TraceSummary analyse_traces(const std::vector<Trace>& runs, const std::vector<int>& repeats) {
  report::TraceSummary s;
  if (runs.empty()) return s;
  const Trace& ref = runs.front();
  s.records = ref.records.size();
  for (const Trace& t : runs) {
    s.dropped = std::max(s.dropped, t.dropped);
    s.capacity = std::max(s.capacity, t.capacity);
    s.memory_bytes = std::max(s.memory_bytes, t.memory_bytes);
  }
  s.runs_compared = static_cast<int>(runs.size()) - 1;

  std::map<uint64_t, report::RootCause> causes;                             // by reference position
  std::map<std::pair<uint64_t, uint32_t>, report::StructuralSplit> splits;  // by position, thread
  for (size_t k = 1; k < runs.size(); ++k) {
    const int repeat = repeats.size() == runs.size() ? repeats[k] : static_cast<int>(k);
    const Trace& other = runs[k];
    const RunComparison c = compare_runs(ref, other);
    if (c.identical()) ++s.runs_identical;
    if (c.root_cause) {
      const Record& r = ref.records[*c.root_cause];
      auto [it, fresh] = causes.try_emplace(r.order);
      report::RootCause& rc = it->second;
      if (fresh) {
        const Provenance p = provenance(ref, *c.root_cause);
        rc.op = r.op;
        rc.direction = p.direction;
        rc.node = p.node;
        rc.forward_op = p.forward_op;
        rc.module = p.module;
        rc.source = p.source;
        rc.phase = r.phase;
        rc.step = r.step;
        rc.thread = r.thread;
        rc.position = r.order;
        for (const auto& t : r.inputs) rc.inputs.push_back(describe(t));
        for (const auto& t : r.outputs) rc.outputs.push_back(describe(t));
      }
      ++rc.runs_diverged;
      rc.repeats.push_back(repeat);
      rc.propagated = std::max(rc.propagated, c.propagated);
      rc.independent_mismatches = std::max(rc.independent_mismatches, c.independent_mismatches);
      std::vector<int> merged;
      std::set_union(rc.differing_outputs.begin(), rc.differing_outputs.end(), c.differing_outputs.begin(),
                     c.differing_outputs.end(), std::back_inserter(merged));
      rc.differing_outputs = std::move(merged);
    }
    for (const Split& sp : c.alignment.splits) {
      auto [it, fresh] = splits.try_emplace(std::pair(sp.reference_position, sp.thread));
      report::StructuralSplit& out = it->second;
      if (fresh) {
        out.thread = sp.thread;
        out.reference_position = sp.reference_position;
        out.other_position = sp.other_position;
        if (sp.unmatched_reference > 0) out.reference_op = ref.records[sp.reference_index].op;
        if (sp.unmatched_other > 0) out.other_op = other.records[sp.other_index].op;
      }
      out.unmatched_reference = std::max(out.unmatched_reference, sp.unmatched_reference);
      out.unmatched_other = std::max(out.unmatched_other, sp.unmatched_other);
      out.reordered = std::max(out.reordered, sp.reordered);
      ++out.runs;
      out.repeats.push_back(repeat);
    }
  }
  for (auto& [pos, rc] : causes) {
    rc.runs_compared = s.runs_compared;
    s.root_causes.push_back(std::move(rc));
  }
  for (auto& [key, sp] : splits) s.splits.push_back(std::move(sp));
  return s;
}

void explain_dependence(report::ConfigDependence& dep, const std::vector<report::ConfigResult>& configs,
                        const std::vector<std::string>& reference_traces, const std::vector<int>& reference_repeats) {
  const auto index_of = [&](const std::string& name) {
    size_t i = 0;
    while (i < configs.size() && configs[i].name != name) ++i;
    return i;
  };
  // The reference repeat's trace of configuration c, and its repeat index.
  const auto load = [&](size_t c) {
    if (reference_traces[c].empty()) throw TraceError(fmt::format("{} has no traced repeat", configs[c].name));
    return std::pair(read_trace(reference_traces[c]), reference_repeats[c]);
  };
  const size_t a = index_of(dep.groups.front().front());
  std::optional<std::pair<trace::Trace, int>> reference;
  std::string reference_error;
  try {
    reference = load(a);
  } catch (const TraceError& e) {
    reference_error = e.what();
  }
  for (size_t g = 1; g < dep.groups.size(); ++g) {
    const size_t b = index_of(dep.groups[g].front());
    report::ConfigCause cause;
    cause.reference_config = configs[a].name;
    cause.config = configs[b].name;
    cause.switches = switch_changes(configs[a].switches, configs[b].switches);
    try {
      if (!reference) throw TraceError(reference_error);
      const auto other = load(b);
      cause.trace = analyse_traces({reference->first, other.first}, {reference->second, other.second});
      if (cause.trace->root_causes.empty())
        cause.note = cause.trace->splits.empty()
                         ? "every traced op turned matching inputs into matching outputs: the difference arose outside "
                           "the traced ops"
                         : "the op streams differ before any op turned matching inputs into different outputs";
    } catch (const TraceError& e) {
      cause.note = fmt::format("no op can be named: {}", e.what());
      log::warn("{} against {}: {}", cause.config, cause.reference_config, cause.note);
    }
    dep.causes.push_back(std::move(cause));
  }
}

}  // namespace ra::trace
