// SPDX-License-Identifier: Apache-2.0
// `selftest`: how each check judges what the trials found (audit/selftest/selftest.h), and a self-test
// report in every format and back from JSON. The checks themselves run through the binary in
// tests/cli/test_cli_selftest.cpp.
#include "audit/selftest/selftest.h"
#include "audit/selftest/selftest_invariance.h"
#include "audit/trial/config.h"
#include "reports/json_read.h"
#include "reports/render.h"
#include "tests/unit/report_samples.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

using ra::report::ConfigResult;
using ra::report::Report;
using ra::report::Target;
using ra::report::Verdict;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

ConfigResult config(const std::string& name, Verdict v, int diverging = 0) {
  ConfigResult c;
  c.name = name;
  c.verdict = v;
  c.repeats = 4;
  c.completed = 4;
  c.diverging_repeats = diverging;
  return c;
}

Target target(const std::string& name, Verdict on_default, Verdict on_det) {
  Target t;
  t.name = name;
  t.configs = {config("default", on_default, on_default == Verdict::Diverged ? 3 : 0), config("det", on_det)};
  return t;
}

Report probes(Verdict pos_default, Verdict pos_det, Verdict neg_default = Verdict::Reproducible) {
  Report r;
  r.body = ra::test::body_of<ra::report::ProbesBody>(
      {target("index_put.accumulate", pos_default, pos_det),
       target("index_put.accumulate.unique-control", neg_default, Verdict::Reproducible)});
  return r;
}

nlohmann::ordered_json environment(bool with_gpu) {
  nlohmann::ordered_json env = {{"torch", {{"version", "2.11.0"}, {"git_version", "70d99e998b4955e0"}}},
                                {"cuda",
                                 {{"available", with_gpu},
                                  {"driver", "13.0"},
                                  {"runtime", "13.0"},
                                  {"devices", nlohmann::ordered_json::array()}}},
                                {"cpu", {{"model", "AMD EPYC"}, {"logical_cpus", 2}, {"aten_capability", "AVX512"}}},
                                {"threads", {{"intra_op", 2}}},
                                {"switches", {{"deterministic", "off"}, {"threads", "2"}}}};
  if (with_gpu)
    env["cuda"]["devices"].push_back(
        {{"name", "NVIDIA H100"}, {"compute_capability", "9.0"}, {"sm_count", 132}, {"uuid", "GPU-1234"}});
  return env;
}

Report traced(const std::string& direction, uint32_t thread, Verdict v = Verdict::Diverged) {
  Report r;
  r.verdict = v;
  Target t;
  t.name = direction + ".pt";
  ConfigResult c = config("default", v);
  c.trace = ra::report::TraceSummary{};
  if (v == Verdict::Diverged) {
    ra::report::RootCause cause;
    cause.op = direction == "forward" ? "aten::index_put_" : "aten::_index_put_impl_";
    cause.direction = direction;
    cause.node = direction == "backward" ? "IndexBackward0" : "";
    cause.thread = thread;
    c.trace->root_causes.push_back(cause);
  }
  t.configs = {c};
  r.body = ra::test::body_of<ra::report::RunBody>({t});
  return r;
}

}  // namespace

TEST_CASE("selftest detection: the positive control must diverge under default only, the negative one never") {
  const std::string pos = "index_put.accumulate", neg = "index_put.accumulate.unique-control";
  const auto pass =
      ra::detection_check(probes(Verdict::Diverged, Verdict::Reproducible), pos, neg, 2, ra::Device::cpu());
  CHECK(pass.passed);
  CHECK(contains(pass.evidence, "diverged under default (3/3 repeats differ)"));
  const auto missed =
      ra::detection_check(probes(Verdict::Reproducible, Verdict::Reproducible), pos, neg, 2, ra::Device::cpu());
  CHECK_FALSE(missed.passed);
  CHECK(contains(missed.evidence, "was reproducible under default, not diverged"));
  const auto unfixed =
      ra::detection_check(probes(Verdict::Diverged, Verdict::Diverged), pos, neg, 2, ra::Device::cpu());
  CHECK_FALSE(unfixed.passed);
  CHECK(contains(unfixed.evidence, "under det, not reproducible"));
  const auto false_alarm = ra::detection_check(probes(Verdict::Diverged, Verdict::Reproducible, Verdict::Diverged), pos,
                                               neg, 2, ra::Device::cpu());
  CHECK_FALSE(false_alarm.passed);
  CHECK(contains(false_alarm.evidence, "negative control"));
  // One CPU cannot race: said so, not counted as a failure of the tool.
  const auto one_cpu =
      ra::detection_check(probes(Verdict::Reproducible, Verdict::Reproducible), pos, neg, 1, ra::Device::cpu());
  CHECK(one_cpu.passed);
  CHECK(contains(one_cpu.evidence, "not checked for divergence"));
  CHECK_FALSE(ra::detection_check(Report{}, pos, neg, 2, ra::Device::cpu()).passed);
}

