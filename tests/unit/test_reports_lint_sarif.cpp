// SPDX-License-Identifier: Apache-2.0
// lint's findings as SARIF 2.1.0 (reports/lint_sarif.cpp): rules, levels, places in the
// repository, fingerprints, suppressions; the schema itself is checked end to end
// (tests/models/test_lint_sarif.py).
#include "reports/lint_model.h"

#include <doctest/doctest.h>

#include <set>

namespace {

using json = nlohmann::ordered_json;

ra::report::LintFinding finding(const std::string& entry, const std::string& severity, const std::string& path,
                                ra::report::SourceLocation source) {
  ra::report::LintFinding f;
  f.entry = entry;
  f.severity = severity;
  f.title = entry + " title";
  f.op = entry == "linear.batch.cpu" ? "aten::linear" : "aten::index_add";
  f.direction = "forward";
  f.device = "cuda";
  f.module_path = path;
  f.source = std::move(source);
  f.entry_methods = {"forward"};
  f.condition = entry + " condition";
  f.documented = "made-deterministic";
  f.deterministic = "made-deterministic";
  f.advice = entry + " advice";
  return f;
}

// index_add twice on line 10 (two layers of one class) and once on line 20 of model.py; a Linear
// whose op is in torch's files, reached from line 30; index_add in a module defined from a string.
ra::report::LintReport sample() {
  ra::report::LintReport r;
  r.tool_version = "0.1.0";
  r.model = "m.pt2";
  r.device = "cuda";
  r.device_type = "cuda";
  r.findings = {finding("index_add.cuda", "error", "layers.0.pool", {"model.py", 10, "forward"}),
                finding("index_add.cuda", "error", "layers.1.pool", {"model.py", 10, "forward"}),
                finding("index_add.cuda", "error", "head", {"model.py", 20, "forward"}),
                finding("linear.batch.cpu", "note", "fc", {"torch/nn/modules/linear.py", 134, "forward"}),
                finding("index_add.cuda", "error", "scripted", {"", 3, "forward"})};
  r.findings[3].user_frame = ra::report::SourceLocation{"model.py", 30, "forward"};
  r.notes = {"node 'x' calls a function, which is not an ATen op, and was not scanned"};
  r.exit_code = 1;
  return r;
}

const std::map<std::string, std::string> kInRepository = {{"model.py", "src/model.py"}};

const json& result_at(const json& sarif, size_t i) { return sarif["runs"][0]["results"][i]; }

}  // namespace

TEST_CASE("lint_to_sarif: one run, its rules from the entries that found something, levels from severity") {
  const json s = ra::report::lint_to_sarif(sample(), kInRepository);
  CHECK(s["version"] == "2.1.0");
  REQUIRE(s["runs"].size() == 1);
  const json& driver = s["runs"][0]["tool"]["driver"];
  CHECK(driver["name"] == "repro-audit");
  CHECK(driver["version"] == "0.1.0");
  REQUIRE(driver["rules"].size() == 2);  // sorted by id
  CHECK(driver["rules"][0]["id"] == "index_add.cuda");
  CHECK(driver["rules"][0]["defaultConfiguration"]["level"] == "error");
  CHECK(driver["rules"][0]["shortDescription"]["text"] == "index_add.cuda title");
  CHECK(driver["rules"][0]["fullDescription"]["text"] == "index_add.cuda title: index_add.cuda condition");
  CHECK(driver["rules"][0]["help"]["text"] == "index_add.cuda advice");
  CHECK(driver["rules"][1]["id"] == "linear.batch.cpu");
  CHECK(driver["rules"][1]["defaultConfiguration"]["level"] == "note");
  for (const auto& result : s["runs"][0]["results"])
    CHECK(driver["rules"][result["ruleIndex"].get<int>()]["id"] == result["ruleId"]);
  const json& invocation = s["runs"][0]["invocations"][0];
  CHECK(invocation["executionSuccessful"] == true);
  CHECK(invocation["exitCode"] == 1);
  CHECK(invocation["toolExecutionNotifications"][0]["level"] == "note");
}

