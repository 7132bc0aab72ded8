// SPDX-License-Identifier: Apache-2.0
// The tool's own output is deterministic: two audits with the same results write byte-identical
// JSON, HTML, JUnit and Markdown, apart from their separated timing sections (JSON: the last
// top-level key "timing"; HTML and Markdown: the block between the kTimingBegin and kTimingEnd
// lines; JUnit has none).
#include "reports/render.h"
#include "tests/cli/harness.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

using ra::test::run_cli;

struct Outputs {
  std::string json, html, junit, markdown;
};

// The JSON report without its "timing" object, which must be its last key.
std::string json_without_timing(const std::string& s) {
  const size_t at = s.find(",\n  \"timing\": {");
  REQUIRE(at != std::string::npos);
  CHECK(s.find("\n  \"timing\"", at + 2) == std::string::npos);
  CHECK(s.substr(s.rfind("\n  }\n}")) == "\n  }\n}\n");  // timing closes the document
  return s.substr(0, at);
}

// `s` without the part from `begin` to `end` (inclusive), which must occur exactly once.
std::string without_section(const std::string& s, const std::string& begin, const std::string& end) {
  const size_t b = s.find(begin);
  REQUIRE(b != std::string::npos);
  const size_t e = s.find(end, b);
  REQUIRE(e != std::string::npos);
  CHECK(s.find(begin, b + 1) == std::string::npos);
  return s.substr(0, b) + s.substr(e + end.size());
}

// Runs the audit with every report flag, writing to the same file names each time (the command
// line is part of the report), and returns what it wrote.
Outputs audit(const ra::test::TempDir& dir, std::vector<std::string> args, int code) {
  for (const auto& [flag, name] : std::vector<std::pair<std::string, std::string>>{
           {"--report", "r.json"}, {"--html", "r.html"}, {"--junit", "r.xml"}, {"--markdown", "r.md"}})
    args.insert(args.end(), {flag, dir.file(name)});
  args.push_back("--quiet");
  const auto r = run_cli(args);
  CHECK_MESSAGE(r.code == code, r.err);
  return {ra::test::read_file(dir.file("r.json")), ra::test::read_file(dir.file("r.html")),
          ra::test::read_file(dir.file("r.xml")), ra::test::read_file(dir.file("r.md"))};
}

// Equal, or a failure that shows where the two documents part.
void check_equal(const char* what, const std::string& a, const std::string& b) {
  const auto [pa, pb] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  if (pa == a.end() && pb == b.end()) return;
  const size_t at = static_cast<size_t>(pa - a.begin());
  const size_t from = at > 200 ? at - 200 : 0;
  FAIL_CHECK(what << " differ at byte " << at << ":\n"
                  << a.substr(from, 300) << "\n---- vs ----\n"
                  << b.substr(from, 300));
}

void check_same_apart_from_timing(const Outputs& a, const Outputs& b) {
  REQUIRE(!a.json.empty());
  check_equal("JSON reports", json_without_timing(a.json), json_without_timing(b.json));
  check_equal("HTML pages", without_section(a.html, ra::report::kTimingBegin, ra::report::kTimingEnd),
              without_section(b.html, ra::report::kTimingBegin, ra::report::kTimingEnd));
  check_equal("JUnit files", a.junit, b.junit);
  check_equal("Markdown summaries", without_section(a.markdown, ra::report::kTimingBegin, ra::report::kTimingEnd),
              without_section(b.markdown, ra::report::kTimingBegin, ra::report::kTimingEnd));
  // The timing sections hold real measurements, so they do differ between two audits.
  CHECK(a.json != b.json);
  CHECK(a.html != b.html);
}

}  // namespace

TEST_CASE("report formats: two training audits with the same results differ only in timing") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), ra::test::kLinearReluModel, {{"w", {16, 8}}});
  const std::vector<std::string> args = {"run",       dir.file("m.pt"),
                                         "--shape",   "4x16",
                                         "--mode",    "train",
                                         "--steps",   "2",
                                         "--replay",  "--trace",
                                         "--configs", "default,det,threads-1",
                                         "--repeats", "2"};
  const Outputs a = audit(dir, args, 0);
  const Outputs b = audit(dir, args, 0);
  check_same_apart_from_timing(a, b);
  CHECK(a.json.find("\"replay\": {") != std::string::npos);
  CHECK(a.json.find("\"trace\": {") != std::string::npos);
}

TEST_CASE("report formats: a configuration that raises gives the same documents twice") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("al.pt"), ra::test::kNondetAlertModel, {{"w", {16, 64}}});
  const std::vector<std::string> args = {
      "run",        dir.file("al.pt"), "--shape", "8x16",           "--configs",
      "det,strict", "--repeats",       "2",       "--load-library", ra::test::test_ops_library()};
  const Outputs a = audit(dir, args, 1);
  const Outputs b = audit(dir, args, 1);
  check_same_apart_from_timing(a, b);
  CHECK(a.junit.find("<failure type=\"raised\"") != std::string::npos);
}
