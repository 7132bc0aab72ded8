// SPDX-License-Identifier: Apache-2.0
// `--html FILE` on run and probes end to end: the page is written atomically, its folder is checked
// before any work, and two audits with the same results write the same bytes outside the timing
// markers. (`report IN.json --html` giving the audit's page back byte for byte is in
// test_cli_report.cpp; the html_chromium test loads the pages in a browser.)
#include "tests/cli/harness.h"

// torch before doctest: c10 defines a CHECK macro that doctest must override.
#include <torch/script.h>

#include <doctest/doctest.h>

using ra::test::run_cli;

namespace {

// The page without the block from "<!-- timing:begin -->" through "<!-- timing:end -->".
std::string without_timing(const std::string& page) {
  const std::string begin = "<!-- timing:begin -->\n", end = "<!-- timing:end -->\n";
  const size_t b = page.find(begin), e = page.find(end);
  REQUIRE(b != std::string::npos);
  REQUIRE(e != std::string::npos);
  REQUIRE(b < e);
  CHECK(page.find(begin, b + 1) == std::string::npos);
  CHECK(page.find(end, e + 1) == std::string::npos);
  return page.substr(0, b) + page.substr(e + end.size());
}

}  // namespace

TEST_CASE("run --html: two audits with the same results write the same page outside the timing block") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), ra::test::kLinearReluModel, {{"w", {16, 8}}});
  const std::vector<std::string> args = {"run",       dir.file("m.pt"),   "--shape",   "4x16",
                                         "--configs", "default,det",      "--repeats", "2",
                                         "--html",    dir.file("r.html"), "--quiet"};
  const auto first = run_cli(args);
  REQUIRE(first.code == 0);
  const std::string a = ra::test::read_file(dir.file("r.html"));
  const auto second = run_cli(args);
  REQUIRE(second.code == 0);
  const std::string b = ra::test::read_file(dir.file("r.html"));
  CHECK(a.rfind("<!DOCTYPE html>\n", 0) == 0);
  CHECK(
      a.find(
          "<section id=\"verdict\" class=\"banner v-reproducible\" data-verdict=\"reproducible\" data-exit-code=\"0\" "
          "data-targets=\"1\" data-cells=\"2\">") != std::string::npos);
  CHECK(a.find("<tr class=\"hm-row\" data-index=\"0\" data-target=\"m.pt\" data-verdict=\"reproducible\">") !=
        std::string::npos);
  CHECK(without_timing(a) == without_timing(b));
}

TEST_CASE("probes --html: the probe suite's page has a row and a cell per probe and configuration") {
  ra::test::TempDir dir;
  const auto r =
      run_cli({"probes", "--load-library", ra::test::test_ops_library(), "--only", "test.stable", "--configs",
               "default,threads-1", "--repeats", "2", "--no-census", "--html", dir.file("p.html"), "--quiet"});
  REQUIRE(r.code == 0);
  const std::string h = ra::test::read_file(dir.file("p.html"));
  CHECK(h.find("data-target=\"test.stable\" data-verdict=\"reproducible\"") != std::string::npos);
  CHECK(h.find("<td class=\"hm-cell\" data-verdict=\"reproducible\" data-config=\"default\">") != std::string::npos);
  CHECK(h.find("<td class=\"hm-cell\" data-verdict=\"reproducible\" data-config=\"threads-1\">") != std::string::npos);
  CHECK(h.find("<tr class=\"probe-fact\">") != std::string::npos);
}

TEST_CASE("run --html: the folder is checked before any work") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), ra::test::kLinearReluModel, {{"w", {16, 8}}});
  ra::test::expect_error(
      dir,
      {"run", dir.file("m.pt"), "--shape", "4x16", "--markdown", dir.file("s.md"), "--html", dir.file("m.pt/r.html")},
      2, "cannot write report '" + dir.file("m.pt/r.html") + "': cannot create folder");
  CHECK(!ra::test::file_exists(dir.file("s.md")));
  ra::test::expect_error(dir, {"probes", "--html", dir.file("m.pt/p.html")}, 2, "cannot create folder");
  // A folder that does not exist yet is created, as `mkdir -p` would.
  const auto made = run_cli({"run", dir.file("m.pt"), "--shape", "4x16", "--configs", "default", "--repeats", "2",
                             "--quiet", "--html", dir.file("new/deeper/r.html"), "--report", dir.file("new/r.json")});
  CHECK(made.code == 0);
  CHECK(ra::test::file_exists(dir.file("new/deeper/r.html")));
  CHECK(ra::test::file_exists(dir.file("new/r.json")));
}
