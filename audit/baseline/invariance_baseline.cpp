// SPDX-License-Identifier: Apache-2.0
#include "audit/baseline/invariance_baseline.h"

#include "audit/common/device.h"
#include "audit/common/errors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <unordered_map>

namespace ra {
namespace {

using report::BaselineResult;
using report::BaselineStatus;
using report::Invariance;
using report::InvarianceConfig;
using report::SizeClass;

const Invariance& held(const Baseline& base) {
  const auto* inv = std::get_if<Invariance>(&base.results.body);
  if (!inv)
    throw InputError(
        fmt::format("baseline {} holds no invariance audit: save one with invariance --save-baseline", base.path));
  return *inv;
}

void check_configs(const Baseline& base, const std::vector<std::string>& configs) {
  std::vector<std::string> names;
  for (const auto& c : held(base).configs) names.push_back(c.config);
  for (const auto& c : configs)
    if (std::find(names.begin(), names.end(), c) != names.end()) return;
  throw InputError(fmt::format("baseline {} has no configuration of this audit: it holds {}, this audit has {}",
                               base.path, fmt::join(names, ", "), fmt::join(configs, ", ")));
}

// The sizes a side tried: its classes cover them (a baseline file keeps no cells).
std::set<int64_t> tried(const InvarianceConfig& c) {
  std::set<int64_t> s;
  for (const auto& k : c.classes) s.insert(k.sizes.begin(), k.sizes.end());
  return s;
}

// The classes restricted to `common`, ordered by their smallest size.
std::vector<std::vector<int64_t>> restricted(const std::vector<SizeClass>& classes, const std::set<int64_t>& common) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& k : classes) {
    std::vector<int64_t> kept;
    for (const int64_t s : k.sizes)
      if (common.count(s)) kept.push_back(s);
    if (!kept.empty()) out.push_back(std::move(kept));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Where a class other than the reference's begins: each class's smallest size but size 1's.
std::vector<int64_t> boundaries(const std::vector<SizeClass>& classes) {
  std::vector<int64_t> out;
  for (const auto& k : classes)
    if (!k.sizes.empty() && k.sizes.front() != 1) out.push_back(k.sizes.front());
  std::sort(out.begin(), out.end());
  return out;
}

// "output 0" for "output/0", "the output" for a lone "output".
std::string output_label(const std::string& name) {
  if (name == "output") return "the output";
  if (name.rfind("output/", 0) == 0) return "output " + name.substr(7);
  return "output " + name;
}

// One output's change in words, with each side's own boundaries.
std::vector<std::string> boundary_changes(const std::vector<SizeClass>& b, const std::vector<SizeClass>& c,
                                          const std::string& output) {
  const std::vector<int64_t> bb = boundaries(b), cb = boundaries(c);
  const std::string of = output_label(output);
  std::vector<std::string> out;
  for (size_t i = 0; i < std::min(bb.size(), cb.size()); ++i)
    if (bb[i] != cb[i]) out.push_back(fmt::format("class boundary moved: {} -> {} for {}", bb[i], cb[i], of));
  for (size_t i = bb.size(); i < cb.size(); ++i)
    out.push_back(fmt::format("new class boundary at {} for {}", cb[i], of));
  for (size_t i = cb.size(); i < bb.size(); ++i)
    out.push_back(fmt::format("class boundary at {} gone for {}", bb[i], of));
  if (out.empty())
    out.push_back(
        fmt::format("classes changed for {}: {} -> {}", of, report::classes_text(b), report::classes_text(c)));
  return out;
}

// Dependence at a size both tried that one side has and the other has not.
void dependence_changes(const std::vector<int64_t>& b, const std::vector<int64_t>& c, const std::set<int64_t>& common,
                        const char* what, std::vector<std::string>& out) {
  std::vector<int64_t> appeared, gone;
  for (const int64_t s : c)
    if (common.count(s) && std::find(b.begin(), b.end(), s) == b.end()) appeared.push_back(s);
  for (const int64_t s : b)
    if (common.count(s) && std::find(c.begin(), c.end(), s) == c.end()) gone.push_back(s);
  if (!appeared.empty())
    out.push_back(fmt::format("{} dependence appeared at sizes {}", what, fmt::join(appeared, ",")));
  if (!gone.empty()) out.push_back(fmt::format("{} dependence gone at sizes {}", what, fmt::join(gone, ",")));
}

std::vector<std::string> changes(const InvarianceConfig& b, const InvarianceConfig& c) {
  const std::set<int64_t> tb = tried(b), tc = tried(c);
  std::set<int64_t> common;
  std::set_intersection(tb.begin(), tb.end(), tc.begin(), tc.end(), std::inserter(common, common.end()));
  std::vector<std::string> out;
  const auto before = report::output_classes(b);
  std::unordered_map<std::string, const report::OutputClasses*> by_name;  // a report may name 250,000 outputs
  for (const auto& x : before) by_name.emplace(x.output, &x);
  for (const auto& o : report::output_classes(c)) {
    const auto found = by_name.find(o.output);
    if (found == by_name.end()) continue;
    const report::OutputClasses* it = found->second;
    if (restricted(it->classes, common) == restricted(o.classes, common)) continue;
    for (auto& line : boundary_changes(it->classes, o.classes, o.output)) out.push_back(std::move(line));
  }
  if (out.empty() && restricted(b.classes, common) != restricted(c.classes, common))
    out.push_back(
        fmt::format("classes changed: {} -> {}", report::classes_text(b.classes), report::classes_text(c.classes)));
  dependence_changes(b.position_dependent, c.position_dependent, common, "position", out);
  dependence_changes(b.warmup_dependent, c.warmup_dependent, common, "warm-up", out);
  return out;
}

std::optional<report::Verdict> verdict_of(const InvarianceConfig& c) {
  if (c.verdict == "crashed") return report::Verdict::Crashed;
  return c.verdict == "variant" || c.verdict == "nondeterministic" ? report::Verdict::Diverged
                                                                   : report::Verdict::Reproducible;
}

BaselineResult compare_config(const std::string& model, const InvarianceConfig& b, const InvarianceConfig& c,
                              const std::string& env_note) {
  BaselineResult r;
  r.target = model, r.config = c.config;
  r.baseline_verdict = verdict_of(b), r.current_verdict = verdict_of(c);
  if (b.verdict == "crashed" || c.verdict == "crashed") {
    r.status = BaselineStatus::Incomparable;
    r.reason = fmt::format("nothing to compare: the sweep crashed in {}",
                           b.verdict == "crashed" ? "the baseline" : "the current results");
    return r;
  }
  const std::vector<std::string> found = changes(b, c);
  if (found.empty()) {
    r.status = BaselineStatus::Match;
    r.reason = fmt::format("the classes of sizes are the baseline's: {}", report::classes_text(c.classes));
    return r;
  }
  r.status = BaselineStatus::Regression;
  r.reason = fmt::format("{}", fmt::join(found, "; ")) + env_note;
  return r;
}

BaselineResult one_side(const std::string& model, const InvarianceConfig& c, bool in_baseline) {
  BaselineResult r;
  r.target = model, r.config = c.config;
  r.status = in_baseline ? BaselineStatus::Missing : BaselineStatus::Added;
  (in_baseline ? r.baseline_verdict : r.current_verdict) = verdict_of(c);
  r.reason = in_baseline ? "in the baseline only" : "not in the baseline";
  return r;
}

// The same experiment: device, anchors, filler and inputs (the model is the one file audited).
void check_same(const Baseline& base, const Invariance& c) {
  const Invariance& b = held(base);
  std::vector<std::string> names;
  for (const auto& k : c.configs) names.push_back(k.config);
  check_invariance_plan(base, Device::of(c.device), c.rows, c.filler, c.axis, names);  // the report's text, read back
  if (!b.inputs.empty() && !c.inputs.empty() && b.inputs != c.inputs)
    throw InputError(fmt::format("baseline {} was made with inputs {}, not {}", base.path, fmt::join(b.inputs, ", "),
                                 fmt::join(c.inputs, ", ")));
}

std::string environment_note(const EnvironmentDiff& env, const std::string& device) {
  std::vector<std::string> keys;
  for (const auto& ch : env.changes)
    if (affects_device(ch.affects, device)) keys.push_back(fmt::format("{} {} -> {}", ch.key, ch.baseline, ch.current));
  if (keys.empty()) return "";
  return fmt::format(" (the environment changed too: {}; re-save the baseline to accept the new classes)",
                     fmt::join(keys, ", "));
}

}  // namespace

void check_invariance_plan(const Baseline& base, const Device& device, int rows, const std::string& filler,
                           const std::string& axis, const std::vector<std::string>& configs) {
  const Invariance& b = held(base);
  if (Device::canonical(b.device) != Device::canonical(device.to_string()))
    throw InputError(fmt::format("baseline {} was made on {}, not on {}", base.path, b.device, device.to_string()));
  if (b.rows != rows)
    throw InputError(fmt::format("baseline {} was made with {} anchor rows, not {}", base.path, b.rows, rows));
  if (b.filler != filler)
    throw InputError(fmt::format("baseline {} was made with filler {}, not {}", base.path, b.filler, filler));
  if (b.axis != axis)
    throw InputError(fmt::format("baseline {} was made on the {} axis, not on the {} axis", base.path, b.axis, axis));
  check_configs(base, configs);
}

void apply_invariance_baseline(report::Report& current, const Invariance& c, const Baseline& base) {
  check_same(base, c);
  const Invariance& b = held(base);
  const EnvironmentDiff env = diff_environments(base.results.environment, current.environment);
  report::BaselineComparison cmp;
  cmp.source = base.path, cmp.schema = base.schema, cmp.tool_version = base.results.tool_version;
  cmp.changes = env.changes, cmp.ignored = env.ignored;
  const std::string model = std::filesystem::path(c.model).filename().string();
  const std::string note = environment_note(env, c.device);
  for (const auto& k : c.configs) {
    const auto it =
        std::find_if(b.configs.begin(), b.configs.end(), [&](const auto& x) { return x.config == k.config; });
    cmp.results.push_back(it == b.configs.end() ? one_side(model, k, false) : compare_config(model, *it, k, note));
  }
  for (const auto& k : b.configs)
    if (std::none_of(c.configs.begin(), c.configs.end(), [&](const auto& x) { return x.config == k.config; }))
      cmp.results.push_back(one_side(model, k, true));
  current.baseline = std::move(cmp);
  report::finalize(current);
}

}  // namespace ra
