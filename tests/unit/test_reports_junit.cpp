// SPDX-License-Identifier: Apache-2.0
#include "audit/common/files.h"
#include "reports/render.h"
#include "tests/unit/report_samples.h"

#include <doctest/doctest.h>

#include <filesystem>

namespace {

using ra::report::Verdict;

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// The text between the first `open` and the following `close`.
std::string between(const std::string& s, const std::string& open, const std::string& close) {
  const size_t a = s.find(open);
  if (a == std::string::npos) return "";
  const size_t b = s.find(close, a + open.size());
  return s.substr(a + open.size(), b == std::string::npos ? std::string::npos : b - a - open.size());
}

}  // namespace

TEST_CASE("render_junit: every verdict, escaping, and the schema file") {
  const auto r = ra::test::every_verdict_report(10);
  const std::string x = ra::report::render_junit(r);
  // For the junit_schema test, which validates this file with xmllint.
  std::filesystem::create_directories(RA_JUNIT_DIR);
  ra::write_file_atomic(std::string(RA_JUNIT_DIR) + "/unit-every-verdict.xml", x);

  CHECK(
      x.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"repro-audit\" tests=\"8\" failures=\"3\" "
              "errors=\"2\" skipped=\"1\">",
              0) == 0);
  CHECK(count(x, "<testsuite ") == 1);
  CHECK(count(x, "<testcase ") == 8);
  CHECK(x.find("<testsuite name=\"m&lt;1&gt;&amp;&quot;&apos;.pt\" tests=\"8\" failures=\"3\" errors=\"2\" "
               "skipped=\"1\">") != std::string::npos);
  CHECK(x.find("<property name=\"kind\" value=\"model\"/>") != std::string::npos);
  CHECK(x.find("<property name=\"device\" value=\"cpu\"/>") != std::string::npos);
  CHECK(x.find("<testcase classname=\"m&lt;1&gt;&amp;&quot;&apos;.pt\" name=\"det\"/>") != std::string::npos);
  CHECK(x.find("<failure type=\"diverged\"") != std::string::npos);
  CHECK(x.find("<failure type=\"raised\" message=\"index_add_cpu_ does not have a deterministic implementation\">") !=
        std::string::npos);
  CHECK(x.find("<error type=\"crashed\" message=\"signal 11\">") != std::string::npos);
  CHECK(x.find("<error type=\"timeout\"") != std::string::npos);
  CHECK(x.find("<skipped message=\"needs CUDA&#10;but none found\"/>") != std::string::npos);
  CHECK(x.find("name=\"configuration-dependence\">") != std::string::npos);
  CHECK(x.find("<failure type=\"replay-diverged\"") != std::string::npos);
  // Control characters XML cannot carry and bytes that are not UTF-8 become U+FFFD; newlines in
  // attributes are character references.
  CHECK(x.find("bell\xEF\xBF\xBD"
               "bad\\xff"
               "byte") != std::string::npos);  // control: U+FFFD; not UTF-8: \xNN
  CHECK(x.find("repeat 1 stderr:\nbell") != std::string::npos);
  CHECK(x.find("byte\nsegfault\tin child\n") != std::string::npos);
  CHECK(x.find('\x01') == std::string::npos);
  // No time or timestamp anywhere.
  CHECK(x.find(" time=") == std::string::npos);
  CHECK(x.find("timestamp") == std::string::npos);
}

