// SPDX-License-Identifier: Apache-2.0
// Hostile names and documents through the binary (issue 18): paths that are not UTF-8, target
// names with terminal control characters, reports whose stored verdict or exit code lies, and
// baselines that must not depend on where they were written. The crafted torch.save files are in
// tests/hostile/test_hostile_files.py.
#include "tests/cli/harness.h"

// torch before doctest: c10 defines a CHECK macro that doctest must override.
#include <ATen/ATen.h>

#include <doctest/doctest.h>

#include <fstream>

namespace {

using ra::test::run_cli;
using ra::test::TempDir;

void save_linear(const std::string& path) { ra::test::save_model(path, ra::test::kLinearReluModel, {{"w", {4, 3}}}); }

bool has_byte(const std::string& text, char c) { return text.find(c) != std::string::npos; }

}  // namespace

TEST_CASE("run: model and input paths that are not UTF-8 are carried exactly and shown escaped") {
  TempDir dir;
  const std::string model = dir.file("caf\xe9.pt"), input = dir.file("in\xff.pt");
  save_linear(model);
  ra::test::save_value(input, at::randn({2, 4}));
  const auto r = run_cli({"run", model, "--input", input, "--repeats", "2", "--report", dir.file("r.json"),
                          "--markdown", dir.file("r.md")});
  CHECK(r.code == 0);
  CHECK(r.err.find("internal error") == std::string::npos);
  CHECK(r.out.find("caf\\xe9.pt") != std::string::npos);
  CHECK(!has_byte(r.out, '\xe9'));
  const auto j = ra::test::read_json(dir.file("r.json"));  // valid JSON, so valid UTF-8
  CHECK(j["targets"][0]["name"].get<std::string>().find("caf\\xe9.pt") != std::string::npos);
  CHECK(j["targets"][0]["configs"][0]["verdict"] == "reproducible");
  // `report` reads it back and renders it again.
  CHECK(run_cli({"report", dir.file("r.json")}).code == 0);
}

TEST_CASE("text and Markdown show ESC and NUL in target names escaped, as HTML and JUnit do") {
  TempDir dir;
  const std::string model = dir.file("m\x1b[31mred\x7f.pt");
  save_linear(model);
  const auto r = run_cli({"run", model, "--shape", "1x4", "--repeats", "2", "--markdown", dir.file("r.md"), "--report",
                          dir.file("r.json")});
  CHECK(r.code == 0);
  CHECK(!has_byte(r.out, '\x1b'));
  CHECK(!has_byte(r.out, '\x7f'));
  CHECK(r.out.find("m\\x1b[31mred\\x7f.pt") != std::string::npos);
  const std::string md = ra::test::read_file(dir.file("r.md"));
  CHECK(!has_byte(md, '\x1b'));
  CHECK(md.find("\\x1b") != std::string::npos);
  const auto again = run_cli({"report", dir.file("r.json")});
  CHECK(!has_byte(again.out, '\x1b'));
}

TEST_CASE("report: the exit code and verdict are recomputed from the targets; a stored one that disagrees is refused") {
  TempDir dir;
  save_linear(dir.file("m.pt"));
  REQUIRE(run_cli({"run", dir.file("m.pt"), "--shape", "1x4", "--repeats", "2", "--report", dir.file("r.json")}).code ==
          0);
  const auto good = ra::test::read_json(dir.file("r.json"));
  struct Case {
    const char* name;
    nlohmann::json patch;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"256", {{"exit_code", 256}}, "exit_code: 256 disagrees with the report's verdicts, which give exit code 0"},
      {"999", {{"exit_code", 999}}, "exit_code: 999 disagrees"},
      {"lie", {{"verdict", "diverged"}, {"exit_code", 0}}, "verdict: 'diverged' disagrees with the targets' verdicts"},
      {"env", {{"environment", nlohmann::json::array()}}, "environment: expected an object"},
  };
  for (const auto& c : cases) {
    nlohmann::json j = good;
    j.merge_patch(c.patch);
    const std::string path = dir.file(std::string(c.name) + ".json");
    std::ofstream(path) << j.dump();
    CAPTURE(c.name);
    ra::test::expect_error(dir, {"report", path}, 3, c.message);
    ra::test::expect_error(dir, {"compare", path, dir.file("r.json")}, 3, c.message);
  }
}

