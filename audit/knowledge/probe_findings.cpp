// SPDX-License-Identifier: Apache-2.0
#include "audit/knowledge/probe_findings.h"

#include <fmt/format.h>

namespace ra {
namespace {

using report::Verdict;

bool deterministic_on(const report::ConfigResult& c) {
  for (const auto& s : c.switches)
    if (s.key == "deterministic") return s.effective == "on";
  return false;
}

bool deterministic_off(const report::ConfigResult& c) {
  for (const auto& s : c.switches)
    if (s.key == "deterministic") return s.effective == "off";
  return false;
}

}  // namespace

void judge_probe(report::ProbeTarget& probe, const KnowledgeEntry* entry, const Device& device,
                 const std::optional<CensusRun>& census) {
  const report::Target& target = probe.common;
  report::ProbeFacts& facts = probe.facts;
  const bool applies = entry && KnowledgeBase::applies_to(*entry, device);
  const bool documented = applies && entry->documented != Documented::Undocumented;
  const bool documented_raises =
      applies && KnowledgeBase::behaviour_under(*entry, "deterministic") == Behaviour::Raises;
  const bool control = facts.role == "control";
  auto note = [&](std::string text) { facts.disagreements.push_back(std::move(text)); };

  bool diverged = false;
  bool diverged_off = false;  // diverged under a configuration with deterministic=off
  bool observed_off = false;  // at least one deterministic-off configuration with >= 2 completed repeats
  for (const auto& c : target.configs) {
    diverged |= c.verdict == Verdict::Diverged;
    if (c.verdict == Verdict::Diverged && control)
      note(
          fmt::format("control diverged under '{}': the op is nondeterministic even in the form that should be "
                      "stable",
                      c.name));
    else if (c.verdict == Verdict::Diverged && !applies)
      note(fmt::format("diverged under '{}', but nothing documents it as nondeterministic on {}", c.name,
                       device.type()));
    if (deterministic_on(c)) {
      if (documented_raises && c.verdict != Verdict::Raised && c.completed > 0)
        note(
            fmt::format("documented to raise under use_deterministic_algorithms on {}, but ran without an error "
                        "under '{}'",
                        device.type(), c.name));
      if (!documented_raises && c.verdict == Verdict::Raised)
        note(fmt::format("raised under '{}', but the documentation does not list it as raising on {}", c.name,
                         device.type()));
      if (applies && entry->documented == Documented::MadeDeterministic && c.verdict == Verdict::Diverged)
        note(fmt::format("documented as made deterministic on {}, but diverged under '{}'", device.type(), c.name));
    } else if (deterministic_off(c)) {
      diverged_off |= c.verdict == Verdict::Diverged;
      observed_off |= c.completed >= 2 && c.verdict != Verdict::Diverged;
    }
  }
  if (documented && !control && observed_off && !diverged_off)
    note(fmt::format("documented as nondeterministic on {}, but never diverged here (not observed)", device.type()));

  // The knowledge base's measurements of this probe on this device type (another machine, another
  // date): a verdict that differs from one measured there is shown, since the measurement is what
  // lint states. An entry's other probes (conv_transpose1d's forward beside its backward) are not
  // compared with this one.
  if (applies)
    for (const auto& m : entry->measured) {
      if (m.device_type != device.type() || m.probe != target.name) continue;  // another probe of the entry
      for (const auto& c : target.configs) {
        const auto it = m.observed.find(c.name);
        const std::string here = report::to_string(c.verdict);
        if (it == m.observed.end() || it->second == here ||
            (c.verdict != Verdict::Reproducible && c.verdict != Verdict::Diverged && c.verdict != Verdict::Raised))
          continue;
        note(fmt::format("{} under '{}' here, but {} on {} ({}, torch {}) as the knowledge base records", here, c.name,
                         it->second, m.device, m.date, m.torch));
      }
    }

  if (census && census->completed) {
    facts.alerts = census->alerts;
    const bool alerted = !census->alerts.empty();
    if (alerted && !documented_raises)
      note(fmt::format("raised a determinism alert in warn_only mode, but is not documented to raise on {}",
                       device.type()));
    if (!alerted && documented_raises)
      note(fmt::format("documented to raise on {}, but no alert fired in warn_only mode", device.type()));
    facts.census =
        alerted ? (diverged ? "alerted-diverged" : "alerted-stable") : (diverged ? "silent-diverged" : "stable");
  }
}

std::string probe_off_device_message(const Device& device) {
  return fmt::format("the probe does not run on {}", device.type());
}

report::Census cross_tabulate(const std::vector<report::ProbeTarget>& targets, const std::string& config_name) {
  report::Census c;
  c.config = config_name;
  for (const auto& t : targets) {
    const std::string& k = t.facts.census;
    auto& list = k == "alerted-diverged"  ? c.alerted_diverged
                 : k == "alerted-stable"  ? c.alerted_stable
                 : k == "silent-diverged" ? c.silent_diverged
                 : k == "stable"          ? c.stable
                                          : c.not_run;
    list.push_back(t.common.name);
  }
  return c;
}

}  // namespace ra
