// SPDX-License-Identifier: Apache-2.0
#include "audit/baseline/baseline.h"

#include "audit/common/device.h"

#include "audit/baseline/identity.h"
#include "audit/baseline/invariance_baseline.h"
#include "audit/baseline/upgrade_direction.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/common/json_document.h"
#include "audit/common/log.h"
#include "audit/common/owned_folder.h"
#include "audit/trial/config.h"
#include "reports/baseline_file.h"
#include "reports/json_read.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace ra {
namespace {

using json = nlohmann::ordered_json;
using report::BaselineStatus;
using report::EnvironmentChange;

constexpr const char* kAbsent = "(absent)";

// "(unset)" for null, strings as they are, anything else as JSON.
std::string value_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "(unset)";
  return v.dump();
}

// Leaf keys in document order; arrays of objects by index ("cuda.devices[0].name"), other arrays
// as one value; an empty array gives no key (its absence shows in the other side's keys).
void flatten(const json& j, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
  if (!j.is_object()) return;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object()) {
      flatten(*it, key, out);
    } else if (it->is_array() && !it->empty() && it->front().is_object()) {
      for (size_t i = 0; i < it->size(); ++i) flatten((*it)[i], fmt::format("{}[{}]", key, i), out);
    } else if (!(it->is_array() && it->empty())) {
      out.emplace_back(key, value_text(*it));
    }
  }
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

std::string short_digest(const std::string& d) { return d.size() > 12 ? d.substr(0, 12) + "..." : d; }

std::string describe_target(const Side& s) { return fmt::format("{} {}", s.noun, s.target->name); }

// "model a.pt", "probes a, b, c and 4 more".
std::string describe_targets(const std::vector<Side>& ts) {
  if (ts.empty()) return "no target";
  if (ts.size() == 1) return describe_target(ts.front());
  std::vector<std::string> names;
  for (size_t i = 0; i < ts.size() && i < 3; ++i) names.push_back(ts[i].target->name);
  const std::string more = ts.size() > 3 ? fmt::format(" and {} more", ts.size() - 3) : "";
  return fmt::format("{}s {}{}", ts.front().noun, fmt::join(names, ", "), more);
}

std::string optimizer_text(const report::RunFacts& f) { return fmt::format("{} (lr {:g})", f.optimizer, f.lr); }

std::string inputs_text(const std::vector<std::string>& inputs) {
  return inputs.empty() ? std::string("no inputs") : fmt::format("{}", fmt::join(inputs, ", "));
}

// What makes `b` (the baseline's) and `c` (the current) different experiments, as the end of the
// sentence "baseline X was made ...", or "" when they are the same.
std::string identity_mismatch(const Side& bs, const Side& cs) {
  const report::Target& b = *bs.target;
  const report::Target& c = *cs.target;
  // Reports written before targets carried digests have none: then only the rest is checked.
  const bool digests = !b.model_digest.empty() && !c.model_digest.empty();
  const ModelSameness same = model_sameness(b, c);
  if (same == ModelSameness::OtherGraph) {
    const std::string graphs =
        fmt::format("graph {}; this one's is {}", short_digest(b.graph_digest), short_digest(c.graph_digest));
    if (b.name == c.name)
      return fmt::format("from another version of {}, which computes another graph ({})", describe_target(bs), graphs);
    return fmt::format("from {}, which computes another graph than {} ({})", describe_target(bs), c.name, graphs);
  }
  if (same == ModelSameness::OtherBytes) {
    // A side without identities by content (a file written before them) is matched by its bytes.
    const std::string older =
        b.weights_digest.empty() && !c.weights_digest.empty()
            ? ": this baseline predates identities by content, so it matches by the file's bytes; "
              "save it again to match a re-saved model by its graph and weights"
            : "";
    if (b.name == c.name)
      return fmt::format("from another version of {} (digest {}; this one's is {}){}", describe_target(bs),
                         short_digest(b.model_digest), short_digest(c.model_digest), older);
    return fmt::format("from {} (digest {}), not {} (digest {}){}", describe_target(bs), short_digest(b.model_digest),
                       c.name, short_digest(c.model_digest), older);
  }
  const std::string of = fmt::format("for {}", c.name);
  if (Device::canonical(b.device) != Device::canonical(c.device))
    return fmt::format("{} on {}, not on {}", of, b.device, c.device);
  if (b.mode != c.mode) return fmt::format("{} in {} mode, not {} mode", of, b.mode, c.mode);
  if (bs.run && cs.run) {  // models: how they train
    const report::RunFacts &bf = *bs.run, &cf = *cs.run;
    if (bf.steps != cf.steps) return fmt::format("{} with {} train steps, not {}", of, bf.steps, cf.steps);
    if (bf.optimizer != cf.optimizer || bf.lr != cf.lr)
      return fmt::format("{} with optimizer {}, not {}", of, optimizer_text(bf), optimizer_text(cf));
  }
  if (b.seed != c.seed) return fmt::format("{} with seed {}, not {}", of, b.seed, c.seed);
  if (b.inputs != c.inputs)
    return fmt::format("{} with inputs {}, not {}", of, inputs_text(b.inputs), inputs_text(c.inputs));
  if (digests && b.input_digest != c.input_digest) {
    if (b.input_digest.empty()) return fmt::format("{} with synthetic inputs, not an input file", of);
    if (c.input_digest.empty())
      return fmt::format("{} with an input file (digest {}), not synthetic inputs", of, short_digest(b.input_digest));
    return fmt::format("{} with another input file (digest {}; this one's is {})", of, short_digest(b.input_digest),
                       short_digest(c.input_digest));
  }
  return "";
}