TEST_CASE("baselines are path-free: two identical audits saved under different names are byte-identical") {
  TempDir dir;
  save_linear(dir.file("m.pt"));
  for (const char* name : {"first-baseline.json", "second.json"})
    REQUIRE(run_cli({"run", dir.file("m.pt"), "--shape", "1x4", "--repeats", "2", "--save-baseline", dir.file(name),
                     "--report", dir.file(std::string(name) + ".report.json")})
                .code == 0);
  const std::string a = ra::test::read_file(dir.file("first-baseline.json"));
  CHECK(!a.empty());
  CHECK(a == ra::test::read_file(dir.file("second.json")));
  CHECK(a.find(dir.file("")) == std::string::npos);  // no path of this test's folder
  // And it still works as a baseline.
  CHECK(run_cli({"run", dir.file("m.pt"), "--shape", "1x4", "--repeats", "2", "--baseline", dir.file("second.json")})
            .code == 0);
}

TEST_CASE("options: out-of-range and malformed values are usage errors that say what the option takes") {
  TempDir dir;
  save_linear(dir.file("m.pt"));
  const std::string m = dir.file("m.pt");
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const std::vector<Case> cases = {
      {{"--seed", "-1"}, "--seed: expected an integer from 0 to 18446744073709551615, got '-1'"},
      {{"--seed", "18446744073709551616"}, "--seed: expected an integer from 0 to 18446744073709551615"},
      {{"--seed", "1e20"}, "got '1e20'"},
      {{"--timeout", "1e10"}, "--timeout: expected a number of seconds above 0 and at most 604800, got '1e10'"},
      {{"--timeout", "nan"}, "got 'nan'"},
      {{"--repeats", "0"}, "--repeats: expected a count from 1 to 1000000 or 'auto', got '0'"},
      {{"--jobs", "0"}, "--jobs: expected an integer from 1 to 4096"},
      // An empty value after '=' used to swallow the next argument (a report named "--zzz=1").
      {{"--report=", "--zzz=1"}, "--report has an empty value"},
      {{"--markdown=", dir.file("x.md")}, "--markdown has an empty value"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"run", m, "--shape", "1x4"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CAPTURE(c.message);
    ra::test::expect_error(dir, args, 2, c.message);
  }
  CHECK(!ra::test::file_exists("--zzz=1"));
  CHECK(!ra::test::file_exists(dir.file("x.md")));
  for (const char* cmd : {"probes", "report", "compare", "diff", "lint"}) {
    const auto r = run_cli({cmd, "--report=", dir.file("r.json")});
    CHECK(r.code == 2);
    CHECK(r.err.find("--report has an empty value") != std::string::npos);
  }
}

TEST_CASE("options: --jobs above the CPU count is capped with a warning; REPRO_AUDIT_TODAY is checked whenever set") {
  TempDir dir;
  save_linear(dir.file("m.pt"));
  const auto r = run_cli({"run", dir.file("m.pt"), "--shape", "1x4", "--repeats", "2", "--jobs", "1000"});
  CHECK(r.code == 0);
  CHECK(r.err.find("--jobs 1000 is more than this machine's") != std::string::npos);
  setenv("REPRO_AUDIT_TODAY", "tomorrow", 1);
  ra::test::expect_error(dir, {"run", dir.file("m.pt"), "--shape", "1x4"}, 2,
                         "REPRO_AUDIT_TODAY must be a date YYYY-MM-DD, not 'tomorrow'");
  unsetenv("REPRO_AUDIT_TODAY");
}