TEST_CASE("render_junit: a diverged configuration's failure carries rate, tensors, root cause and fix") {
  const auto x = ra::report::render_junit(ra::test::every_verdict_report(10));
  const std::string message = between(x, "<failure type=\"diverged\" message=\"", "\"");
  CHECK(message.find("divergence rate 0.50") != std::string::npos);
  CHECK(message.find("output") != std::string::npos);
  CHECK(message.find("root cause: aten::index_add (backward, step 1, in IndexAddBackward0 of aten::index_add) at "
                     "model.py:5 in enc") != std::string::npos);
  CHECK(message.find("fix: default+deterministic=on") != std::string::npos);
  const std::string body = between(x, "<failure type=\"diverged\"", "</failure>");
  CHECK(body.find("diverged tensors (1):\n  output float32[8]: 3/8 elements differ") != std::string::npos);
  CHECK(body.find("root cause: aten::index_add (backward") != std::string::npos);
  CHECK(body.find("fix search from default: Deterministic algorithms fix it.") != std::string::npos);
  CHECK(body.find("minimal fix: default+deterministic=on") != std::string::npos);
  CHECK(body.find("torch::globalContext().setDeterministicAlgorithms(true, false);") != std::string::npos);
  CHECK(body.find("torch.use_deterministic_algorithms(True)") != std::string::npos);
  CHECK(body.find("1.25") == std::string::npos);  // the cost ratio is timing, not in JUnit
}

TEST_CASE("render_junit: same results give the same bytes whatever the timing") {
  CHECK(ra::report::render_junit(ra::test::every_verdict_report(10)) ==
        ra::report::render_junit(ra::test::every_verdict_report(9999)));
}

TEST_CASE("render_junit: a reproducible report passes, an empty one is still a document") {
  ra::report::Report r = ra::test::every_verdict_report(10);
  r.targets()[0].configs.resize(1);
  r.targets()[0].dependence.reset();
  ra::test::run_facts(r).replay.reset();
  ra::report::finalize(r);
  const auto x = ra::report::render_junit(r);
  CHECK(x.find("<testsuites name=\"repro-audit\" tests=\"1\" failures=\"0\" errors=\"0\" skipped=\"0\">") !=
        std::string::npos);
  std::get<ra::report::RunBody>(r.body).targets.clear();
  CHECK(ra::report::render_junit(r) ==
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"repro-audit\" tests=\"0\" failures=\"0\" "
        "errors=\"0\" "
        "skipped=\"0\">\n</testsuites>\n");
}

TEST_CASE("render_junit: a baseline suite, one test case per comparison, and the schema file") {
  auto r = ra::test::every_verdict_report(10);
  r.baseline = ra::test::sample_baseline();
  ra::report::finalize(r);
  const std::string x = ra::report::render_junit(r);
  // For the junit_schema test, which validates this file with xmllint.
  std::filesystem::create_directories(RA_JUNIT_DIR);
  ra::write_file_atomic(std::string(RA_JUNIT_DIR) + "/unit-baseline.xml", x);
  const std::string suite = between(x, "<testsuite name=\"baseline\"", "</testsuite>");
  REQUIRE(!suite.empty());
  CHECK(suite.rfind(" tests=\"7\" failures=\"2\" errors=\"0\" skipped=\"3\">", 0) == 0);
  CHECK(suite.find("<property name=\"environment_changes\" value=\"torch.version: 2.11.0 -&gt; 2.12.0; cuda.cudnn: "
                   "9.19.0 -&gt; 9.20.0\"/>") != std::string::npos);
  CHECK(count(suite, "<testcase ") == 7);
  CHECK(suite.find("name=\"baseline det\"/>") != std::string::npos);
  CHECK(suite.find(
            "<failure type=\"regression\" message=\"2 of 3 tensors differ and nothing that can affect cpu changed") !=
        std::string::npos);
  CHECK(suite.find("<failure type=\"nondeterministic\"") != std::string::npos);
  CHECK(between(suite, "name=\"baseline threads-1\">", "</testcase>").find("<system-out>explained: ") !=
        std::string::npos);
  CHECK(suite.find("<skipped message=\"missing: in the baseline only\"/>") != std::string::npos);
  CHECK(x.find("<testsuites name=\"repro-audit\" tests=\"15\" failures=\"5\" errors=\"2\" skipped=\"4\">") !=
        std::string::npos);

  // An allowed nondeterministic configuration is skipped, not failed.
  r.targets().front().configs[1].allowed_by = ra::report::AllowedBy{0, "known", ""};
  ra::report::finalize(r);
  const std::string allowed = between(ra::report::render_junit(r), "name=\"baseline default\">", "</testcase>");
  CHECK(allowed.find("<skipped message=\"nondeterministic, allowed by the allowlist: ") != std::string::npos);
}