// What the comparison says of a model matched by its content rather than its bytes.
std::optional<report::ModelChange> model_change(const Side& bs, const Side& cs) {
  const report::Target& b = *bs.target;
  const report::Target& c = *cs.target;
  switch (model_sameness(b, c)) {
    case ModelSameness::Resaved:
      return report::ModelChange{
          c.name, "resaved",
          fmt::format("{} was saved or exported again: its file's bytes differ (digest {}; the baseline's is {}), "
                      "its graph and weights do not",
                      describe_target(cs), short_digest(c.model_digest), short_digest(b.model_digest))};
    case ModelSameness::OtherWeights:
      return report::ModelChange{
          c.name, "other_weights",
          fmt::format("{}: same graph, other weights (weights {}; the baseline's are {}), so its "
                      "results are expected to differ and the weights explain it",
                      describe_target(cs), short_digest(c.weights_digest), short_digest(b.weights_digest))};
    default:
      return std::nullopt;
  }
}

const report::ConfigResult* find_config(const report::Target& t, const std::string& name) {
  for (const auto& c : t.configs)
    if (c.name == name) return &c;
  return nullptr;
}

const char* side_name(bool baseline) { return baseline ? "the baseline" : "the current results"; }

std::vector<EnvironmentChange> switch_changes(const report::ConfigResult& b, const report::ConfigResult& c) {
  std::vector<EnvironmentChange> out;
  std::set<std::string> seen;
  for (const auto& s : c.switches) {
    seen.insert(s.key);
    std::string before = kAbsent;
    for (const auto& bs : b.switches)
      if (bs.key == s.key) before = bs.effective;
    if (before != s.effective) out.push_back({"config." + s.key, before, s.effective, switch_affects(s.key)});
  }
  for (const auto& bs : b.switches)
    if (!seen.count(bs.key)) out.push_back({"config." + bs.key, bs.effective, kAbsent, switch_affects(bs.key)});
  return out;
}

// How far each listed tensor moved, where both sides kept their reference tensors and the dtype and
// shape agree (a tensor on one side only, or reshaped, has no distance).
void measure_tensors(const report::ConfigResult& b, const report::ConfigResult& c, report::BaselineResult& r,
                     const DiffFn& diff) {
  if (!diff || b.reference_tensors.empty() || c.reference_tensors.empty()) return;
  std::vector<std::string> names;
  for (const auto& t : r.differing_tensors)
    if (t.baseline && t.current && t.baseline->dtype == t.current->dtype && t.baseline->shape == t.current->shape)
      names.push_back(t.name);
  if (names.empty()) return;
  const std::map<std::string, report::DivergenceStats> stats = diff(b.reference_tensors, c.reference_tensors, names);
  for (auto& t : r.differing_tensors)
    if (const auto it = stats.find(t.name); it != stats.end()) t.stats = it->second;
}

