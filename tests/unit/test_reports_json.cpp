// SPDX-License-Identifier: Apache-2.0
#include "reports/render.h"
#include "tests/unit/report_samples.h"

#include <doctest/doctest.h>

namespace {

ra::report::Report sample(double wall_ms) {
  ra::report::Report r;
  r.tool_version = "0.1.0";
  r.command = {"repro-audit", "run", "m.pt"};
  r.environment = {{"torch", {{"version", "2.11.0"}}}};
  ra::report::Target t;
  t.name = "m.pt";
  t.device = "cpu";
  ra::report::ConfigResult c;
  c.name = "default";
  c.verdict = ra::report::Verdict::Diverged;
  ra::report::Trial trial;
  trial.wall_ms = wall_ms;
  trial.startup_ms = wall_ms / 2;
  c.trials = {trial};
  t.configs = {c};
  r.body = ra::test::body_of<ra::report::RunBody>({t});
  r.wall_ms = wall_ms;
  ra::report::finalize(r);
  return r;
}

}  // namespace

TEST_CASE("finalize: exit code precedence") {
  auto r = sample(1);
  CHECK(r.exit_code == 1);
  r.targets()[0].configs[0].verdict = ra::report::Verdict::Timeout;
  ra::report::finalize(r);
  CHECK(r.exit_code == 4);
  r.targets()[0].configs.push_back(r.targets()[0].configs[0]);
  r.targets()[0].configs[1].verdict = ra::report::Verdict::Raised;
  ra::report::finalize(r);
  CHECK(r.exit_code == 1);
  r.targets()[0].configs = {r.targets()[0].configs[0]};
  r.targets()[0].configs[0].verdict = ra::report::Verdict::Skipped;
  ra::report::finalize(r);
  CHECK(r.exit_code == 0);
  CHECK(r.targets()[0].verdict == ra::report::Verdict::Skipped);
}

TEST_CASE("render_json: same results give the same bytes apart from the timing section") {
  auto a = ra::report::to_json(sample(10)), b = ra::report::to_json(sample(99));
  CHECK(a != b);
  CHECK(a["timing"]["wall_ms"] == 10.0);
  a.erase("timing");
  b.erase("timing");
  CHECK(a.dump() == b.dump());
  CHECK(a["schema_version"] == ra::report::kSchemaVersion);
  CHECK(a["targets"][0]["configs"][0]["verdict"] == "diverged");
}

TEST_CASE("to_json: the trace of a configuration") {
  auto r = sample(1);
  CHECK(ra::report::to_json(r)["targets"][0]["configs"][0]["trace"].is_null());
  r.targets()[0].configs[0].trace = ra::test::sample_trace();
  const auto j = ra::report::to_json(r);
  const auto& t = j["targets"][0]["configs"][0]["trace"];
  CHECK(t["records"] == 120);
  CHECK(t["memory_bytes"] == 4096);
  CHECK(t["runs_compared"] == 2);
  CHECK(t["runs_identical"] == 0);
  REQUIRE(t["root_causes"].size() == 1);
  const auto& rc = t["root_causes"][0];
  CHECK(rc["op"] == "aten::index_add");
  CHECK(rc["direction"] == "backward");
  CHECK(rc["node"] == "IndexAddBackward0");
  CHECK(rc["forward_op"] == "aten::index_add");
  CHECK(rc["source"] == "model.py:5");
  CHECK(rc["position"] == 77);
  CHECK(rc["differing_outputs"] == nlohmann::json::array({0}));
  CHECK(rc["repeats"] == nlohmann::json::array({1, 2}));
  CHECK(rc["propagated"] == 14);
  CHECK(rc["stats"].is_null());
  REQUIRE(t["splits"].size() == 1);
  CHECK(t["splits"][0]["reference_op"].is_null());
  CHECK(t["splits"][0]["other_op"] == "aten::contiguous");
  CHECK(t["splits"][0]["unmatched_other"] == 1);
  // Deterministic: nothing of the trace is under timing, and the bytes do not depend on it.
  auto a = ra::report::to_json(r);
  r.wall_ms = 77;
  auto b = ra::report::to_json(r);
  a.erase("timing");
  b.erase("timing");
  CHECK(a.dump() == b.dump());
}

TEST_CASE("finalize: a restart-replay that diverged exits 1, one that crashed exits 4, inconclusive changes nothing") {
  auto r = sample(1);
  r.targets()[0].configs[0].verdict = ra::report::Verdict::Reproducible;
  ra::test::run_facts(r).replay = ra::report::Replay{};
  ra::test::run_facts(r).replay->verdict = ra::report::ReplayVerdict::Inconclusive;
  ra::report::finalize(r);
  CHECK(r.exit_code == 0);
  ra::test::run_facts(r).replay->verdict = ra::report::ReplayVerdict::Crashed;
  ra::report::finalize(r);
  CHECK(r.exit_code == 4);
  CHECK(r.targets()[0].verdict == ra::report::Verdict::Crashed);
  ra::test::run_facts(r).replay->verdict = ra::report::ReplayVerdict::Diverged;
  ra::report::finalize(r);
  CHECK(r.exit_code == 1);
  CHECK(r.verdict == ra::report::Verdict::Diverged);
  ra::test::run_facts(r).replay->verdict = ra::report::ReplayVerdict::Reproducible;
  r.targets()[0].configs[0].verdict = ra::report::Verdict::Timeout;
  ra::report::finalize(r);
  CHECK(r.exit_code == 4);
}

TEST_CASE("to_json: the optimizer of a train-mode target, and the replay only when it ran") {
  auto r = sample(1);
  auto j = ra::report::to_json(r);
  CHECK(j["targets"][0]["optimizer"].is_null());
  CHECK(!j["targets"][0].contains("replay"));
  r.targets()[0].mode = "train";
  ra::test::run_facts(r).optimizer = "adam";
  ra::test::run_facts(r).lr = 0.001;
  ra::report::Replay replay;
  replay.config = "default";
  replay.steps_before = 2;
  replay.steps_after = 3;
  replay.omit = {"rng"};
  replay.verdict = ra::report::ReplayVerdict::Diverged;
  replay.reason = "the CPU generator state after restore differs";
  replay.components = {{"generator/cpu", "the CPU generator state", 1, false, true, false, {"generator/cpu"}}};
  replay.tensors_compared = 12;
  replay.differing = {{"step3/output", "float32", {2}, "a", "b", 1, std::nullopt}};
  ra::test::run_facts(r).replay = replay;
  j = ra::report::to_json(r);
  CHECK(j["targets"][0]["optimizer"] == nlohmann::ordered_json({{"name", "adam"}, {"lr", 0.001}}));
  const auto& jr = j["targets"][0]["replay"];
  CHECK(jr["verdict"] == "diverged");
  CHECK(jr["steps_after"] == 3);
  CHECK(jr["components"][0]["in_checkpoint"] == false);
  CHECK(jr["components"][0]["restored_match"] == false);
  CHECK(jr["differing_tensors"][0]["name"] == "step3/output");
  const std::string text = ra::report::render_text(r);
  CHECK(text.find("restart-replay under default (2 steps, checkpoint, 3 more in a fresh process, --replay-omit rng): "
                  "diverged") != std::string::npos);
  CHECK(text.find("generator/cpu differs (not in the checkpoint)") != std::string::npos);
}
