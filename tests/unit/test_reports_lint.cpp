// SPDX-License-Identifier: Apache-2.0
#include "reports/lint_model.h"

#include <doctest/doctest.h>

namespace {

ra::report::LintFinding finding(const std::string& path, int line, const std::string& deterministic) {
  ra::report::LintFinding f;
  f.entry = "index_add.cuda";
  f.severity = "error";
  f.title = "index_add on CUDA";
  f.op = "aten::index_add";
  f.direction = "forward";
  f.device = "cuda";
  f.module_path = path;
  f.source = {"", line, "forward"};
  f.entry_methods = {"forward"};
  f.condition = "always";
  f.documented = "made-deterministic";
  f.deterministic = deterministic;
  f.advice = "turn on deterministic algorithms";
  return f;
}

ra::report::LintReport sample() {
  ra::report::LintReport r;
  r.tool_version = "0.1.0";
  r.model = "m.pt";
  r.device = "cuda";
  r.device_type = "cuda";
  r.knowledge_path = "ops.json";
  r.knowledge_torch = "2.11";
  r.knowledge_entries = 3;
  r.applicable_entries = 2;
  r.methods = {"forward"};
  r.findings = {finding("", 3, "made-deterministic"), finding("encoder.conv", 7, "raises"),
                finding("encoder.conv", 9, "raises")};
  r.findings[2].source.file = "model.py";
  r.findings[2].called_from = {{"model.py", 20, "forward"}};
  r.exit_code = 1;
  return r;
}

}  // namespace

TEST_CASE("display_location") {
  CHECK(ra::report::display_location({"model.py", 12, "f"}) == "model.py:12");
  CHECK(ra::report::display_location({"", 12, "f"}) == "line 12");
  CHECK(ra::report::display_location({"", 0, "f"}) == "unknown line");
  CHECK(ra::report::display_module_path("") == "<top>");
  CHECK(ra::report::display_module_path("a.b") == "a.b");
}

TEST_CASE("raising_findings") { CHECK(ra::report::raising_findings(sample()) == 2); }

TEST_CASE("lint_to_json") {
  const auto j = ra::report::lint_to_json(sample());
  CHECK(j["schema"] == "repro-audit/lint");
  CHECK(j["schema_version"] == ra::report::kLintSchemaVersion);
  CHECK(j["summary"]["findings"] == 3);
  CHECK(j["summary"]["raise"] == 2);
  CHECK(j["exit_code"] == 1);
  CHECK(j["findings"][0]["source"]["file"].is_null());  // no file name
  CHECK(j["findings"][0]["alert"].is_null());
  CHECK(j["findings"][2]["source"]["file"] == "model.py");
  CHECK(j["findings"][2]["called_from"][0]["line"] == 20);
  CHECK(!j.contains("timing"));  // nothing time-dependent
  CHECK(ra::report::render_lint_json(sample()) == ra::report::render_lint_json(sample()));
}

TEST_CASE("render_lint_text: one block per entry; --verbose gives every finding") {
  const std::string grouped = ra::report::render_lint_text(sample());
  CHECK(grouped.find("\nerror index_add.cuda  aten::index_add (forward): 3 findings\n") != std::string::npos);
  CHECK(grouped.find("    in:            <top>, encoder.conv\n") != std::string::npos);
  CHECK(grouped.find("\n3 errors, 0 notes (2 raise under use_deterministic_algorithms)\n") != std::string::npos);
  ra::report::LintReport noted = sample();
  for (auto& f : noted.findings) f.severity = "note";
  noted.exit_code = ra::report::lint_exit_code(noted);
  CHECK(noted.exit_code == 0);
  CHECK(ra::report::render_lint_text(noted).find(
            "0 errors, 3 notes (2 raise under use_deterministic_algorithms); notes do not "
            "fail (--strict makes them)") != std::string::npos);
  noted.strict = true;
  CHECK(ra::report::lint_exit_code(noted) == 1);

  const std::string text = ra::report::render_lint_text(sample(), /*verbose=*/true);
  // One header per module path, in the findings' order.
  const size_t top = text.find("\n<top>\n");
  const size_t conv = text.find("\nencoder.conv\n");
  REQUIRE(top != std::string::npos);
  REQUIRE(conv != std::string::npos);
  CHECK(top < conv);
  CHECK(text.find("\nencoder.conv\n", conv + 1) == std::string::npos);
  CHECK(text.find("at:            line 3 in forward") != std::string::npos);
  CHECK(text.find("called from:   model.py:20 in forward") != std::string::npos);
  CHECK(text.find("\n3 errors, 0 notes (2 raise under use_deterministic_algorithms)\n") != std::string::npos);

  ra::report::LintReport none = sample();
  none.findings.resize(1);
  CHECK(ra::report::render_lint_text(none).find("\n1 error, 0 notes (0 raise") != std::string::npos);
  none.findings.clear();
  CHECK(ra::report::render_lint_text(none).find("\n0 errors, 0 notes (0 raise") != std::string::npos);
}
