// SPDX-License-Identifier: Apache-2.0
#include "reports/baseline_file.h"
#include "reports/json_read.h"
#include "reports/render.h"
#include "tests/unit/report_samples.h"

#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace {

using json = nlohmann::ordered_json;

std::string round_trip(const ra::report::Report& r) {
  const std::string first = ra::report::render_json(r);
  return ra::report::render_json(ra::report::report_from_json(json::parse(first)));
}

// A probes report: two probe targets with their facts, and the census.
ra::report::Report probes_report() {
  ra::report::Report r;
  r.tool_version = "0.1.0";
  r.command = {"repro-audit", "probes"};
  r.environment = {{"torch", {{"version", "2.11.0"}}}, {"cpu", {{"threads", 2}}}};
  ra::report::ProbesBody probes;
  for (const char* name : {"index_add.forward", "sum.control"}) {
    ra::report::Target t;
    t.name = name;
    t.device = "cpu";
    t.mode = "infer";
    t.seed = 7;
    t.inputs = {"float32[64x8]"};
    ra::report::ConfigResult c;
    c.name = "default";
    c.repeats = 2;
    c.completed = 2;
    c.switches = {{"deterministic", "", "off"}, {"threads", "1", "1"}};
    c.reference = {{"output/0", "float32", {64, 8}, std::string(32, 'a')}};
    c.tensor_count = 1;
    for (int i = 0; i < 2; ++i) {
      ra::report::Trial trial;
      trial.repeat = i;
      trial.outcome = std::string(32, 'b');
      trial.wall_ms = 1.25 + i;
      trial.startup_ms = 0.5;
      c.trials.push_back(trial);
    }
    t.configs = {c};
    ra::report::ProbeFacts p;
    p.family = "scatter_index";
    p.op = "index_add";
    p.direction = "forward";
    p.role = std::string(name) == "sum.control" ? "control" : "probe";
    p.form = "x.index_add(0, idx, src)";
    p.knowledge_id = std::string(name) == "sum.control" ? "" : "index_add";
    p.documented = "raises";
    p.documented_device = "cuda";
    p.doc_row = "torch.Tensor.index_add_() when called on CUDA tensor";
    p.census = "stable";
    p.alerts = {"index_add_cuda_ does not have a deterministic implementation"};
    p.disagreements = {"documented to raise, measured stable"};
    if (std::string(name) == "sum.control")
      p.batch_classes = {{"default", {{1, 2, 3}, {4, 5, 257}}}, {"det", {{1, 2, 3, 4, 5, 257}}}};
    probes.targets.push_back({t, p});
  }
  ra::report::Census census;
  census.config = "det-warn";
  census.stable = {"index_add.forward", "sum.control"};
  census.not_run = {"embedding_bag.backward"};
  probes.census = census;
  r.body = probes;
  r.wall_ms = 321.5;
  ra::report::finalize(r);
  return r;
}

// An exec report: one command with its facts and one configuration.
ra::report::Report exec_report() {
  ra::report::Report r;
  r.tool_version = "0.1.0";
  r.command = {"repro-audit", "exec", "--", "python", "train.py"};
  r.environment = {{"torch", {{"version", "2.11.0"}}}};
  ra::report::Target t;
  t.name = "python train.py";
  t.path = "/usr/bin/python";
  t.device = "cpu";
  ra::report::ConfigResult c;
  c.name = "default";
  c.repeats = c.completed = 2;
  c.compared = ra::report::ExecCompared{0, 0};  // what exec records for a run that names no file
  t.configs = {c};
  ra::report::ExecFacts e;
  e.command = {"python", "train.py"};
  r.body = ra::report::ExecBody{{{t, e}}};
  ra::report::finalize(r);
  return r;
}