// Every tensor that differs in digest, dtype or shape, or is on one side only: the current
// reference's order, then tensors only in the baseline in its order; fills tensors and differing.
std::vector<report::BaselineTensor> diff_tensors(const report::ConfigResult& b, const report::ConfigResult& c,
                                                 report::BaselineResult& r) {
  std::map<std::string, const report::TensorDigest*> before;
  for (const auto& t : b.reference) before.emplace(t.name, &t);
  std::set<std::string> seen;
  std::vector<report::BaselineTensor> out;
  for (const auto& t : c.reference) {
    if (!seen.insert(t.name).second) continue;
    const auto it = before.find(t.name);
    if (it == before.end()) {
      out.push_back({t.name, std::nullopt, t});
      continue;
    }
    const report::TensorDigest& o = *it->second;
    if (o.digest != t.digest || o.dtype != t.dtype || o.shape != t.shape) out.push_back({t.name, o, t});
  }
  for (const auto& t : b.reference)
    if (seen.insert(t.name).second) out.push_back({t.name, t, std::nullopt});
  r.tensors = seen.size();
  r.differing = out.size();
  return out;
}

std::string keys_text(const std::vector<const EnvironmentChange*>& changes) {
  std::vector<std::string> parts;
  for (const auto* c : changes) parts.push_back(fmt::format("{} {} -> {}", c->key, c->baseline, c->current));
  return fmt::format("{}", fmt::join(parts, ", "));
}

report::BaselineResult compare_config(const report::Target& held, const report::Target& target,
                                      const report::ConfigResult& b, const report::ConfigResult& c,
                                      const std::vector<EnvironmentChange>& env, const report::SideNames& names,
                                      const DiffFn& diff) {
  report::BaselineResult r;
  r.target = target.name;
  r.config = c.name;
  r.baseline_verdict = b.verdict;
  r.current_verdict = c.verdict;
  r.baseline_repeats = report::RepeatEvidence{b.completed, b.diverging_repeats, b.rate_ci_low, b.rate_ci_high};
  r.current_repeats = report::RepeatEvidence{c.completed, c.diverging_repeats, c.rate_ci_low, c.rate_ci_high};
  r.switch_changes = switch_changes(b, c);
  if (b.reference.empty() || c.reference.empty()) {
    const bool in_baseline = b.reference.empty();
    const report::ConfigResult& empty = in_baseline ? b : c;
    r.status = BaselineStatus::Incomparable;
    r.reason = fmt::format("nothing to compare: no repeat completed in {} ({})", side_name(in_baseline),
                           to_string(empty.verdict));
    return r;
  }
  std::vector<report::BaselineTensor> changed = diff_tensors(b, c, r);
  // None where nothing the model computed changed (only its own state: weights its outputs ignore).
  if (auto d = upgrade_direction(held, b, target, c, names, changed); d.classed() > 0 || !d.note.empty())
    r.direction = std::move(d);
  if (changed.size() > report::kBaselineTensorsListed) changed.resize(report::kBaselineTensorsListed);
  r.differing_tensors = std::move(changed);
  measure_tensors(b, c, r, diff);
  if (r.differing == 0) {
    r.status = BaselineStatus::Match;
    r.reason = fmt::format("all {} tensors match", r.tensors);
    return r;
  }
  const std::string what = fmt::format("{} of {} tensors differ", r.differing, r.tensors);
  const bool b_diverged = b.verdict == report::Verdict::Diverged, c_diverged = c.verdict == report::Verdict::Diverged;
  if (b_diverged || c_diverged) {
    r.status = BaselineStatus::Nondeterministic;
    r.reason = fmt::format("{}, but the configuration diverged within {}, so the difference cannot be attributed", what,
                           b_diverged && c_diverged ? "both" : side_name(b_diverged));
    return r;
  }
  std::vector<const EnvironmentChange*> relevant, irrelevant;
  for (const std::vector<EnvironmentChange>* list : {&env, &std::as_const(r.switch_changes)})
    for (const auto& ch : *list) (affects_device(ch.affects, target.device) ? relevant : irrelevant).push_back(&ch);
  if (!relevant.empty()) {
    r.status = BaselineStatus::Explained;
    for (const auto* ch : relevant) r.explained_by.push_back(ch->key);
    r.reason = fmt::format("{}; explained by changes that can affect {}: {}", what, Device::canonical(target.device),
                           keys_text(relevant));
    return r;
  }
  r.status = BaselineStatus::Regression;
  r.reason = fmt::format("{} and nothing that can affect {} changed", what, Device::canonical(target.device));
  if (!irrelevant.empty())
    r.reason +=
        fmt::format(" (changed, but cannot affect {}: {})", Device::canonical(target.device), keys_text(irrelevant));
  return r;
}

