// SPDX-License-Identifier: Apache-2.0
#include "audit/trial/referee.h"

#include "audit/common/errors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace ra {
namespace {

using report::Classified;
using report::DifferenceClass;
using report::ReferenceError;

using report::ulp_figure;

const ReferenceError* error_named(const std::vector<ReferenceError>& errors, const std::string& name) {
  for (const auto& e : errors)
    if (e.name == name) return &e;
  return nullptr;
}

Classified unclassified(std::string why) {
  Classified c;
  c.cls = DifferenceClass::Unclassified;
  c.why = std::move(why);
  return c;
}

// The one thing that keeps a measured error from a class, or "".
std::string unusable(const ReferenceError& e, const std::string& run) {
  if (!e.note.empty()) return fmt::format("{}: {}", run, e.note);
  if (e.nan_reference > 0) return "NaN in the reference";
  if (e.nan_result > 0) return fmt::format("NaN in {}", run);
  if (e.nonfinite > 0)
    return fmt::format("{} has {} infinit{} where the reference differs", run, e.nonfinite,
                       e.nonfinite == 1 ? "y" : "ies");
  if (!std::isfinite(e.max_ulp)) return fmt::format("{} has no element finite in both it and the reference", run);
  return "";
}

void summarise(report::ConfigResult& c) {
  std::vector<std::pair<std::string, Classified>> classes;
  for (const auto& f : c.diverged_tensors)
    if (f.referee) classes.emplace_back(f.name, *f.referee);
  c.referee->summary = report::summarise_classes(classes);
}

}  // namespace

const char* to_string(RefereeMode m) {
  switch (m) {
    case RefereeMode::Cpu:
      return "cpu";
    case RefereeMode::Device:
      return "device";
    case RefereeMode::Off:
      return "off";
  }
  return "off";
}

RefereeMode parse_referee_mode(const std::string& s) {
  for (const RefereeMode m : {RefereeMode::Cpu, RefereeMode::Device, RefereeMode::Off})
    if (s == to_string(m)) return m;
  throw UsageError(fmt::format("--referee '{}': use cpu, device or off", excerpt(s)));
}

Config referee_config(const Device& where) {
  Config c{"referee", {{"deterministic", "warn"}}};
  if (!where.is_cuda())
    c.values["threads"] = "1";
  else
    c.values["cublas_workspace"] = ":4096:8";
  return c;
}

report::Referee referee_refused(RefereeMode mode, const Device& where, const std::string& why) {
  return {to_string(mode), where.to_string(), false, why};
}

report::Referee referee_outcome(RefereeMode mode, const Device& where, const report::Trial& summary,
                                const std::optional<TrialResult>& result) {
  report::Referee r{to_string(mode), where.to_string(), false, ""};
  if (summary.status == report::TrialStatus::Ok && result && result->dump_error.empty()) {
    r.ran = true;
    return r;
  }
  std::string message = excerpt(summary.message, 300);  // one line: a raised message may hold several
  std::replace(message.begin(), message.end(), '\n', ' ');
  if (summary.status == report::TrialStatus::Ok && result)
    r.note = fmt::format("its tensors could not be written ({})", result->dump_error);
  else if (result && result->error_kind == "precision")
    r.note = message;  // "not float64 throughout: ..."
  else if (summary.message.find("for 'Double'") != std::string::npos ||
           summary.message.find("for 'ComplexDouble'") != std::string::npos)
    r.note = fmt::format("an op has no float64 kernel: {}", message);
  else if (summary.status == report::TrialStatus::Crashed || summary.status == report::TrialStatus::Timeout)
    r.note = fmt::format("its float64 run {}: {}",
                         summary.status == report::TrialStatus::Timeout ? "timed out" : "did not finish", message);
  else
    r.note = fmt::format("its float64 run raised: {}", message);
  return r;
}

