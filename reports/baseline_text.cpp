// SPDX-License-Identifier: Apache-2.0
// The baseline section of the text summary (run and probes print it before their verdict line):
// the environment changes, one line per result that is not a match (every result when there are
// few), the differing tensors, and the counts with a hint to re-save an explained baseline.
#include "reports/escape.h"
#include "reports/render.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace ra::report {
namespace {

constexpr size_t kListAllUpTo = 12;  // results; beyond that, only the noteworthy ones are listed
constexpr size_t kTensorsShown = 5;

// Every string from the baseline or the report is one line here (reports/escape.h).
using escaped::ln;

std::string short_digest(const std::string& d) { return d.size() > 12 ? d.substr(0, 12) : d; }

std::string side_text(const TensorDigest& t) { return fmt::format("{}[{}]", ln(t.dtype), fmt::join(t.shape, "x")); }

}  // namespace

std::string affects_text(const std::string& affects) {
  if (affects == "any") return "any device";
  return ln(affects);
}

std::string baseline_tensor_text(const BaselineTensor& t) {
  if (!t.current) return fmt::format("{} {}: only in the baseline", ln(t.name), side_text(*t.baseline));
  if (!t.baseline) return fmt::format("{} {}: not in the baseline", ln(t.name), side_text(*t.current));
  if (t.baseline->dtype != t.current->dtype || t.baseline->shape != t.current->shape)
    return fmt::format("{}: {} -> {}", ln(t.name), side_text(*t.baseline), side_text(*t.current));
  std::string out = fmt::format("{} {}: {} -> {}", ln(t.name), side_text(*t.current),
                                ln(short_digest(t.baseline->digest)), ln(short_digest(t.current->digest)));
  if (t.stats) out += "; " + stats_text(*t.stats);
  // Its direction: each side's error against float64, and the class of the change.
  if (t.referee && t.referee->a && t.referee->b)
    out += fmt::format("; vs float64 {:.0f} -> {:.0f} ULP ({})", t.referee->a->max_ulp, t.referee->b->max_ulp,
                       to_string(t.referee->cls));
  return out;
}

std::string direction_summary(const BaselineComparison& b) {
  const auto d = comparison_direction(b);
  return d ? direction_line(*d, side_names(b.stack)) : "";
}

std::string result_direction_text(const BaselineComparison& b, const BaselineResult& res) {
  const auto directed = std::count_if(b.results.begin(), b.results.end(),
                                      [](const BaselineResult& r) { return r.direction.has_value(); });
  return res.direction && directed > 1 ? direction_line(*res.direction, side_names(b.stack)) : "";
}

bool baseline_noteworthy(const BaselineResult& r) {
  if (r.status == BaselineStatus::Match) return false;
  // Skipped or raised alike on both sides (a probe that does not run on this device, an op without
  // a deterministic implementation under det): nothing changed, nothing to say.
  return !(r.status == BaselineStatus::Incomparable && r.baseline_verdict == r.current_verdict);
}

bool baseline_listed(const BaselineComparison& b, const BaselineResult& r) {
  return b.results.size() <= kListAllUpTo || baseline_noteworthy(r);
}

std::string upgrade_text(const BaselineComparison& b) {
  if (std::none_of(b.stack.begin(), b.stack.end(), [](const StackVersion& v) { return v.changed(); })) return "";
  std::vector<std::string> parts;
  for (const auto& v : b.stack)
    parts.push_back(v.changed() ? fmt::format("{} {} -> {}", ln(v.name), ln(v.baseline), ln(v.current))
                                : fmt::format("{} {}", ln(v.name), ln(v.current)));
  return fmt::format("{}", fmt::join(parts, ", "));
}

namespace {

// The leading numbers of a version ("2.15.0+cu130": 2, 15, 0); empty for "(absent)" and the like.
std::vector<long> version_numbers(const std::string& v) {
  std::vector<long> out;
  size_t i = 0;
  while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) {
    long n = 0;
    for (; i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])) && n < 100000000; ++i)
      n = n * 10 + (v[i] - '0');
    out.push_back(n);
    if (i + 1 < v.size() && v[i] == '.' && std::isdigit(static_cast<unsigned char>(v[i + 1])))
      ++i;
    else
      break;
  }
  return out;
}

// +1 when `to` is a later version than `from`, -1 when an earlier one, 0 when neither can be said.
int version_direction(const std::string& from, const std::string& to) {
  std::vector<long> a = version_numbers(from), b = version_numbers(to);
  if (a.empty() || b.empty()) return 0;
  a.resize(std::max(a.size(), b.size())), b.resize(a.size());
  return a < b ? 1 : b < a ? -1 : 0;
}

}  // namespace

std::string upgrade_label(const BaselineComparison& b) {
  bool up = false, down = false, neither = false;
  for (const auto& v : b.stack) {
    if (!v.changed()) continue;
    const int d = version_direction(v.baseline, v.current);
    (d > 0 ? up : d < 0 ? down : neither) = true;
  }
  if (up && !down && !neither) return "upgrade";
  if (down && !up && !neither) return "downgrade";
  return "version change";
}