report::BaselineResult one_side(const std::string& target, const report::ConfigResult& c, bool in_baseline) {
  report::BaselineResult r;
  r.target = target;
  r.config = c.name;
  r.status = in_baseline ? BaselineStatus::Missing : BaselineStatus::Added;
  (in_baseline ? r.baseline_verdict : r.current_verdict) = c.verdict;
  r.reason = in_baseline ? "in the baseline only" : "not in the baseline";
  return r;
}

// The value at `path` ("cuda.cudnn") as text, or "" where the fingerprint has none or says it
// does not know ("unknown", "not loaded").
std::string fingerprint_value(const json& env, const std::string& path) {
  const json* at = &env;
  for (size_t from = 0; from <= path.size();) {
    const size_t dot = std::min(path.find('.', from), path.size());
    const std::string key = path.substr(from, dot - from);
    if (!at->is_object() || !at->contains(key)) return "";
    at = &(*at)[key];
    from = dot + 1;
  }
  const std::string v = value_text(*at);
  return v == "unknown" || v == "not loaded" || v == "(unset)" ? "" : v;
}

// The version of the first nvidia-* wheel whose name starts with `prefix` ("nvidia-nccl").
std::string wheel_version(const json& env, const std::string& prefix) {
  const json* wheels = env.contains("cuda") && env["cuda"].contains("wheels") ? &env["cuda"]["wheels"] : nullptr;
  if (wheels == nullptr || !wheels->is_object()) return "";
  for (auto it = wheels->begin(); it != wheels->end(); ++it)
    if (starts_with(it.key(), prefix) && it->is_string()) return it->get<std::string>();
  return "";
}

// torch, CUDA, cuDNN, cuBLAS and NCCL as one fingerprint names them: torch's version; the CUDA
// torch was built for; the cuDNN loaded (else the one compiled in); cuBLAS and NCCL from their
// wheels (a patch level: "13.1.0.3"), else cuBLASLt's own version. "(absent)" where none is named.
std::vector<std::pair<std::string, std::string>> stack_of(const json& env) {
  const auto or_absent = [](std::string v) { return v.empty() ? std::string(kAbsent) : v; };
  std::string cudnn = fingerprint_value(env, "cuda.cudnn");
  if (cudnn.empty()) cudnn = fingerprint_value(env, "cuda.compiled_cudnn");
  std::string cublas = wheel_version(env, "nvidia-cublas");
  if (cublas.empty()) cublas = fingerprint_value(env, "cuda.cublas");
  return {{"torch", or_absent(fingerprint_value(env, "torch.version"))},
          {"CUDA", or_absent(fingerprint_value(env, "cuda.compiled_cuda"))},
          {"cuDNN", or_absent(cudnn)},
          {"cuBLAS", or_absent(cublas)},
          {"NCCL", or_absent(wheel_version(env, "nvidia-nccl"))}};
}

}  // namespace

std::vector<report::StackVersion> stack_versions(const json& baseline, const json& current) {
  const auto before = stack_of(baseline), after = stack_of(current);
  std::vector<report::StackVersion> out;
  for (size_t i = 0; i < before.size(); ++i) out.push_back({before[i].first, before[i].second, after[i].second});
  return out;
}

Baseline parse_baseline(const std::string& text, const std::string& path, const std::string& what) {
  json j;
  try {
    j = parse_json_document<json>(text, fmt::format("{} {}", what, path));
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number too large
    std::string why = e.what();         // "[json.exception.parse_error.101] parse error at line 1, ..."
    if (const auto end = why.find("] "); starts_with(why, "[json.exception") && end != std::string::npos)
      why = why.substr(end + 2);
    throw InputError(fmt::format("{} {} is not valid JSON: {}", what, path, why));
  }
  Baseline b;
  b.path = path;
  try {
    b.results = report::results_from_json(j, b.schema);
  } catch (const report::ReportError& e) {
    throw InputError(fmt::format("{} {}: {}", what, path, e.what()));
  }
  return b;
}

