// SPDX-License-Identifier: Apache-2.0
// The fix search's cheapest fixes and an op stream's sizes (reports/trace_model.h).
#include "reports/trace_model.h"

#include <algorithm>

namespace ra::report {

bool fix_costs_measured(const FixSearch& f) {
  return f.baseline_median_ms.has_value() || std::any_of(f.candidates.begin(), f.candidates.end(),
                                                         [](const FixCandidate& c) { return c.median_ms.has_value(); });
}

namespace {

// Whether minimal fix `c` is one cheapest_fix weighs: every fix when all are downgrades, else the others.
bool weighed(const FixSearch& f, const FixCandidate& c) {
  if (!c.downgrade()) return true;
  return std::none_of(f.best.begin(), f.best.end(),
                      [&f](size_t i) { return i < f.candidates.size() && !f.candidates[i].downgrade(); });
}

}  // namespace

const FixCandidate* cheapest_fix(const FixSearch& f) {
  const FixCandidate* best = nullptr;
  for (const size_t i : f.best) {
    if (i >= f.candidates.size() || !weighed(f, f.candidates[i])) continue;
    const FixCandidate& c = f.candidates[i];
    const bool priced = cost_measurable(c.cost_low, c.cost_high);
    if (!best || (priced && (!cost_measurable(best->cost_low, best->cost_high) || *c.cost_ratio < *best->cost_ratio)))
      best = &c;
  }
  return best;
}

bool cheapest_known(const FixSearch& f) {
  const FixCandidate* c = cheapest_fix(f);
  const auto rivals = std::count_if(f.best.begin(), f.best.end(),
                                    [&f](size_t i) { return i < f.candidates.size() && weighed(f, f.candidates[i]); });
  return c && (rivals == 1 || cost_measurable(c->cost_low, c->cost_high));
}

bool same_cost(const FixCandidate& a, const FixCandidate& b) {
  if (!cost_measurable(a.cost_low, a.cost_high) || !cost_measurable(b.cost_low, b.cost_high)) return false;
  return *a.cost_low <= *b.cost_high && *b.cost_low <= *a.cost_high;
}

std::vector<const FixCandidate*> fixes_costing_the_same(const FixSearch& f) {
  std::vector<const FixCandidate*> out;
  const FixCandidate* cheapest = cheapest_fix(f);
  if (!cheapest) return out;
  for (const size_t i : f.best)
    if (i < f.candidates.size() && &f.candidates[i] != cheapest && weighed(f, f.candidates[i]) &&
        same_cost(f.candidates[i], *cheapest))
      out.push_back(&f.candidates[i]);
  return out;
}

std::vector<const FixCandidate*> downgrades_passed_over(const FixSearch& f) {
  std::vector<const FixCandidate*> out;
  for (const size_t i : f.best)
    if (i < f.candidates.size() && !weighed(f, f.candidates[i])) out.push_back(&f.candidates[i]);
  return out;
}

uint64_t OpStream::records() const {
  uint64_t n = 0;
  for (const auto& t : threads) n += t.records;
  return n;
}

uint64_t OpStream::packed_bytes() const {
  uint64_t n = 0;
  for (const auto& t : threads) n += t.packed.size();
  return n;
}

OpStream OpStream::without_names() const {
  OpStream out;
  for (const auto& t : threads) out.threads.push_back({t.thread, t.records, t.packed, ""});
  return out;
}

}  // namespace ra::report