std::vector<std::string> behaviour_lines(const BaselineComparison& b) {
  const BehaviourChanges c = behaviour_changes(b);
  if (c.empty() && upgrade_text(b).empty()) return {};
  std::vector<std::string> out{
      fmt::format("{} kept their bits, {} changed", plural(c.kept_bits, "result", "results"), c.changed_bits)};
  const auto line = [&out, &c](const char* what, const std::vector<std::string>& names) {
    if (names.empty()) return;
    constexpr size_t kNamed = 8;
    std::vector<std::string> shown;
    for (size_t i = 0; i < names.size() && i < kNamed; ++i) {
      const auto repeats = c.repeats.find(names[i]);
      shown.push_back(ln(names[i]) + (repeats == c.repeats.end() ? "" : " (" + repeats->second + ")"));
    }
    out.push_back(fmt::format("{} ({}): {}{}", what, names.size(), fmt::join(shown, ", "),
                              names.size() > kNamed ? fmt::format(" and {} more", names.size() - kNamed) : ""));
  };
  line("newly divergent", c.newly_divergent);
  line("newly fixed", c.newly_fixed);
  line("no divergence seen, too few repeats to call it fixed", c.not_seen);
  line("newly raising", c.newly_raising);
  line("no longer raising", c.no_longer_raising);
  // Across an upgrade, "nothing changed" is an answer the user asked for, not a silence.
  if (c.empty())
    out.push_back(
        "determinism behaviour unchanged: nothing newly divergent, newly fixed, newly raising or no longer "
        "raising");
  return out;
}

std::string baseline_counts(const BaselineComparison& b) {
  constexpr std::array<BaselineStatus, 7> kOrder = {BaselineStatus::Regression, BaselineStatus::Nondeterministic,
                                                    BaselineStatus::Explained,  BaselineStatus::Incomparable,
                                                    BaselineStatus::Missing,    BaselineStatus::Added,
                                                    BaselineStatus::Match};
  std::vector<std::string> parts;
  for (const auto s : kOrder) {
    size_t n = 0;
    for (const auto& r : b.results) n += r.status == s;
    if (n > 0) parts.push_back(fmt::format("{} {}", n, to_string(s)));
  }
  return parts.empty() ? std::string("nothing compared") : fmt::format("{}", fmt::join(parts, ", "));
}

std::string render_baseline_text(const Report& r) {
  if (!r.baseline) return "";
  const BaselineComparison& b = *r.baseline;
  std::string out = fmt::format("baseline {} ({} written by repro-audit {})\n", ln(b.source),
                                b.schema == "repro-audit/report" ? "a report" : "a baseline", ln(b.tool_version));
  if (b.changes.empty()) {
    out += "  environment: unchanged\n";
  } else {
    out += fmt::format("  environment: {} change{}\n", b.changes.size(), b.changes.size() == 1 ? "" : "s");
    for (const auto& c : b.changes)
      out += fmt::format("    {}: {} -> {} (can affect {})\n", ln(c.key), ln(c.baseline), ln(c.current),
                         affects_text(c.affects));
  }
  if (const std::string up = upgrade_text(b); !up.empty()) out += fmt::format("  {}: {}\n", upgrade_label(b), up);
  for (const auto& line : behaviour_lines(b)) out += fmt::format("  {}\n", line);
  if (const std::string d = direction_summary(b); !d.empty()) out += fmt::format("  {}\n", ln(d));
  if (!b.ignored.empty()) {
    std::vector<std::string> keys;
    for (const auto& c : b.ignored) keys.push_back(ln(c.key));
    out += fmt::format("  ignored, cannot change results: {}\n", fmt::join(keys, ", "));
  }
  for (const auto& m : b.models) out += fmt::format("  model: {}\n", ln(m.reason));
  bool explained = false;
  for (const auto& res : b.results) {
    explained = explained || res.status == BaselineStatus::Explained;
    if (!baseline_listed(b, res)) continue;
    out += fmt::format("  {} / {}: {}", ln(res.target), ln(res.config), to_string(res.status));
    // An invariance match compares classes, not tensors (tensors 0): its reason says which.
    out += res.status == BaselineStatus::Match && res.tensors > 0 ? fmt::format(" ({} tensors)\n", res.tensors)
                                                                  : fmt::format(": {}\n", ln(res.reason));
    for (const auto& c : res.switch_changes)
      out += fmt::format("    switch {}: {} -> {}\n", ln(c.key.substr(c.key.find('.') + 1)), ln(c.baseline),
                         ln(c.current));
    if (const std::string op = changed_op_text(res); !op.empty()) out += fmt::format("    {}\n", op);
    if (const std::string d = result_direction_text(b, res); !d.empty()) out += fmt::format("    {}\n", ln(d));
    const size_t shown = std::min(res.differing_tensors.size(), kTensorsShown);
    for (size_t i = 0; i < shown; ++i) out += fmt::format("    {}\n", baseline_tensor_text(res.differing_tensors[i]));
    if (res.differing > shown) out += fmt::format("    ... and {} more tensors\n", res.differing - shown);
  }
  out += fmt::format("baseline: {}\n", baseline_counts(b));
  if (explained)
    out += fmt::format(
        "  explained: the results changed together with {}, which does not fail the run; if the new "
        "results are the right ones, {}\n",
        explained_cause(b), ln(resave_advice(b).text()));
  return out;
}

}  // namespace ra::report