TEST_CASE("lint_to_sarif: a result per entry, op and line, at the innermost frame in the repository") {
  const json s = ra::report::lint_to_sarif(sample(), kInRepository);
  const json& results = s["runs"][0]["results"];
  REQUIRE(results.size() == 4);
  // Line 10 holds two findings (two layers): one result naming both module paths.
  const json& first = result_at(s, 0);
  CHECK(first["ruleId"] == "index_add.cuda");
  CHECK(first["level"] == "error");
  const json& place = first["locations"][0]["physicalLocation"];
  CHECK(place["artifactLocation"]["uri"] == "src/model.py");
  CHECK(place["artifactLocation"]["uriBaseId"] == "%SRCROOT%");
  CHECK(place["region"]["startLine"] == 10);
  CHECK(first["locations"][0]["logicalLocations"].size() == 2);
  CHECK(first["locations"][0]["logicalLocations"][1]["fullyQualifiedName"] == "layers.1.pool");
  CHECK(first["message"]["text"].get<std::string>().find("in 2 modules layers.0.pool, layers.1.pool") !=
        std::string::npos);
  CHECK(result_at(s, 1)["locations"][0]["physicalLocation"]["region"]["startLine"] == 20);
  // The Linear's op is in torch's files: the result is on the user's line that led there.
  const json& linear = result_at(s, 2);
  CHECK(linear["level"] == "note");
  CHECK(linear["locations"][0]["physicalLocation"]["region"]["startLine"] == 30);
  CHECK(linear["message"]["text"].get<std::string>().find("The op itself is at torch/nn/modules/linear.py:134") !=
        std::string::npos);
  // No file in the repository: a logical location, and the message says where the op is.
  const json& scripted = result_at(s, 3);
  CHECK(!scripted["locations"][0].contains("physicalLocation"));
  CHECK(scripted["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == "scripted");
  CHECK(scripted["message"]["text"].get<std::string>().find("The op is at line 3 in forward") != std::string::npos);
}

TEST_CASE("lint_to_sarif: fingerprints are distinct, survive a moved line and name no machine path") {
  const json s = ra::report::lint_to_sarif(sample(), kInRepository);
  std::set<std::string> prints;
  for (const auto& result : s["runs"][0]["results"]) {
    prints.insert(result["partialFingerprints"]["reproAuditFinding/v1"].get<std::string>());
  }
  CHECK(prints.size() == 4);
  CHECK(result_at(s, 0)["partialFingerprints"]["reproAuditFinding/v1"] ==
        "index_add.cuda:src/model.py:forward:aten::index_add:1");
  CHECK(result_at(s, 1)["partialFingerprints"]["reproAuditFinding/v1"] ==
        "index_add.cuda:src/model.py:forward:aten::index_add:2");
  // Lines added above the findings: other startLines, the same fingerprints.
  ra::report::LintReport moved = sample();
  for (auto& f : moved.findings) f.source.line += f.source.file.empty() ? 0 : 5;
  moved.findings[3].user_frame->line += 5;
  const json m = ra::report::lint_to_sarif(moved, kInRepository);
  CHECK(result_at(m, 0)["locations"][0]["physicalLocation"]["region"]["startLine"] == 15);
  for (size_t i = 0; i < 4; ++i)
    CHECK(result_at(m, i)["partialFingerprints"] == result_at(s, i)["partialFingerprints"]);
}

TEST_CASE("render_lint_sarif: allowed findings are suppressed; values are escaped, cut and percent-encoded") {
  ra::report::LintReport r = sample();
  r.findings[2].allowed_by = ra::report::AllowedBy{0, "atomics accepted until the rewrite", ""};
  r.findings[4].module_path = "evil\n\x1b[31mred" + std::string(500, 'x');
  r.findings[0].source.file = "caf\xe9 #1.py";
  r.findings[1].source.file = "caf\xe9 #1.py";
  r.allowlist_expired = {"allowlist entry 1 expired on 2026-01-01"};
  const auto in_repository =
      std::map<std::string, std::string>{{"model.py", "src/model.py"}, {"caf\xe9 #1.py", "src/caf\xe9 #1.py"}};
  const std::string text = ra::report::render_lint_sarif(r, in_repository);
  CHECK(text == ra::report::render_lint_sarif(r, in_repository));  // deterministic
  const json s = json::parse(text);
  const json& results = s["runs"][0]["results"];
  CHECK(results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/caf%E9%20%231.py");
  bool suppressed = false;
  for (const auto& result : results)
    if (result.contains("suppressions")) {
      suppressed = true;
      CHECK(result["suppressions"][0]["kind"] == "external");
      CHECK(result["suppressions"][0]["justification"] == "atomics accepted until the rewrite");
    }
  CHECK(suppressed);
  const std::string message = results[3]["message"]["text"];
  CHECK(message.find('\n') == std::string::npos);
  CHECK(message.find('\x1b') == std::string::npos);
  CHECK(message.find("evil\\n\\x1b[31mred") != std::string::npos);
  CHECK(message.find("... (513 bytes)") != std::string::npos);
  CHECK(s["runs"][0]["invocations"][0]["toolExecutionNotifications"][1]["level"] == "error");
  // Nothing found: a valid run with no rules and no results.
  ra::report::LintReport clean = sample();
  clean.findings.clear();
  const json c = ra::report::lint_to_sarif(clean, {});
  CHECK(c["runs"][0]["tool"]["driver"]["rules"].empty());
  CHECK(c["runs"][0]["results"].empty());
}