bool has_kept_tensors(const report::Report& r) {
  for (const auto& t : r.targets())
    for (const auto& c : t.configs)
      if (!c.reference_tensors.empty()) return true;
  return false;
}

Baseline load_baseline(const std::string& path, const std::string& what) {
  Baseline b = parse_baseline(read_file(path, what), path, what);
  // Kept tensors lie beside the file. A folder that is gone costs only the distances: the changed
  // tensors are still named. So does a kept file, or its folder, that is a symlink: not followed
  // (audit/common/owned_folder.h), as exec reads no artifact through one.
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  bool missing = false;
  for (auto& t : b.results.targets())
    for (auto& c : t.configs) {
      if (c.reference_tensors.empty()) continue;
      c.reference_tensors = (dir / c.reference_tensors).string();
      const std::string problem = kept_file_problem(c.reference_tensors);
      if (problem.empty()) continue;
      if (!missing)
        log::warn("{} {}: its kept tensor file {} {}: changed tensors are named, not measured", what, path,
                  c.reference_tensors, problem);
      missing = true;
      c.reference_tensors.clear();
    }
  return b;
}

std::vector<Side> sides(const report::Body& body) {
  std::vector<Side> out;
  const std::string_view noun = report::kind_of(body).target;
  std::visit(report::overloaded{[&](const report::RunBody& b) {
                                  for (const auto& t : b.targets) out.push_back({&t.common, &t.facts, noun});
                                },
                                [&](const report::ExecBody& b) {
                                  for (const auto& t : b.targets) out.push_back({&t.common, nullptr, noun});
                                },
                                [&](const report::ProbesBody& b) {
                                  for (const auto& t : b.targets) out.push_back({&t.common, nullptr, noun});
                                },
                                [](const report::Invariance&) {}, [](const report::SelfTest&) {}},
             body);
  return out;
}

std::vector<int> pair_targets(const std::vector<Side>& baseline, const std::vector<Side>& current) {
  std::vector<int> pair(current.size(), -1);
  std::vector<bool> used(baseline.size(), false);
  for (size_t i = 0; i < current.size(); ++i)
    for (size_t k = 0; k < baseline.size(); ++k)
      if (!used[k] && baseline[k].noun == current[i].noun && baseline[k].target->name == current[i].target->name) {
        pair[i] = int(k);
        used[k] = true;
        break;
      }
  // A renamed model file: one unpaired model on each side.
  std::vector<size_t> lone_current, lone_baseline;
  for (size_t i = 0; i < current.size(); ++i)
    if (pair[i] < 0 && current[i].run) lone_current.push_back(i);
  for (size_t k = 0; k < baseline.size(); ++k)
    if (!used[k] && baseline[k].run) lone_baseline.push_back(k);
  if (lone_current.size() == 1 && lone_baseline.size() == 1) pair[lone_current.front()] = int(lone_baseline.front());
  return pair;
}

void check_baseline_targets(const Baseline& base, const report::Body& body, const std::vector<std::string>& configs) {
  const std::vector<Side> held = sides(base.results.body), targets = sides(body);
  // Two reports without targets (self-tests) compare by their environments alone.
  if (held.empty() && targets.empty()) return;
  const std::vector<int> pair = pair_targets(held, targets);
  if (std::all_of(pair.begin(), pair.end(), [](int k) { return k < 0; }))
    throw InputError(fmt::format("baseline {} has no target of this run: it holds {}, this run has {}", base.path,
                                 describe_targets(held), describe_targets(targets)));
  for (size_t i = 0; i < targets.size(); ++i) {
    if (pair[i] < 0) continue;
    const std::string mismatch = identity_mismatch(held[size_t(pair[i])], targets[i]);
    if (!mismatch.empty()) throw InputError(fmt::format("baseline {} was made {}", base.path, mismatch));
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < targets.size(); ++i)
    if (pair[i] >= 0)
      for (const auto& c : held[size_t(pair[i])].target->configs)
        if (std::find(names.begin(), names.end(), c.name) == names.end()) names.push_back(c.name);
  for (const auto& c : configs)
    if (std::find(names.begin(), names.end(), c) != names.end()) return;
  throw InputError(fmt::format("baseline {} has no configuration of this run: it holds {}, this run has {}", base.path,
                               names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", ")),
                               fmt::join(configs, ", ")));
}