// A report of every kind, in the order of Body's alternatives.
std::vector<ra::report::Report> one_of_each_kind() {
  ra::report::Report invariance;
  ra::report::Invariance inv;
  inv.model = "m.pt2";
  inv.kind = "a torch.export archive";
  inv.device = "cpu";
  inv.sizes = "1,4";
  inv.control = {true, "passed"};
  invariance.body = inv;
  ra::report::finalize(invariance);
  ra::report::Report selftest;
  selftest.body = ra::report::SelfTest{};
  ra::report::finalize(selftest);
  std::vector<ra::report::Report> all = {ra::test::every_verdict_report(40), exec_report(), probes_report(), invariance,
                                         selftest};
  for (auto& r : all) r.environment = {{"torch", {{"version", "2.11.0"}}}};
  return all;
}

void expect_error(const json& j, const std::string& message) {
  try {
    ra::report::report_from_json(j);
    FAIL("no ReportError for: " << message);
  } catch (const ra::report::ReportError& e) {
    CHECK(std::string(e.what()) == message);
  }
}

}  // namespace

TEST_CASE("report_from_json: to_json(report_from_json(to_json(r))) is to_json(r), byte for byte") {
  SUBCASE("every verdict, trace, fix search with timings, dependence, restart-replay") {
    const auto r = ra::test::every_verdict_report(40);
    REQUIRE(std::get<ra::report::RunBody>(r.body).targets.front().facts.replay.has_value());
    CHECK(round_trip(r) == ra::report::render_json(r));
  }
  SUBCASE("probe facts and the census") {
    const auto r = probes_report();
    CHECK(round_trip(r) == ra::report::render_json(r));
  }
  SUBCASE("allowlist decisions") {
    auto r = ra::test::every_verdict_report(40);
    r.targets().front().configs.front().allowed_by =
        ra::report::AllowedBy{2, "known scatter in the loss", "2027-01-31"};
    r.allowlist_expired = {"allowlist entry 0 for aten::index_add expired on 2026-10-01"};
    const std::string text = round_trip(r);
    CHECK(text == ra::report::render_json(r));
    CHECK(text.find("known scatter in the loss") != std::string::npos);
  }
  SUBCASE("--repeats auto: the rule, what stopped each configuration, and a fix search's candidates") {
    auto r = ra::test::every_verdict_report(40);
    r.auto_repeats = ra::report::AutoRepeats{3, 12, 0.05};
    for (auto& c : r.targets().front().configs) {
      c.stopped_by = c.verdict == ra::report::Verdict::Diverged ? "divergence" : "max-repeats";
      if (c.fix_search) c.fix_search->repeats_auto = true;
    }
    const std::string text = round_trip(r);
    CHECK(text == ra::report::render_json(r));
    CHECK(text.find("\"detect_rate\": 0.05") != std::string::npos);
    CHECK(text.find("\"repeats_auto\": true") != std::string::npos);
    const auto back = ra::report::report_from_json(json::parse(text));
    CHECK(ra::report::render_text(back) == ra::report::render_text(r));
    CHECK(ra::report::render_text(r).find("repeats: auto, 3 to 12 runs per configuration") != std::string::npos);
  }
  SUBCASE("a baseline comparison") {
    auto r = ra::test::every_verdict_report(40);
    r.baseline = ra::test::sample_baseline();
    ra::report::finalize(r);
    const std::string text = round_trip(r);
    CHECK(text == ra::report::render_json(r));
    CHECK(text.find("\"status\": \"regression\"") != std::string::npos);
  }
  SUBCASE("the text summary, JUnit and Markdown of the read report are the original's") {
    auto with_baseline = ra::test::every_verdict_report(40);
    with_baseline.baseline = ra::test::sample_baseline();
    ra::report::finalize(with_baseline);
    for (const auto& r : {ra::test::every_verdict_report(40), probes_report(), with_baseline}) {
      const auto back = ra::report::report_from_json(json::parse(ra::report::render_json(r)));
      CHECK(ra::report::render_text(back) == ra::report::render_text(r));
      CHECK(ra::report::render_junit(back) == ra::report::render_junit(r));
      CHECK(ra::report::render_markdown(back) == ra::report::render_markdown(r));
    }
  }
}