Classified classify_difference(const report::TensorFinding& f, const report::Referee& referee, const std::string& a_run,
                               const ReferenceError* a, const std::string& b_run, const ReferenceError* b) {
  if (!referee.ran) return unclassified(fmt::format("no float64 referee: {}", referee.note));
  if (report::significand_bits(f.dtype) == 0)
    return unclassified(fmt::format("{} is not floating: compared bit for bit only, without error figures", f.dtype));
  if (a == nullptr || b == nullptr)
    return unclassified(fmt::format("{} has no error against the referee", a == nullptr ? a_run : b_run));
  Classified c;
  c.a_run = a_run;
  c.b_run = b_run;
  c.a = *a;
  c.b = *b;
  c.cls = DifferenceClass::Unclassified;
  if (std::string why = unusable(*a, a_run); !why.empty()) {
    c.why = std::move(why);
    return c;
  }
  if (std::string why = unusable(*b, b_run); !why.empty()) {
    c.why = std::move(why);
    return c;
  }
  const double ea = a->max_ulp, eb = b->max_ulp;
  const double low = std::min(ea, eb), high = std::max(ea, eb);
  const double bound = std::max(kFloorUlp, kFactor * low);
  const std::string own = report::referee_bound_text(f.dtype, high);
  if (high <= bound) {
    c.cls = DifferenceClass::Reordering;
    c.why = fmt::format("both within {} and {} ULP of float64; neither is more right ({})", ulp_figure(ea),
                        ulp_figure(eb), own);
    return c;
  }
  const bool a_far = ea > eb;
  const std::string far = a_far ? a_run : b_run, near = a_far ? b_run : a_run;
  c.cls = DifferenceClass::BeyondReordering;
  c.why = fmt::format(
      "{} is {} ULP from float64 where {} is {}: investigate as a bug (an ignored mask, a changed "
      "algorithm, a downgrade) ({})",
      far, ulp_figure(high), near,
      low == 0 ? std::string("exact") : fmt::format("{} ({:.3g}x further)", ulp_figure(low), high / low), own);
  return c;
}

void attach_referee(report::ConfigResult& c, const std::vector<TrialRun>& runs, const report::Referee& referee) {
  c.referee.emplace();
  const int ref = reference_index(runs);
  if (ref < 0) return;
  const TrialRun& reference = runs[static_cast<size_t>(ref)];
  c.referee->errors = reference.result->errors;
  if (c.diverged_tensors.empty()) return;
  for (auto& f : c.diverged_tensors) {
    // The repeat that differs from the reference in this tensor and lies furthest from float64 (the
    // first such when none was measured).
    const TrialRun* other = nullptr;
    const ReferenceError* other_error = nullptr;
    for (size_t i = 0; i < runs.size(); ++i) {
      if (static_cast<int>(i) == ref || !runs[i].result || runs[i].result->status != report::TrialStatus::Ok) continue;
      bool differs = true;
      for (const auto& t : runs[i].result->tensors)
        if (t.name == f.name) differs = t.digest != f.reference_digest;
      if (!differs) continue;
      const ReferenceError* e = error_named(runs[i].result->errors, f.name);
      const bool further = e != nullptr && (other_error == nullptr || e->max_ulp > other_error->max_ulp ||
                                            (std::isnan(e->max_ulp) && !std::isnan(other_error->max_ulp)));
      if (other == nullptr || further) {
        other = &runs[i];
        other_error = e;
      }
    }
    if (other == nullptr) continue;
    f.referee = classify_difference(f, referee, fmt::format("repeat {}", reference.repeat),
                                    error_named(reference.result->errors, f.name),
                                    fmt::format("repeat {}", other->repeat), other_error);
  }
  summarise(c);
}

std::optional<Config> fill_rerun_config(const Config& config) {
  const auto value = [&](const char* key, const char* otherwise) {
    const auto it = config.values.find(key);
    return it == config.values.end() ? std::string(otherwise) : it->second;
  };
  const std::string deterministic = value("deterministic", "off");
  if (deterministic != "off" && value("fill_uninitialized_memory", "on") == "on") return std::nullopt;
  Config rerun = config;
  rerun.name += "+fill_uninitialized_memory=on";
  if (deterministic == "off") {
    rerun.values["deterministic"] = "warn";
    rerun.name += "+deterministic=warn";
  }
  rerun.values["fill_uninitialized_memory"] = "on";
  return rerun;
}