std::string key_affects(const std::string& key) {
  static const std::map<std::string, std::string> kKeys = {
      {"tool.version", "any"},
      {"tool.share_dir", ""},
      {"torch.version", "any"},
      {"torch.git_version", "any"},
      {"torch.library_dir", ""},
      {"torch.cuda_compiled", "any"},
      {"cuda.available", "cuda"},
      {"cuda.compiled_cuda", "cuda"},
      {"cuda.compiled_cudnn", "cuda"},
      {"cuda.runtime", "cuda"},
      {"cuda.driver", "cuda"},
      {"cuda.cudnn", "cuda"},
      {"cuda.cublas", "cuda"},
      {"cuda.reason", ""},
      {"cpu.model", "cpu"},
      {"cpu.logical_cpus", "cpu"},
      {"cpu.aten_capability", "any"},
      {"cpu.machine", "any"},
      {"cpu.kernel", ""},
      {"threads.intra_op", ""},
      {"threads.inter_op", "cpu"},
      {"threads.openmp", "cpu"},
      {"threads.mkl", "cpu"},
      {"threads.mkldnn", "cpu"},
      {"env_vars.CUBLAS_WORKSPACE_CONFIG", "cuda"},
      {"env_vars.MKL_CBWR", "cpu"},
      {"env_vars.OMP_NUM_THREADS", "cpu"},
      {"env_vars.MKL_NUM_THREADS", "cpu"},
      {"env_vars.CUDA_VISIBLE_DEVICES", "cuda"},
      {"env_vars.CUDA_LAUNCH_BLOCKING", "cuda"},
      {"env_vars.CUDNN_LOGINFO_DBG", ""},
      {"env_vars.NVIDIA_TF32_OVERRIDE", "cuda"},
      {"env_vars.TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "cuda"},
      {"env_vars.ATEN_CPU_CAPABILITY", "any"},
      {"env_vars.PYTORCH_CUDA_ALLOC_CONF", "cuda"},
      {"env_vars.KMP_DETERMINISTIC_REDUCTION", "cpu"},
  };
  if (const auto it = kKeys.find(key); it != kKeys.end()) return it->second;
  // Compared per configuration, as its effective switches.
  if (starts_with(key, "switches.")) return "";
  // The nvidia-* wheels beside torch (cuBLAS, cuDNN, NCCL, the CUDA runtime): GPU kernels only.
  if (starts_with(key, "cuda.wheels.")) return "cuda";
  // cuda.devices[N].field: that device's SKU, SM count, compute capability, memory.
  if (starts_with(key, "cuda.devices[")) {
    const size_t close = key.find(']');
    const std::string index = close == std::string::npos ? "" : key.substr(13, close - 13);
    const std::string field = close == std::string::npos ? "" : key.substr(close + 1);
    if (field == ".uuid" || field == ".index") return "";
    if (!index.empty() && index.find_first_not_of("0123456789") == std::string::npos) return "cuda:" + index;
    return "cuda";
  }
  return "any";  // unknown: it may change anything
}

std::string switch_affects(const std::string& key) {
  const SwitchInfo* s = find_switch(key);
  if (s == nullptr) return "any";  // a switch this version does not know (an older report's)
  return s->affects == Affects::Cuda ? "cuda" : s->affects == Affects::Cpu ? "cpu" : "any";
}

bool affects_device(const std::string& affects, const std::string& device) {
  if (affects == "any") return true;
  const std::string d = Device::canonical(device);
  if (d == "cpu") return affects == "cpu";
  return affects == "cuda" || affects == d;
}

EnvironmentDiff diff_environments(const json& baseline, const json& current) {
  std::vector<std::pair<std::string, std::string>> before, after;
  flatten(baseline, "", before);
  flatten(current, "", after);
  std::map<std::string, std::string> old(before.begin(), before.end());
  std::set<std::string> seen;
  EnvironmentDiff d;
  const auto add = [&d](const std::string& key, const std::string& b, const std::string& c) {
    const std::string affects = key_affects(key);
    // The installation's folders, which a path-free baseline leaves out: missing there is no change.
    if ((key == "tool.share_dir" || key == "torch.library_dir") && (b == kAbsent || c == kAbsent)) return;
    (affects.empty() ? d.ignored : d.changes).push_back({key, b, c, affects});
  };
  for (const auto& [key, value] : after) {
    seen.insert(key);
    const auto it = old.find(key);
    const std::string b = it == old.end() ? kAbsent : it->second;
    if (b != value) add(key, b, value);
  }
  for (const auto& [key, value] : before)
    if (!seen.count(key)) add(key, value, kAbsent);
  return d;
}

namespace {

// run, exec, probes (and two self-tests, which have no targets and compare by their environments):
// each target's configurations against the baseline's.
void apply_targets_baseline(report::Report& current, const Baseline& base, const DiffFn& diff) {
  if (std::holds_alternative<report::Invariance>(base.results.body))
    throw InputError(fmt::format("baseline {} holds an invariance audit; this report is not one", base.path));
  const std::vector<Side> targets = sides(current.body);
  std::vector<std::string> configs;
  for (const auto& t : targets)
    for (const auto& c : t.target->configs)
      if (std::find(configs.begin(), configs.end(), c.name) == configs.end()) configs.push_back(c.name);
  check_baseline_targets(base, current.body, configs);

  const std::vector<Side> held = sides(base.results.body);
  const EnvironmentDiff env = diff_environments(base.results.environment, current.environment);
  report::BaselineComparison cmp;
  cmp.source = base.path;
  cmp.schema = base.schema;
  cmp.tool_version = base.results.tool_version;
  cmp.changes = env.changes;
  cmp.ignored = env.ignored;
  cmp.stack = stack_versions(base.results.environment, current.environment);
  const report::SideNames names = report::side_names(cmp.stack);
  const std::vector<int> pair = pair_targets(held, targets);
  std::vector<bool> used(held.size(), false);
  for (size_t i = 0; i < targets.size(); ++i) {
    const report::Target& t = *targets[i].target;
    if (pair[i] < 0) {
      for (const auto& c : t.configs) cmp.results.push_back(one_side(t.name, c, false));
      continue;
    }
    const report::Target& b = *held[size_t(pair[i])].target;
    used[size_t(pair[i])] = true;
    // Other weights under the same graph explain any difference of this target's results.
    std::vector<EnvironmentChange> changes = env.changes;
    if (const auto model = model_change(held[size_t(pair[i])], targets[i])) {
      if (model->relation == "other_weights")
        changes.push_back({"model.weights", short_digest(b.weights_digest), short_digest(t.weights_digest), "any"});
      cmp.models.push_back(*model);
    }
    for (const auto& c : t.configs) {
      const report::ConfigResult* bc = find_config(b, c.name);
      cmp.results.push_back(bc ? compare_config(b, t, *bc, c, changes, names, diff) : one_side(t.name, c, false));
    }
    for (const auto& bc : b.configs)
      if (!find_config(t, bc.name)) cmp.results.push_back(one_side(t.name, bc, true));
  }
  for (size_t k = 0; k < held.size(); ++k)
    if (!used[k])
      for (const auto& bc : held[k].target->configs) cmp.results.push_back(one_side(held[k].target->name, bc, true));
  current.baseline = std::move(cmp);
  report::finalize(current);
}

}  // namespace

void apply_baseline(report::Report& current, const Baseline& base, const DiffFn& diff) {
  std::visit(report::overloaded{[&](const report::RunBody&) { apply_targets_baseline(current, base, diff); },
                                [&](const report::ExecBody&) { apply_targets_baseline(current, base, diff); },
                                [&](const report::ProbesBody&) { apply_targets_baseline(current, base, diff); },
                                // An invariance report has no targets: its classes of sizes are compared.
                                [&](const report::Invariance& inv) { apply_invariance_baseline(current, inv, base); },
                                [&](const report::SelfTest&) { apply_targets_baseline(current, base, diff); }},
             current.body);
}

}  // namespace ra