TEST_CASE("report_from_json: target digests come back, and reports written before them read with none") {
  auto r = ra::test::every_verdict_report(40);
  r.targets().front().input_digest = "fedcba9876543210fedcba9876543210";
  const auto back = ra::report::report_from_json(to_json(r));
  CHECK(back.targets().front().model_digest == "0123456789abcdef0123456789abcdef");
  CHECK(back.targets().front().input_digest == "fedcba9876543210fedcba9876543210");
  json old = to_json(r);
  old["targets"][0].erase("model_digest");
  old["targets"][0].erase("input_digest");
  const auto read = ra::report::report_from_json(old);
  CHECK(read.targets().front().model_digest.empty());
  CHECK(read.targets().front().input_digest.empty());
}

TEST_CASE("report_from_json: timings and non-finite statistics come back") {
  const auto r = ra::test::every_verdict_report(40);
  const auto back = ra::report::report_from_json(to_json(r));
  REQUIRE(back.targets().size() == r.targets().size());
  const auto& c = back.targets().front().configs;
  REQUIRE(c.size() == r.targets().front().configs.size());
  for (size_t i = 0; i < c.size(); ++i)
    for (size_t k = 0; k < c[i].trials.size(); ++k) {
      CHECK(c[i].trials[k].wall_ms == r.targets().front().configs[i].trials[k].wall_ms);
      CHECK(c[i].trials[k].startup_ms == r.targets().front().configs[i].trials[k].startup_ms);
    }
  CHECK(back.wall_ms == r.wall_ms);

  auto nan = ra::test::every_verdict_report(40);
  nan.targets().front().configs.front().diverged_tensors = ra::test::run_facts(nan).replay->differing;
  nan.targets().front().configs.front().diverged_tensors.front().stats->max_abs_diff = std::nan("");
  const auto nan_back = ra::report::report_from_json(to_json(nan));
  CHECK(std::isnan(nan_back.targets().front().configs.front().diverged_tensors.front().stats->max_abs_diff));
}

TEST_CASE("report_from_json: children that shared a GPU are said in the timing section and the summaries") {
  // --jobs above the number of GPUs (issue 31): the timings include each other's work, so every
  // rendering says so, and a report read back says it again; a report without it says nothing.
  auto r = probes_report();
  CHECK(ra::report::render_json(r).find("contention") == std::string::npos);
  r.contention = "up to 4 children at once shared cuda:0; their timings include each other's work";
  const json j = to_json(r);
  CHECK(j["timing"]["contention"] == r.contention);
  CHECK(round_trip(r) == ra::report::render_json(r));
  const auto back = ra::report::report_from_json(j);
  CHECK(back.contention == r.contention);
  CHECK(ra::report::render_text(back).find("note: up to 4 children at once shared cuda:0") != std::string::npos);
  CHECK(ra::report::render_markdown(back).find("shared cuda:0") != std::string::npos);
  CHECK(ra::report::render_html(back).find("shared cuda:0") != std::string::npos);
  auto run = ra::test::every_verdict_report(40);
  run.contention = r.contention;
  CHECK(ra::report::render_text(run).find("note: up to 4 children") != std::string::npos);
}

TEST_CASE("report_from_json: errors name the schema, the version or the JSON path") {
  const json good = to_json(ra::test::every_verdict_report(40));
  json j = good;
  j["schema"] = "repro-audit/lint";
  expect_error(j, "not a repro-audit report (its schema is 'repro-audit/lint')");
  expect_error(json::array(), "not a repro-audit report (no \"schema\": \"repro-audit/report\")");
  j = good;
  j["schema_version"] = 2;
  expect_error(j, "report schema version 2 is not supported by this repro-audit (it reads version 1)");
  j = good;
  j["targets"][0]["configs"][1].erase("verdict");
  expect_error(j, "targets[0].configs[1].verdict: missing");
  j = good;
  j["targets"][0]["configs"][0]["trials"][0]["repeat"] = "zero";
  expect_error(j, "targets[0].configs[0].trials[0].repeat: expected an integer");
  j = good;
  j["targets"][0]["configs"][0]["verdict"] = "flaky";
  expect_error(j, "targets[0].configs[0].verdict: unknown verdict 'flaky'");
  j = to_json([] {
    auto r = ra::test::every_verdict_report(40);
    r.baseline = ra::test::sample_baseline();
    return r;
  }());
  j["baseline"]["results"][2]["status"] = "worse";
  expect_error(j, "baseline.results[2].status: unknown baseline status 'worse'");
  j = good;
  j["tool"] = "repro-audit";
  expect_error(j, "tool: expected an object");
  j = good;
  j["timing"]["trials"].erase(0);
  CHECK_THROWS_AS(ra::report::report_from_json(j), ra::report::ReportError);
}

