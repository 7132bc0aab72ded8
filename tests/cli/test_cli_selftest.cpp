// SPDX-License-Identifier: Apache-2.0
// `repro-audit selftest --device cpu` through the binary: every check passes on a working machine,
// the report is a normal one (schema-valid, read back by `report` and `compare`, every format),
// and a missing GPU is a usage error before any work. The JSON, HTML and JUnit files go to
// RA_REPORT_DIR and RA_JUNIT_DIR for the schema and Chromium tests.
#include "tests/cli/harness.h"

#include <doctest/doctest.h>

#include <string>

using ra::test::run_cli;

using ra::test::fresh;

TEST_CASE("selftest --device cpu: six checks pass, one line each, in a report every subcommand reads") {
  ra::test::TempDir dir;
  const std::string json = fresh(RA_REPORT_DIR, "selftest.json"), html = fresh(RA_REPORT_DIR, "selftest.html");
  const std::string junit = fresh(RA_JUNIT_DIR, "selftest.xml");
  const auto r = run_cli({"selftest", "--device", "cpu", "--report", json, "--html", html, "--junit", junit,
                          "--markdown", dir.file("selftest.md")});
  INFO(r.out, r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.rfind("repro-audit selftest on cpu\n", 0) == 0);
  for (const char* check : {"digests", "switches", "detection", "fingerprint", "invariance", "tracing"})
    CHECK(r.out.find(std::string("  pass  ") + check) != std::string::npos);
  CHECK(r.out.find("selftest: all 6 checks passed (exit 0)\n") != std::string::npos);
  CHECK(ra::test::count_lines(r.out) == 8);

  const nlohmann::json rep = ra::test::read_json(json);
  CHECK(rep["schema"] == "repro-audit/report");
  CHECK(rep["targets"].empty());
  CHECK(rep["exit_code"] == 0);
  CHECK(rep["selftest"]["device"] == "cpu");
  REQUIRE(rep["selftest"]["checks"].size() == 6);
  for (const auto& c : rep["selftest"]["checks"]) CHECK(c["passed"] == true);
  // The evidence says what was measured, not only that it passed.
  CHECK(rep["selftest"]["checks"][2]["evidence"].get<std::string>().find(
            "index_put.accumulate diverged under default") == 0);
  CHECK(rep["selftest"]["checks"][5]["evidence"].get<std::string>().find("backward: aten::") != std::string::npos);
  // Batch invariance: a real positive where Python finds a Linear row variant on this machine.
  const std::string invariance = rep["selftest"]["checks"][4]["evidence"].get<std::string>();
  const bool linear_variant = ra::test::python_batch_classes({"linear"})["linear"].size() > 1;
  CHECK(invariance.find(linear_variant ? "a Linear row differed in-process" : "a Linear row kept its bits") == 0);
  CHECK(invariance.find("batch.layer_norm invariant") != std::string::npos);
  CHECK(rep["environment"]["torch"]["version"] == ra::test::python_torch_version());

  // `report` re-renders it as the run printed it; `compare` of two self-tests lists what differs.
  const auto again = run_cli({"report", json});
  CHECK(again.code == 0);
  CHECK(again.out == r.out);
  const auto compared = run_cli({"compare", json, json});
  CHECK(compared.code == 0);
  CHECK(compared.out.find("environment: unchanged") != std::string::npos);
  CHECK(ra::test::read_file(dir.file("selftest.md"))
            .find("## repro-audit selftest on cpu: all 6 checks passed (exit 0)") == 0);
  CHECK(ra::test::read_file(junit).find("<testsuite name=\"selftest\" tests=\"6\" failures=\"0\"") !=
        std::string::npos);
}

TEST_CASE("selftest: a device that is not there, or not a device, is a usage error before any work") {
  ra::test::TempDir dir;
  ra::test::expect_error(dir, {"selftest", "--device", "cuda"}, 2, "this machine has no CUDA device");
  ra::test::expect_error(dir, {"selftest", "--device", "tpu"}, 2, "unknown device 'tpu'");
  ra::test::expect_error(dir, {"selftest", "--device", "cpu", "--jobs", "0"}, 2, "--jobs");
}