bool worth_fill_rerun(const report::ConfigResult& c) {
  if (!c.referee) return false;
  return std::any_of(c.diverged_tensors.begin(), c.diverged_tensors.end(), [](const report::TensorFinding& f) {
    return report::significand_bits(f.dtype) > 0 && (!f.referee || f.referee->cls != DifferenceClass::Reordering);
  });
}

void classify_uninitialized(report::ConfigResult& c, const std::vector<TrialRun>& reruns, const std::string& rerun,
                            const std::string& op) {
  std::vector<const TrialResult*> ok;
  for (const auto& r : reruns)
    if (r.result && r.result->status == report::TrialStatus::Ok) ok.push_back(&*r.result);
  if (ok.size() < 2 || !c.referee) return;
  const auto digest = [](const TrialResult& r, const std::string& name) -> const std::string* {
    for (const auto& t : r.tensors)
      if (t.name == name) return &t.digest;
    return nullptr;
  };
  bool changed = false;
  for (auto& f : c.diverged_tensors) {
    if (report::significand_bits(f.dtype) == 0 || (f.referee && f.referee->cls == DifferenceClass::Reordering))
      continue;
    const std::string* first = digest(*ok[0], f.name);
    const std::string* second = digest(*ok[1], f.name);
    const ReferenceError* filled = error_named(ok[0]->errors, f.name);
    const ReferenceError* before = error_named(c.referee->errors, f.name);
    if (first == nullptr || second == nullptr || *first != *second || filled == nullptr) continue;
    const int64_t fresh = filled->nan_result - (before != nullptr ? before->nan_result : 0);
    if (fresh <= 0) continue;
    Classified u = f.referee.value_or(Classified{});
    u.cls = DifferenceClass::Uninitialized;
    u.op = op;
    u.why = fmt::format(
        "under {} two reruns agree bit for bit and {} of its {} elements are NaN that were not: they were read "
        "from memory nobody wrote{}",
        rerun, fresh, filled->numel, op.empty() ? "" : fmt::format(" (the first differing op: {})", op));
    f.referee = std::move(u);
    changed = true;
  }
  if (changed) summarise(c);
}

void classify_dependence(report::ConfigDependence& d, const std::vector<report::ConfigResult>& configs,
                         const report::Referee& referee) {
  if (d.groups.size() < 2 || d.groups[0].empty() || d.groups[1].empty()) return;
  const auto find = [&](const std::string& name) -> const report::ConfigResult* {
    for (const auto& c : configs)
      if (c.name == name) return &c;
    return nullptr;
  };
  const report::ConfigResult* a = find(d.groups[0].front());
  const report::ConfigResult* b = find(d.groups[1].front());
  if (a == nullptr || b == nullptr) return;
  static const std::vector<ReferenceError> none;
  const auto& ea = a->referee ? a->referee->errors : none;
  const auto& eb = b->referee ? b->referee->errors : none;
  std::vector<std::pair<std::string, Classified>> classes;
  // A tensor that one of the two configurations reads from memory nobody wrote differs for that reason.
  const auto uninitialized = [](const report::ConfigResult& c, const std::string& name) -> const Classified* {
    for (const auto& f : c.diverged_tensors)
      if (f.name == name && f.referee && f.referee->cls == DifferenceClass::Uninitialized) return &*f.referee;
    return nullptr;
  };
  for (auto& f : d.differing) {
    if (const Classified* u = uninitialized(*a, f.name) ? uninitialized(*a, f.name) : uninitialized(*b, f.name)) {
      f.referee = *u;
      f.referee->why = fmt::format("as in {}: {}", uninitialized(*a, f.name) ? a->name : b->name, u->why);
      classes.emplace_back(f.name, *f.referee);
      continue;
    }
    f.referee = classify_difference(f, referee, a->name, error_named(ea, f.name), b->name, error_named(eb, f.name));
    classes.emplace_back(f.name, *f.referee);
  }
  d.referee = report::summarise_classes(classes);
}