TEST_CASE("report kind: one row per alternative, each written as \"kind\" and read back as itself by both readers") {
  using ra::report::kKinds;
  std::set<std::string_view> names;
  for (size_t i = 0; i < kKinds.size(); ++i) {
    CAPTURE(kKinds[i].name);
    names.insert(kKinds[i].name);
    const auto body = ra::report::body_of_kind(kKinds[i].name);
    REQUIRE(body.has_value());
    CHECK(body->index() == i);
    CHECK(ra::report::kind_of(*body).name == kKinds[i].name);
  }
  CHECK(names.size() == kKinds.size());
  CHECK_FALSE(ra::report::body_of_kind("model").has_value());

  const auto reports = one_of_each_kind();
  REQUIRE(reports.size() == kKinds.size());
  for (size_t i = 0; i < reports.size(); ++i) {
    const auto& r = reports[i];
    CAPTURE(kKinds[i].name);
    REQUIRE(r.body.index() == i);
    const json j = to_json(r);
    CHECK(j.at("kind") == std::string(kKinds[i].name));
    CHECK(ra::report::report_from_json(j).body.index() == i);
    CHECK(round_trip(r) == ra::report::render_json(r));
    const json b = ra::report::baseline_to_json(r);
    CHECK(b.at("kind") == std::string(kKinds[i].name));
    CHECK(ra::report::baseline_from_json(b).body.index() == i);
  }
}

TEST_CASE("report kind: a file without \"kind\" reads as before, by its keys (legacy_kind)") {
  for (const auto& r : one_of_each_kind()) {
    CAPTURE(ra::report::kind_of(r.body).name);
    json j = to_json(r);
    j.erase("kind");
    const auto back = ra::report::report_from_json(j);
    CHECK(back.body.index() == r.body.index());
    CHECK(ra::report::render_text(back) == ra::report::render_text(r));
    // A self-test's baseline holds neither targets nor a section: only its "kind" tells it from a run's.
    if (std::holds_alternative<ra::report::SelfTest>(r.body)) continue;
    json b = ra::report::baseline_to_json(r);
    b.erase("kind");
    CHECK(ra::report::baseline_from_json(b).body.index() == r.body.index());
  }
  // An exec report and a probes report are their own kinds, not a run with facts.
  const auto exec = ra::report::report_from_json(to_json(exec_report()));
  REQUIRE(std::holds_alternative<ra::report::ExecBody>(exec.body));
  CHECK(std::get<ra::report::ExecBody>(exec.body).targets.front().facts.command.size() == 2);
  const auto probes = ra::report::report_from_json(to_json(probes_report()));
  REQUIRE(std::holds_alternative<ra::report::ProbesBody>(probes.body));
  CHECK(std::get<ra::report::ProbesBody>(probes.body).targets.size() == 2);
}

TEST_CASE("report kind: an unknown kind is refused with its name by both readers, never read as a run") {
  const std::string message =
      "kind: 'census-v2' is not a kind this repro-audit reads (it reads run, exec, probes, invariance, selftest)";
  json j = to_json(ra::test::every_verdict_report(40));
  j["kind"] = "census-v2";
  expect_error(j, message);
  j["kind"] = 3;
  expect_error(j, "kind: expected a string");
  json b = ra::report::baseline_to_json(one_of_each_kind().front());
  b["kind"] = "census-v2";
  CHECK_THROWS_WITH_AS(ra::report::baseline_from_json(b), message.c_str(), ra::report::ReportError);
  // A kind that does not match its targets is named too: a probe's target in a run file.
  j = to_json(probes_report());
  j["kind"] = "run";
  CHECK_THROWS_WITH_AS(ra::report::report_from_json(j),
                       doctest::Contains("'probe' in a file whose targets are 'model'"), ra::report::ReportError);
}
