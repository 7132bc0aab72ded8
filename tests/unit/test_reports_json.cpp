// SPDX-License-Identifier: Apache-2.0
#include "reports/render.h"

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
  r.targets = {t};
  r.wall_ms = wall_ms;
  ra::report::finalize(r);
  return r;
}

}  // namespace

TEST_CASE("finalize: exit code precedence") {
  auto r = sample(1);
  CHECK(r.exit_code == 1);
  r.targets[0].configs[0].verdict = ra::report::Verdict::Timeout;
  ra::report::finalize(r);
  CHECK(r.exit_code == 4);
  r.targets[0].configs.push_back(r.targets[0].configs[0]);
  r.targets[0].configs[1].verdict = ra::report::Verdict::Raised;
  ra::report::finalize(r);
  CHECK(r.exit_code == 1);
  r.targets[0].configs = {r.targets[0].configs[0]};
  r.targets[0].configs[0].verdict = ra::report::Verdict::Skipped;
  ra::report::finalize(r);
  CHECK(r.exit_code == 0);
  CHECK(r.targets[0].verdict == ra::report::Verdict::Skipped);
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
