// SPDX-License-Identifier: Apache-2.0
#include "audit/knowledge/probe_findings.h"

#include <doctest/doctest.h>

namespace {

using ra::report::Verdict;

ra::report::ConfigResult config(const std::string& name, const std::string& deterministic, Verdict v,
                                int completed = 3) {
  ra::report::ConfigResult c;
  c.name = name;
  c.verdict = v;
  c.completed = completed;
  c.repeats = 3;
  c.switches = {{"deterministic", "", deterministic}};
  return c;
}

ra::report::ProbeTarget probe_target(std::vector<ra::report::ConfigResult> configs, const std::string& role = "probe") {
  ra::report::ProbeTarget t;
  t.common.name = "p";
  t.facts.role = role;
  t.common.configs = std::move(configs);
  return t;
}

ra::KnowledgeEntry entry(ra::Documented documented, const std::string& device) {
  ra::KnowledgeEntry e;
  e.id = std::string("x");
  e.documented = documented;
  e.device = device;
  e.behaviour["deterministic"] =
      documented == ra::Documented::Raises ? ra::Behaviour::Raises : ra::Behaviour::MadeDeterministic;
  return e;
}

bool mentions(const ra::report::ProbeTarget& t, const std::string& text) {
  for (const auto& d : t.facts.disagreements)
    if (d.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("judge_probe: measurement that matches the documentation gives no disagreement") {
  const auto e = entry(ra::Documented::Raises, "cuda");
  auto t = probe_target({config("default", "off", Verdict::Diverged), config("det", "on", Verdict::Raised, 0)});
  ra::judge_probe(t, &e, ra::Device::cuda(), ra::CensusRun{true, {"op does not have a deterministic implementation"}});
  CHECK(t.facts.disagreements.empty());
  CHECK(t.facts.census == "alerted-diverged");
  CHECK(t.facts.alerts.size() == 1);
}

TEST_CASE("judge_probe: documented to raise but ran, and no alert in the census") {
  const auto e = entry(ra::Documented::Raises, "cuda");
  auto t = probe_target({config("default", "off", Verdict::Reproducible), config("det", "on", Verdict::Reproducible)});
  ra::judge_probe(t, &e, ra::Device::cuda(), ra::CensusRun{true, {}});
  CHECK(mentions(t, "documented to raise under use_deterministic_algorithms on cuda, but ran without an error"));
  CHECK(mentions(t, "no alert fired"));
  CHECK(mentions(t, "never diverged here (not observed)"));
  CHECK(t.facts.census == "stable");
}

TEST_CASE("judge_probe: an entry for another device documents nothing here") {
  const auto e = entry(ra::Documented::Raises, "cuda");
  auto t = probe_target({config("default", "off", Verdict::Reproducible), config("det", "on", Verdict::Reproducible)});
  ra::judge_probe(t, &e, ra::Device::cpu(), ra::CensusRun{true, {}});
  CHECK(t.facts.disagreements.empty());

  auto diverging = probe_target({config("default", "off", Verdict::Diverged)});
  ra::judge_probe(diverging, &e, ra::Device::cpu(), std::nullopt);
  CHECK(mentions(diverging, "nothing documents it as nondeterministic on cpu"));
  CHECK(diverging.facts.census.empty());  // no census run
}

TEST_CASE("judge_probe: made deterministic but diverged under det; raised though not documented to") {
  const auto e = entry(ra::Documented::MadeDeterministic, "any");
  auto t = probe_target({config("det", "on", Verdict::Diverged)});
  ra::judge_probe(t, &e, ra::Device::cpu(), std::nullopt);
  CHECK(mentions(t, "documented as made deterministic on cpu, but diverged under 'det'"));

  auto raised = probe_target({config("det", "on", Verdict::Raised, 0)});
  ra::judge_probe(raised, &e, ra::Device::cpu(), ra::CensusRun{true, {"alert"}});
  CHECK(mentions(raised, "raised under 'det', but the documentation does not list it as raising on cpu"));
  CHECK(mentions(raised, "raised a determinism alert in warn_only mode"));
}

TEST_CASE("judge_probe: a control that diverges is a disagreement; one that is stable is not 'not observed'") {
  const auto e = entry(ra::Documented::MadeDeterministic, "cpu");
  auto diverged = probe_target({config("default", "off", Verdict::Diverged)}, "control");
  ra::judge_probe(diverged, &e, ra::Device::cpu(), std::nullopt);
  CHECK(mentions(diverged, "control diverged under 'default'"));

  auto stable = probe_target({config("default", "off", Verdict::Reproducible)}, "control");
  ra::judge_probe(stable, &e, ra::Device::cpu(), std::nullopt);
  CHECK(stable.facts.disagreements.empty());
}

TEST_CASE("judge_probe: 'not observed' needs two completed repeats under a deterministic-off configuration") {
  const auto e = entry(ra::Documented::MadeDeterministic, "cpu");
  auto one = probe_target({config("default", "off", Verdict::Reproducible, 1)});
  ra::judge_probe(one, &e, ra::Device::cpu(), std::nullopt);
  CHECK(one.facts.disagreements.empty());
}

TEST_CASE("cross_tabulate: each probe lands in one cell, in suite order") {
  std::vector<ra::report::ProbeTarget> targets(5);
  const char* classes[] = {"alerted-diverged", "stable", "silent-diverged", "", "alerted-stable"};
  const char* names[] = {"p0", "p1", "p2", "p3", "p4"};
  for (int i = 0; i < 5; ++i) {
    targets[i].common.name = names[i];
    targets[i].facts.census = classes[i];
  }
  const auto c = ra::cross_tabulate(targets, "census");
  CHECK(c.alerted_diverged == std::vector<std::string>{"p0"});
  CHECK(c.stable == std::vector<std::string>{"p1"});
  CHECK(c.silent_diverged == std::vector<std::string>{"p2"});
  CHECK(c.not_run == std::vector<std::string>{"p3"});
  CHECK(c.alerted_stable == std::vector<std::string>{"p4"});
}

TEST_CASE("judge_probe: a verdict that differs from the knowledge base's measurement on this device type is shown") {
  auto e = entry(ra::Documented::MadeDeterministic, "cuda");
  ra::Measurement m;
  m.device = "NVIDIA H200";
  m.device_type = "cuda";
  m.torch = "2.11.0+cu130";
  m.date = "2026-11-26";
  m.probe = "p";
  m.observed = {{"default", "diverged"}, {"det", "raised"}};
  e.measured.push_back(m);
  // Another probe of the same entry (a forward beside a backward) says nothing about this one.
  ra::Measurement other = m;
  other.probe = "p.forward";
  other.observed = {{"default", "reproducible"}, {"det", "reproducible"}};
  e.measured.push_back(other);
  auto t = probe_target({config("default", "off", Verdict::Diverged), config("det", "on", Verdict::Reproducible)});
  ra::judge_probe(t, &e, ra::Device::cuda(), std::nullopt);
  CHECK(mentions(t, "reproducible under 'det' here, but raised on NVIDIA H200 (2026-11-26, torch 2.11.0+cu130)"));
  CHECK(!mentions(t, "under 'default' here"));  // the same as measured; the other probe's is not compared
  // A CPU run is not compared with a CUDA measurement.
  auto cpu = probe_target({config("default", "off", Verdict::Diverged), config("det", "on", Verdict::Reproducible)});
  auto any = e;
  any.device = "any";
  ra::judge_probe(cpu, &any, ra::Device::cpu(), std::nullopt);
  CHECK(!mentions(cpu, "NVIDIA H200"));
}