report::Classified classify_root_cause(const report::RootCause& rc, const OpClassAnswer& facts) {
  if (facts.index_write && facts.written_twice > 0 && facts.differing > 0 && facts.differing_hold_written_values) {
    Classified c;
    c.cls = DifferenceClass::WriteRace;
    c.op = rc.op;
    c.indices = facts.first_written_twice;
    c.index_count = facts.written_twice;
    c.a_run = "one capture run";
    c.b_run = "another";
    c.a = facts.a;
    c.b = facts.b;
    std::vector<std::string> first;
    for (const int64_t i : facts.first_written_twice) first.push_back(std::to_string(i));
    c.why = fmt::format(
        "{} wrote {} element{} more than once (flat positions {}{}), and each of the {} element{} that differ "
        "between runs holds, in both, one of the values written to it: which writer came last changed",
        rc.op, facts.written_twice, facts.written_twice == 1 ? "" : "s", fmt::join(first, ", "),
        facts.written_twice > static_cast<int64_t>(first.size()) ? ", ..." : "", facts.differing,
        facts.differing == 1 ? "" : "s");
    return c;
  }
  if (!facts.a || !facts.b) return unclassified(facts.note.empty() ? "the op was not rerun in float64" : facts.note);
  report::TensorFinding f;
  f.name = facts.a->name;
  f.dtype = facts.a->dtype;
  const report::Referee op_referee{"cpu", "cpu", true, ""};
  Classified c = classify_difference(f, op_referee, "one capture run", &*facts.a, "another", &*facts.b);
  c.why = "against the op rerun in float64 on the same inputs: " + c.why;
  return c;
}

void inherit_write_race(report::ConfigResult& c) {
  if (!c.trace || c.trace->root_causes.empty() || !c.referee) return;
  const report::RootCause& root = c.trace->root_causes.front();
  if (!root.referee || root.referee->cls != DifferenceClass::WriteRace) return;
  bool changed = false;
  // Every difference downstream is the race's, even one whose two results happen to lie equally far
  // from float64 (which the ULP rule alone calls reordering): the runs disagree on which value was kept.
  for (auto& f : c.diverged_tensors) {
    if (f.referee && f.referee->cls == DifferenceClass::Uninitialized) continue;
    Classified w = f.referee.value_or(Classified{});
    w.cls = DifferenceClass::WriteRace;
    w.op = root.op;
    w.indices = root.referee->indices;
    w.index_count = root.referee->index_count;
    w.why = fmt::format("follows the write race the trace found at its root: {}", root.referee->why);
    f.referee = std::move(w);
    changed = true;
  }
  if (changed) summarise(c);
}

bool any_beyond_reordering(const std::vector<report::ConfigResult>& configs,
                           const std::optional<report::ConfigDependence>& d) {
  const auto beyond = [](const std::vector<report::TensorFinding>& fs) {
    return std::any_of(fs.begin(), fs.end(), [](const report::TensorFinding& f) {
      return f.referee && f.referee->cls == DifferenceClass::BeyondReordering;
    });
  };
  if (d && beyond(d->differing)) return true;
  return std::any_of(configs.begin(), configs.end(),
                     [&](const report::ConfigResult& c) { return beyond(c.diverged_tensors); });
}

