// SPDX-License-Identifier: Apache-2.0
#include "audit/invariance/invariance_referee.h"

#include "audit/trial/referee.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

namespace ra::invariance {
namespace {

using report::Classified;
using report::DifferenceClass;
using report::InvarianceConfig;
using report::ReferenceError;
using report::SizeClass;

// The larger of two figures; NaN (no element finite in both) wins, as it keeps a result from a class.
double larger(double a, double b) { return std::isnan(a) || std::isnan(b) ? std::nan("") : std::max(a, b); }

// `into` (an output's rows so far) widened by another anchor's row `e` of the same output.
void widen(ReferenceError& into, const ReferenceError& e) {
  into.numel += e.numel;
  into.max_ulp = larger(into.max_ulp, e.max_ulp);
  into.max_abs = larger(into.max_abs, e.max_abs);
  into.max_rel = larger(into.max_rel, e.max_rel);
  into.nonfinite += e.nonfinite;
  into.nan_result += e.nan_result;
  into.nan_reference += e.nan_reference;
  if (into.note.empty() && !e.note.empty()) into.note = fmt::format("anchor rows: {}", e.note);
}

// An error with figures a class can be weighed by.
bool measured(const ReferenceError& e) {
  return e.note.empty() && e.nan_result == 0 && e.nan_reference == 0 && e.nonfinite == 0 && std::isfinite(e.max_ulp);
}

const report::InvarianceCell* start_cell(const InvarianceConfig& c, int64_t size) {
  for (const auto& cell : c.cells)
    if (cell.size == size && cell.placement == "start") return &cell;
  return nullptr;
}

// The rows of the start cell of `size`: (anchor, output) -> digest.
std::map<std::pair<int, std::string>, std::string> digests_at(const InvarianceConfig& c, int64_t size) {
  std::map<std::pair<int, std::string>, std::string> out;
  if (const auto* cell = start_cell(c, size))
    for (const auto& r : cell->rows) out[{r.anchor, r.output}] = r.digest;
  return out;
}

// A class's errors: the rows of its smallest size, per output (in the order the rows name them), the
// furthest anchor's figures.
std::vector<ReferenceError> class_errors(
    const InvarianceConfig& c, const SizeClass& k,
    const std::map<std::tuple<int, std::string, std::string>, ReferenceError>& by) {
  std::vector<ReferenceError> out;
  const auto* cell = start_cell(c, k.sizes.front());
  if (cell == nullptr) return out;
  for (const auto& r : cell->rows) {
    const auto it = by.find({r.anchor, r.output, r.digest});
    if (it == by.end()) continue;  // an integer or bool output: compared bit for bit only
    const auto same = std::find_if(out.begin(), out.end(), [&](const ReferenceError& e) { return e.name == r.output; });
    if (same == out.end())
      out.push_back(it->second);
    else
      widen(*same, it->second);
  }
  return out;
}

const ReferenceError* error_of(const std::vector<ReferenceError>& errors, const std::string& output) {
  for (const auto& e : errors)
    if (e.name == output) return &e;
  return nullptr;
}

// The class of class `k`'s difference from the reference class `ref`, over the outputs whose bits
// differ between their smallest sizes: the most severe.
Classified difference(const InvarianceConfig& c, const SizeClass& ref, const SizeClass& k,
                      const report::Referee& referee, std::vector<std::pair<std::string, Classified>>& all) {
  const int64_t a = ref.sizes.front(), b = k.sizes.front();
  const auto da = digests_at(c, a), db = digests_at(c, b);
  std::vector<std::string> outputs;
  for (const auto& [key, digest] : db)
    if (const auto it = da.find(key); it != da.end() && it->second != digest &&
                                      std::find(outputs.begin(), outputs.end(), key.second) == outputs.end())
      outputs.push_back(key.second);
  std::optional<Classified> worst;
  for (const auto& output : outputs) {
    const ReferenceError* ea = error_of(ref.errors, output);
    const ReferenceError* eb = error_of(k.errors, output);
    Classified d;
    if (referee.ran && ea == nullptr && eb == nullptr) {
      d.why = "an integer or bool output: compared bit for bit only, without error figures";
    } else {
      report::TensorFinding f;
      f.name = output;
      f.dtype = eb != nullptr ? eb->dtype : ea != nullptr ? ea->dtype : "float32";
      d = classify_difference(f, referee, fmt::format("batch {}", a), ea, fmt::format("batch {}", b), eb);
    }
    all.emplace_back(fmt::format("{} at batch {}", output, b), d);
    if (!worst || d.cls < worst->cls) worst = std::move(d);
  }
  if (!worst) {  // no output's bits differ at the two smallest sizes: the class differs elsewhere
    Classified d;
    d.why =
        fmt::format("batch {} and batch {} give the anchors the same bits; the classes differ at other sizes", a, b);
    return d;
  }
  return *worst;
}

// A class's furthest output from float64 in its own ULP, or nullptr when an output has no figures.
const ReferenceError* furthest(const SizeClass& k) {
  const ReferenceError* out = nullptr;
  for (const auto& e : k.errors) {
    if (!measured(e)) return nullptr;
    if (out == nullptr || e.max_ulp > out->max_ulp) out = &e;
  }
  return out;
}

std::string sizes_of(const SizeClass& k) { return "{" + report::sizes_text(k.sizes) + "}"; }

// An error in ULP as the lines print it.
std::string ulp(double u) { return u < 1e6 ? fmt::format("{:.0f}", u) : fmt::format("{:.3g}", u); }

}  // namespace

void attach_class_errors(InvarianceConfig& c, const std::vector<RowError>& errors, const report::Referee& referee) {
  if (c.classes.empty()) return;
  std::map<std::tuple<int, std::string, std::string>, ReferenceError> by;
  for (const auto& e : errors) by.emplace(std::make_tuple(e.anchor, e.output, e.digest), e.error);
  if (referee.ran)
    for (auto& k : c.classes) k.errors = class_errors(c, k, by);
  if (c.classes.size() < 2) return;
  std::vector<std::pair<std::string, Classified>> all;
  for (size_t i = 1; i < c.classes.size(); ++i)
    c.classes[i].difference = difference(c, c.classes.front(), c.classes[i], referee, all);
  c.referee = report::summarise_classes(all);
  if (!referee.ran) return;
  if (const std::string closest = closest_class_text(c); !closest.empty()) {
    c.advice.push_back("float64 referee: " + closest);
    return;
  }
  const bool reordering = std::all_of(c.classes.begin() + 1, c.classes.end(), [](const SizeClass& k) {
    return k.difference && k.difference->cls == DifferenceClass::Reordering;
  });
  double most = 0;
  for (const auto& k : c.classes)
    if (const ReferenceError* e = furthest(k)) most = std::max(most, e->max_ulp);
  if (reordering)
    c.advice.push_back(fmt::format(
        "float64 referee: every class lies within {} ULP of float64 and they differ by float reordering: none is "
        "more right, so choose a class for sameness, not accuracy",
        ulp(most)));
}

std::string closest_class_text(const InvarianceConfig& c) {
  if (c.classes.size() < 2) return "";
  const SizeClass* best = nullptr;
  const SizeClass* worst = nullptr;
  for (const auto& k : c.classes) {
    const ReferenceError* e = furthest(k);
    if (e == nullptr) return "";
    if (best == nullptr || e->max_ulp < furthest(*best)->max_ulp) best = &k;
    if (worst == nullptr || e->max_ulp > furthest(*worst)->max_ulp) worst = &k;
  }
  const double low = furthest(*best)->max_ulp, high = furthest(*worst)->max_ulp;
  if (high <= std::max(kFloorUlp, kFactor * low)) return "";
  return fmt::format(
      "the classes differ in accuracy: {} is closest to float64 (max {} ULP, where {} is {} ULP{}); where "
      "accuracy matters, batch within {}",
      sizes_of(*best), ulp(low), sizes_of(*worst), ulp(high),
      furthest(*worst)->name.empty() ? "" : fmt::format(" in {}", furthest(*worst)->name), sizes_of(*best));
}

void weigh_candidate(report::InvarianceFixCandidate& c, const InvarianceConfig& from) {
  if (c.verdict != "invariant" || c.classes.empty() || from.classes.empty()) return;
  // Per output, the furthest class of each side.
  const auto per_output = [](const std::vector<SizeClass>& classes) {
    std::map<std::string, double> out;
    for (const auto& k : classes)
      for (const auto& e : k.errors)
        if (measured(e)) out[e.name] = std::max(out[e.name], e.max_ulp);
    return out;
  };
  const auto mine = per_output(c.classes), theirs = per_output(from.classes);
  // The output that moved furthest from float64 against its bound, and the largest figures.
  std::string output;
  double ratio = -1, high = 0, base = 0;
  for (const auto& [name, e] : mine) {
    const auto it = theirs.find(name);
    if (it == theirs.end()) continue;
    const double r = e / std::max(kFloorUlp, kFactor * it->second);
    if (r > ratio) ratio = r, output = name, high = e, base = it->second;
  }
  if (ratio < 0) return;
  c.downgrade = ratio > 1;
  if (c.downgrade)
    c.accuracy = fmt::format("max {} ULP from float64 where {} had {} ({}): a downgrade", ulp(high), from.config,
                             ulp(base), output);
  else if (base > std::max(kFloorUlp, kFactor * high))
    c.accuracy =
        fmt::format("closer to float64: max {} ULP where {} had {} ({})", ulp(high), from.config, ulp(base), output);
  else
    c.accuracy = fmt::format("error vs float64 unchanged (max {} ULP; {} had {})", ulp(high), from.config, ulp(base));
}

}  // namespace ra::invariance
