// SPDX-License-Identifier: Apache-2.0
#include "audit/baseline/upgrade_direction.h"

#include "audit/trial/referee.h"

#include <fmt/format.h>

#include <algorithm>

namespace ra {
namespace {

using report::BaselineDirection;
using report::DifferenceClass;

// Why one side's errors cannot class a change, or "".
std::string side_without_errors(const report::Target& t, const report::ConfigResult& c, const std::string& side,
                                const char* older) {
  if (!t.referee || !c.referee) return fmt::format("no errors against float64 for {} ({})", side, older);
  if (!t.referee->ran) return fmt::format("the float64 referee did not run for {} ({})", side, t.referee->note);
  return "";
}

const report::ReferenceError* error_named(const report::ConfigResult& c, const std::string& name) {
  for (const auto& e : c.referee->errors)
    if (e.name == name) return &e;
  return nullptr;
}

report::Classified unclassified(std::string why) {
  report::Classified c;
  c.why = std::move(why);
  return c;
}

// What the model was given rather than what it computed: its parameters, buffers, constants and
// attributes as loaded, which the trials do not measure against float64 either (the Recorder's
// model_state, worker/runtime/child_support.cpp). Other weights change them by design.
bool model_state(const std::string& name) {
  for (const char* prefix : {"param/", "buffer/", "constant/", "attr/"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

report::TensorFinding finding(const report::BaselineTensor& t) {
  report::TensorFinding f;
  f.name = t.name;
  f.dtype = t.current->dtype;
  f.shape = t.current->shape;
  return f;
}

// One tensor's class as a direction of its own, to be added to the result's.
BaselineDirection direction_of(const std::string& name, const report::Classified& c) {
  BaselineDirection d;
  if (c.cls == DifferenceClass::Reordering) {
    d.reordering = 1;
    d.baseline_max_ulp = c.a->max_ulp;
    d.current_max_ulp = c.b->max_ulp;
  } else if (c.cls == DifferenceClass::BeyondReordering) {
    report::DirectionGroup& g = c.b->max_ulp > c.a->max_ulp ? d.further : d.closer;
    g = {1, name, c.a->max_ulp, c.b->max_ulp};
  } else {
    d.unclassified = 1;
    d.unclassified_why = fmt::format("{}: {}", name, c.why);
  }
  return d;
}

}  // namespace

BaselineDirection upgrade_direction(const report::Target& bt, const report::ConfigResult& b, const report::Target& ct,
                                    const report::ConfigResult& c, const report::SideNames& names,
                                    std::vector<report::BaselineTensor>& changed) {
  BaselineDirection out;
  if (std::all_of(changed.begin(), changed.end(), [](const report::BaselineTensor& t) { return model_state(t.name); }))
    return out;  // nothing the model computed changed
  out.note = side_without_errors(bt, b, names.baseline, "saved before the referee, or with --referee off");
  if (out.note.empty()) out.note = side_without_errors(ct, c, names.current, "run with --referee off");
  if (!out.note.empty()) return out;
  for (auto& t : changed) {
    if (model_state(t.name)) continue;
    if (!t.baseline || !t.current)
      t.referee = unclassified(fmt::format("only in {}", t.baseline ? names.baseline : names.current));
    else if (t.baseline->dtype != t.current->dtype || t.baseline->shape != t.current->shape)
      t.referee = unclassified("its dtype or shape changed");
    else
      t.referee = classify_difference(finding(t), *ct.referee, names.baseline, error_named(b, t.name), names.current,
                                      error_named(c, t.name));
    report::add_direction(out, direction_of(t.name, *t.referee));
  }
  return out;
}

}  // namespace ra