TEST_CASE("selftest switches: every requested switch must read back as requested, in every configuration") {
  Report r = probes(Verdict::Diverged, Verdict::Reproducible);
  r.targets()[0].configs[0].switches = {{"threads", "1", "1"}, {"deterministic", "", "off"}};
  r.targets()[0].configs[1].switches = {{"threads", "2", "2"}, {"tf32.cublas", "on", "on"}};
  const auto pass = ra::switches_check(r);
  CHECK(pass.passed);
  CHECK(contains(pass.evidence, "3 values of 2 switches"));
  r.targets()[0].configs[1].switches[1].effective = "off";
  const auto fail = ra::switches_check(r);
  CHECK_FALSE(fail.passed);
  CHECK(contains(fail.evidence, "'tf32.cublas' set to on read back as off"));
  Report refused = probes(Verdict::Diverged, Verdict::Reproducible);
  ra::report::Trial trial;
  trial.status = ra::report::TrialStatus::ConfigError;
  trial.message = "cannot apply configuration: no MKL";
  refused.targets()[0].configs[0].trials = {trial};
  refused.targets()[0].configs[0].switches = {{"threads", "1", "1"}};
  CHECK_FALSE(ra::switches_check(refused).passed);
  CHECK_FALSE(ra::switches_check(Report{}).passed);
}

TEST_CASE("selftest fingerprint: every field present, and on CUDA every GPU's name, SM count, capability and UUID") {
  const auto cpu = ra::fingerprint_check(environment(false), ra::Device::cpu());
  CHECK(cpu.passed);
  CHECK(contains(cpu.evidence, "torch 2.11.0"));
  CHECK(contains(cpu.evidence, "AMD EPYC (2 CPUs, AVX512)"));
  // A CUDA self-test on a fingerprint that lists no GPU fails (the defect of CUDA 13's missing
  // cudaGetDeviceProperties_v2 looked exactly like this).
  const auto no_gpu = ra::fingerprint_check(environment(false), ra::Device::cuda());
  CHECK_FALSE(no_gpu.passed);
  CHECK(contains(no_gpu.evidence, "cuda.devices"));
  const auto gpu = ra::fingerprint_check(environment(true), ra::Device::cuda());
  CHECK(gpu.passed);
  CHECK(contains(gpu.evidence, "NVIDIA H100 (sm 9.0, 132 SMs, GPU-1234)"));
  auto env = environment(true);
  env["cuda"]["devices"][0]["uuid"] = "";
  env["cuda"]["devices"][0]["name"] = "unknown";
  const auto partial = ra::fingerprint_check(env, ra::Device::cuda());
  CHECK_FALSE(partial.passed);
  CHECK(contains(partial.evidence, "cuda.devices[0].name, cuda.devices[0].uuid"));
  env = environment(false);
  env["cpu"].erase("model");
  CHECK_FALSE(ra::fingerprint_check(env, ra::Device::cpu()).passed);
}

TEST_CASE("selftest tracing: a forward and a backward root cause; on CUDA the backward one off the model's thread") {
  const auto cpu = ra::tracing_check(traced("forward", 0), traced("backward", 0), ra::Device::cpu());
  CHECK(cpu.passed);
  CHECK(cpu.evidence ==
        "forward: aten::index_put_ (thread 0); backward: aten::_index_put_impl_ in IndexBackward0 (thread 0)");
  CHECK(ra::tracing_check(traced("forward", 0), traced("backward", 1), ra::Device::cuda()).passed);
  const auto missed_thread = ra::tracing_check(traced("forward", 0), traced("backward", 0), ra::Device::cuda());
  CHECK_FALSE(missed_thread.passed);
  CHECK(contains(missed_thread.evidence, "not the device's autograd thread"));
  const auto stable =
      ra::tracing_check(traced("forward", 0, Verdict::Reproducible), traced("backward", 0), ra::Device::cpu());
  CHECK_FALSE(stable.passed);
  CHECK(contains(stable.evidence, "no forward root cause in forward.pt (verdict reproducible)"));
  // A backward root cause in the forward model's place does not count as a forward one.
  CHECK_FALSE(ra::tracing_check(traced("backward", 0), traced("backward", 0), ra::Device::cpu()).passed);
}

