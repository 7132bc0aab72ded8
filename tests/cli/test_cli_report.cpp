// SPDX-License-Identifier: Apache-2.0
// `repro-audit report IN.json` end to end: re-rendering a saved report gives the files and the
// summary the audit itself gave, byte for byte; bad inputs exit 3 with one line and write nothing.
// The JSON reports written here go to RA_REPORT_DIR, where the report_schema test validates them;
// the HTML reports go next to them (run-traced.html beside run-traced.json, ...), where the
// html_chromium test loads each in a browser and checks it against its JSON.
#include "tests/cli/harness.h"

// torch before doctest: c10 defines a CHECK macro that doctest must override.
#include <torch/script.h>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using ra::test::run_cli;

namespace {

void spit(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// A path under RA_REPORT_DIR, removed first so that a stale file never validates.
std::string report_out(const std::string& name) {
  std::filesystem::create_directories(RA_REPORT_DIR);
  const std::string path = std::string(RA_REPORT_DIR) + "/" + name;
  std::filesystem::remove(path);
  return path;
}

// Re-renders `saved` (written by an audit whose stdout was `audit_out`, with JUnit `junit`,
// Markdown `markdown` and HTML `html`) and checks that everything comes back byte for byte.
void check_rerender(const ra::test::TempDir& dir, const std::string& saved, const std::string& audit_out,
                    const std::string& junit, const std::string& markdown, const std::string& html, int code,
                    const std::string& copy) {
  const auto r = run_cli({"report", saved, "--junit", dir.file("b.xml"), "--markdown", dir.file("b.md"), "--html",
                          dir.file("b.html"), "--report", copy});
  CAPTURE(r.err);
  CHECK(r.code == code);
  CHECK(r.err.empty());
  CHECK(r.out == audit_out);
  CHECK(ra::test::read_file(dir.file("b.xml")) == ra::test::read_file(junit));
  CHECK(ra::test::read_file(dir.file("b.md")) == ra::test::read_file(markdown));
  REQUIRE(!ra::test::read_file(html).empty());
  CHECK(ra::test::read_file(dir.file("b.html")) == ra::test::read_file(html));
  CHECK(ra::test::read_file(copy) == ra::test::read_file(saved));
  const auto json = run_cli({"report", saved, "--json"});
  CHECK(json.code == code);
  CHECK(json.out == ra::test::read_file(saved));
}

}  // namespace

TEST_CASE("report: a traced run with a fix search re-renders byte for byte") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("nd.pt"), ra::test::kNondetSumModel, {{"w", {64, 4096}}});
  const std::string saved = report_out("run-traced.json");
  const std::string html = report_out("run-traced.html");
  const auto run = run_cli({"run",
                            dir.file("nd.pt"),
                            "--shape",
                            "8x64",
                            "--configs",
                            "default",
                            "--repeats",
                            "3",
                            "--trace",
                            "--load-library",
                            ra::test::test_ops_library(),
                            "--report",
                            saved,
                            "--junit",
                            dir.file("a.xml"),
                            "--markdown",
                            dir.file("a.md"),
                            "--html",
                            html,
                            "--quiet"});
  REQUIRE(run.code == 1);
  check_rerender(dir, saved, run.out, dir.file("a.xml"), dir.file("a.md"), html, 1, report_out("report-traced.json"));
}

TEST_CASE("report: a reproducible train-mode run with restart-replay re-renders byte for byte") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), ra::test::kLinearReluModel, {{"w", {16, 8}}});
  const std::string saved = report_out("run-replay.json");
  const std::string html = report_out("run-replay.html");
  const auto run =
      run_cli({"run",    dir.file("m.pt"), "--shape",         "4x16",        "--mode",         "train",  "--steps",
               "2",      "--replay",       "--configs",       "default,det", "--repeats",      "2",      "--report",
               saved,    "--junit",        dir.file("a.xml"), "--markdown",  dir.file("a.md"), "--html", html,
               "--quiet"});
  REQUIRE(run.code == 0);
  check_rerender(dir, saved, run.out, dir.file("a.xml"), dir.file("a.md"), html, 0, report_out("report-replay.json"));
}

TEST_CASE("report: a probes report (probe facts, census) re-renders byte for byte") {
  ra::test::TempDir dir;
  const std::string saved = report_out("probes.json");
  const std::string html = report_out("probes.html");
  const auto run = run_cli({"probes", "--load-library", ra::test::test_ops_library(), "--only",
                            "test.nondet-sum,test.stable", "--configs", "default", "--repeats", "2", "--report", saved,
                            "--junit", dir.file("a.xml"), "--markdown", dir.file("a.md"), "--html", html, "--quiet"});
  REQUIRE(run.code == 1);
  check_rerender(dir, saved, run.out, dir.file("a.xml"), dir.file("a.md"), html, 1, report_out("report-probes.json"));
}

TEST_CASE("report: a missing file, not JSON, another version or a lint report exit 3 and write nothing") {
  ra::test::TempDir dir;
  const auto bad = [&](const std::string& in, const std::string& message) {
    ra::test::expect_error(
        dir, {"report", in, "--junit", dir.file("b.xml"), "--markdown", dir.file("b.md"), "--html", dir.file("b.html")},
        3, message);
    CHECK(!ra::test::file_exists(dir.file("b.xml")));
    CHECK(!ra::test::file_exists(dir.file("b.md")));
    CHECK(!ra::test::file_exists(dir.file("b.html")));
  };
  bad(dir.file("missing.json"), "missing.json");
  spit(dir.file("bad.json"), "{\"schema\": ");
  bad(dir.file("bad.json"), "bad.json is not valid JSON: ");
  spit(dir.file("v99.json"), "{\"schema\": \"repro-audit/report\", \"schema_version\": 99}\n");
  bad(dir.file("v99.json"), "report schema version 99 is not supported by this repro-audit (it reads version 1)");
  ra::test::save_model(dir.file("m.pt"), ra::test::kLinearReluModel, {{"w", {16, 8}}});
  run_cli({"lint", dir.file("m.pt"), "--knowledge", RA_SOURCE_KNOWLEDGE, "--report", dir.file("lint.json"), "--quiet"});
  REQUIRE(ra::test::file_exists(dir.file("lint.json")));
  bad(dir.file("lint.json"), "not a repro-audit report (its schema is 'repro-audit/lint')");
  spit(dir.file("field.json"), "{\"schema\": \"repro-audit/report\", \"schema_version\": 1, \"tool\": {}}\n");
  bad(dir.file("field.json"), "field.json: tool.version: missing");
}

TEST_CASE("report: an unwritable output folder is a usage error before anything is read") {
  ra::test::TempDir dir;
  ra::test::expect_error(dir, {"report", dir.file("missing.json"), "--junit", "/dev/null/missing/j.xml"}, 2,
                         "cannot create folder '/dev/null'");
  ra::test::expect_error(dir, {"report", dir.file("missing.json"), "--html", "/dev/null/missing/r.html"}, 2,
                         "cannot write report '/dev/null/missing/r.html'");
}