namespace {

// One beyond-reordering class weighed against its tensor's sensitivity `s` (nullptr: unmeasured).
void weigh(Classified& c, const ReferenceError* s) {
  if (c.cls != DifferenceClass::BeyondReordering || !c.a || !c.b || s == nullptr || !s->note.empty() ||
      !std::isfinite(s->max_abs) || s->nan_result > 0)
    return;
  const double far = std::max(c.a->max_abs, c.b->max_abs);
  if (s->max_abs > 0 && far <= kFactor * s->max_abs) {
    c.cls = DifferenceClass::Reordering;
    c.why = fmt::format(
        "{} and {} lie {:.3g} and {:.3g} from float64 ({} and {} ULP), and rounding the inputs alone moves "
        "float64 by up to {:.3g}: an ill-conditioned result, which reordering moves this far; neither is more right",
        c.a_run, c.b_run, c.a->max_abs, c.b->max_abs, ulp_figure(c.a->max_ulp), ulp_figure(c.b->max_ulp), s->max_abs);
    return;
  }
  c.why += fmt::format("; rounding the inputs alone moves float64 by {:.3g}, far less than the {:.3g} seen", s->max_abs,
                       far);
}

}  // namespace

void weigh_conditioning(std::vector<report::ConfigResult>& configs, std::optional<report::ConfigDependence>& d,
                        const std::vector<ReferenceError>& sensitivity) {
  for (auto& c : configs) {
    if (!c.referee) continue;
    for (auto& f : c.diverged_tensors)
      if (f.referee) weigh(*f.referee, error_named(sensitivity, f.name));
    if (c.referee->summary) summarise(c);
  }
  if (!d) return;
  std::vector<std::pair<std::string, Classified>> classes;
  for (auto& f : d->differing)
    if (f.referee) {
      weigh(*f.referee, error_named(sensitivity, f.name));
      classes.emplace_back(f.name, *f.referee);
    }
  if (d->referee) d->referee = report::summarise_classes(classes);
}

std::vector<ReferenceError> furthest_errors(const std::vector<TrialRun>& runs) {
  std::vector<ReferenceError> out;
  for (const auto& run : runs) {
    if (!run.result || run.result->status != report::TrialStatus::Ok) continue;
    for (const auto& e : run.result->errors) {
      auto it = std::find_if(out.begin(), out.end(), [&](const ReferenceError& o) { return o.name == e.name; });
      if (it == out.end())
        out.push_back(e);
      else if (unusable(*it, "").empty() && (!unusable(e, "").empty() || e.max_ulp > it->max_ulp))
        *it = e;
    }
  }
  return out;
}

std::optional<report::FixAccuracy> judge_fix_accuracy(const std::vector<ReferenceError>& failing,
                                                      const std::vector<ReferenceError>& candidate) {
  report::FixAccuracy a;
  a.errors = candidate;
  bool measured = false, all_equal = true, all_closer = true;
  double furthest_over = 0;  // a downgrade's: how far its tensor rose above the bound
  for (const auto& c : candidate) {
    const ReferenceError* f = error_named(failing, c.name);
    if (f == nullptr || !unusable(c, "").empty() || !unusable(*f, "").empty()) continue;
    const double bound = std::max(kFloorUlp, kFactor * f->max_ulp);
    const bool first = !measured;
    measured = true;
    all_equal = all_equal && c.max_ulp == f->max_ulp;
    all_closer = all_closer && f->max_ulp > std::max(kFloorUlp, kFactor * c.max_ulp);
    if (c.max_ulp > bound) {
      if (a.change != report::AccuracyChange::Downgrade || c.max_ulp / bound > furthest_over) {
        furthest_over = c.max_ulp / bound;
        a.tensor = c.name, a.max_ulp = c.max_ulp, a.from_ulp = f->max_ulp;
      }
      a.change = report::AccuracyChange::Downgrade;
    } else if (a.change != report::AccuracyChange::Downgrade && (first || c.max_ulp > a.max_ulp)) {
      a.tensor = c.name, a.max_ulp = c.max_ulp, a.from_ulp = f->max_ulp;
    }
  }
  if (!measured) return std::nullopt;
  if (a.change != report::AccuracyChange::Downgrade)
    a.change = all_equal    ? report::AccuracyChange::Unchanged
               : all_closer ? report::AccuracyChange::Closer
                            : report::AccuracyChange::SameOrder;
  return a;
}

}  // namespace ra