TEST_CASE("selftest report: a failed check makes exit 1 in every format, and JSON reads back with it") {
  Report r;
  r.tool_version = "0.1.0";
  r.command = {"repro-audit", "selftest"};
  r.environment = environment(false);
  r.body =
      ra::report::SelfTest{"cpu", {{"digests", true, "6 dtypes alike"}, {"tracing", false, "no backward root cause"}}};
  ra::report::finalize(r);
  CHECK(r.exit_code == 1);
  CHECK(ra::report::selftest_summary(std::get<ra::report::SelfTest>(r.body)) == "1 of 2 checks failed: tracing");
  const std::string text = ra::report::render_text(r);
  CHECK(contains(text, "  FAIL  tracing      no backward root cause\n"));
  CHECK(contains(text, "selftest: 1 of 2 checks failed: tracing (exit 1)"));
  CHECK(contains(ra::report::render_markdown(r), "| tracing | **FAIL** | no backward root cause |"));
  const std::string junit = ra::report::render_junit(r);
  CHECK(contains(junit, "tests=\"2\" failures=\"1\""));
  CHECK(contains(junit, "<failure type=\"selftest\" message=\"no backward root cause\"/>"));
  const std::string html = ra::report::render_html(r);
  CHECK(contains(html, "data-check=\"tracing\" data-passed=\"false\""));
  CHECK(contains(html, "<title>repro-audit selftest on cpu: 1 of 2 checks failed: tracing (exit 1)</title>"));

  const std::string json = ra::report::render_json(r);
  const Report back = ra::report::report_from_json(nlohmann::ordered_json::parse(json));
  REQUIRE(std::holds_alternative<ra::report::SelfTest>(back.body));
  CHECK(std::get<ra::report::SelfTest>(back.body).checks.size() == 2);
  CHECK(ra::report::render_json(back) == json);
  // The stored exit code is checked against the checks: a hand edit to 0 is refused.
  auto edited = nlohmann::ordered_json::parse(json);
  edited["exit_code"] = 0;
  CHECK_THROWS_AS(ra::report::report_from_json(edited), ra::report::ReportError);
  edited = nlohmann::ordered_json::parse(json);
  edited["selftest"]["checks"][1]["passed"] = "no";
  CHECK_THROWS_AS(ra::report::report_from_json(edited), ra::report::ReportError);
  std::get<ra::report::SelfTest>(r.body).checks[1].passed = true;
  ra::report::finalize(r);
  CHECK(r.exit_code == 0);
  CHECK(contains(ra::report::render_text(r), "selftest: all 2 checks passed (exit 0)"));
}

namespace {

// A probes report with the three batch-invariance probes' classes under default.
Report batch_probes(std::vector<std::vector<int64_t>> linear, std::vector<std::vector<int64_t>> norm,
                    std::vector<std::vector<int64_t>> detect) {
  Report r;
  ra::report::ProbesBody probes;
  for (auto [name, classes] :
       {std::pair{"batch.linear", linear}, {"batch.layer_norm", norm}, {"batch.detect-control", detect}}) {
    ra::report::ProbeTarget t;
    t.common.name = name;
    t.facts.family = "batch-invariance";
    t.facts.batch_classes = {{"default", classes}};
    probes.targets.push_back(t);
  }
  r.body = probes;
  return r;
}

}  // namespace

TEST_CASE("selftest invariance: Linear variant where measured so in-process, layer_norm invariant, one ulp seen") {
  const std::vector<std::vector<int64_t>> one = {{1, 2, 4}}, split = {{1, 2}, {4}}, ulp = {{1}, {2, 4}};
  const ra::LinearRows variant{{1, 2, 4}, {4}}, invariant{{1, 2, 4}, {}};
  const auto found = ra::invariance_check(batch_probes(split, one, ulp), variant);
  CHECK(found.name == "invariance");
  CHECK(found.passed);
  CHECK(found.evidence.rfind("a Linear row differed in-process from batch 1 at 1 of 3 sizes (first at M = 4); "
                             "batch.linear found it variant (2 classes)",
                             0) == 0);
  // The real positive missed.
  const auto missed = ra::invariance_check(batch_probes(one, one, ulp), variant);
  CHECK_FALSE(missed.passed);
  CHECK(
      contains(missed.evidence,
               "batch.linear found one class, but a Linear row differed in-process at 1 of 3 sizes (first at M = 4)"));
  // An invariant library passes on the controls, and says so.
  const auto no_positive = ra::invariance_check(batch_probes(one, one, ulp), invariant);
  CHECK(no_positive.passed);
  CHECK(contains(no_positive.evidence, "gives no real positive here; passed on the controls"));
  // The control variant, or one ulp not seen: failed.
  CHECK_FALSE(ra::invariance_check(batch_probes(split, split, ulp), variant).passed);
  const auto blind = ra::invariance_check(batch_probes(split, one, one), variant);
  CHECK_FALSE(blind.passed);
  CHECK(contains(blind.evidence, "the comparison cannot see one ulp"));
  // A probe that did not run.
  Report partial = batch_probes(split, one, ulp);
  std::get<ra::report::ProbesBody>(partial.body).targets.pop_back();
  CHECK_FALSE(ra::invariance_check(partial, variant).passed);
}

TEST_CASE("switch_configs: between them every switch of a LibTorch trial, each set to two different values") {
  // A switch added to the table and not here would go unchecked by selftest's read-back.
  const std::vector<ra::Config> configs = ra::parse_configs(ra::switch_configs(4), 4);
  REQUIRE(configs.size() == 2);
  size_t checked = 0;
  for (const auto& s : ra::switch_table()) {
    CAPTURE(s.key);
    if (s.exec_only) {
      CHECK_FALSE(configs[0].values.contains(s.key));
      continue;
    }
    REQUIRE(configs[0].values.contains(s.key));
    REQUIRE(configs[1].values.contains(s.key));
    CHECK(configs[0].values.at(s.key) != configs[1].values.at(s.key));
    ++checked;
  }
  CHECK(configs[0].values.size() == checked);
  CHECK(configs[1].values.size() == checked);
}
