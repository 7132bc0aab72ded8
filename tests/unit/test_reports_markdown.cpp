// SPDX-License-Identifier: Apache-2.0
#include "reports/render.h"
#include "tests/unit/report_samples.h"

#include <doctest/doctest.h>

TEST_CASE("render_markdown: verdict line, table, root cause and the minimal fixes") {
  const std::string m = ra::report::render_markdown(ra::test::every_verdict_report(10));
  CHECK(m.rfind("## repro-audit: diverged, configuration-dependent (exit 1)\n", 0) == 0);
  CHECK(m.find("| target | configuration | verdict | diverged repeats (rate) |\n|---|---|---|---|\n") !=
        std::string::npos);
  // Markdown and table syntax in names is escaped.
  CHECK(m.find("| m\\<1\\>&amp;\"'.pt | det | reproducible | 0/2 (0.00) |") != std::string::npos);
  CHECK(m.find("| m\\<1\\>&amp;\"'.pt | default | **diverged** | 1/2 (0.50) |") != std::string::npos);
  CHECK(m.find("| cudnn-det | skipped | - |") != std::string::npos);
  CHECK(m.find("- diverged tensors: `output`") != std::string::npos);
  CHECK(m.find("- root cause: `aten::index_add` (backward, step 1, in `IndexAddBackward0` of `aten::index_add`) at "
               "`model.py:5` "
               "in `enc`; 2/2 runs") != std::string::npos);
  CHECK(m.find("- minimal fix: `default+deterministic=on`\n") != std::string::npos);
  CHECK(m.find("  ```cpp\n  torch::globalContext().setDeterministicAlgorithms(true, false);\n  ```\n") !=
        std::string::npos);
  CHECK(m.find("  ```python\n  torch.use_deterministic_algorithms(True)\n  ```\n") != std::string::npos);
  CHECK(m.find("**m\\<1\\>&amp;\"'.pt · strict: raised**\n\n- index\\_add\\_cpu\\_ does not have") !=
        std::string::npos);
  CHECK(m.find("configuration-dependent** - each configuration is reproducible, but results differ between {det} and "
               "{strict}") != std::string::npos);
  CHECK(m.find("restart-replay under default: diverged**") != std::string::npos);
}

TEST_CASE("render_markdown: measured figures only in the final timing section") {
  const std::string a = ra::report::render_markdown(ra::test::every_verdict_report(10));
  const std::string b = ra::report::render_markdown(ra::test::every_verdict_report(20));
  CHECK(a != b);
  const auto split = [](const std::string& s) {
    const size_t begin = s.find(ra::report::kTimingBegin);
    const size_t end = s.find(ra::report::kTimingEnd);
    REQUIRE(begin != std::string::npos);
    REQUIRE(end != std::string::npos);
    CHECK(s.find(ra::report::kTimingBegin, begin + 1) == std::string::npos);
    CHECK(s.substr(end) == std::string(ra::report::kTimingEnd) + "\n");  // the section ends the document
    return std::pair{s.substr(0, begin), s.substr(begin, end - begin)};
  };
  const auto [body_a, timing_a] = split(a);
  const auto [body_b, timing_b] = split(b);
  CHECK(body_a == body_b);
  CHECK(timing_a != timing_b);
  CHECK(body_a.find("cost") == std::string::npos);
  CHECK(timing_a.find("(`default+deterministic=on`) at 1.25x (1.15-1.35) the run time of default") !=
        std::string::npos);
  CHECK(timing_a.find("**m\\<1\\>&amp;\"'.pt · default**: cheapest fix deterministic ") != std::string::npos);
  CHECK(timing_a.find("| `default+deterministic=on` | reproducible | 12.5 ms | 1.25x (1.15-1.35) |") !=
        std::string::npos);
  CHECK(timing_a.find("Audit wall time: ") != std::string::npos);
}

TEST_CASE("render_markdown: the alert census of a probe report") {
  ra::report::Report r;
  ra::report::Census c;
  c.config = "det-warn";
  c.alerted_diverged = {"index_add"};
  c.silent_diverged = {"scatter|reduce"};
  c.stable = {"mm", "conv"};
  r.body = ra::report::ProbesBody{{}, c};  // a probes report of an empty shard
  const std::string m = ra::report::render_markdown(r);
  CHECK(m.rfind("## repro-audit: reproducible (exit 0)\n", 0) == 0);
  CHECK(m.find("**Alert census under det-warn**") != std::string::npos);
  CHECK(m.find("| 1 | 0 | 1 | 2 | 0 |") != std::string::npos);
  CHECK(m.find("Diverged without an alert: `scatter\\|reduce`") != std::string::npos);
}

TEST_CASE("render_markdown: the baseline section") {
  auto r = ra::test::every_verdict_report(10);
  r.baseline = ra::test::sample_baseline();
  ra::report::finalize(r);
  const std::string m = ra::report::render_markdown(r);
  CHECK(m.rfind(
            "## repro-audit: diverged, configuration-dependent, 1 baseline regression, 1 nondeterministic against the "
            "baseline (exit 1)\n",
            0) == 0);
  CHECK(
      m.find(
          "\n### Baseline `golden <1>.json`: 1 regression, 1 nondeterministic, 1 explained, 1 incomparable, 1 missing, "
          "1 added, 1 match\n\n| environment change | baseline | current | can affect |\n|---|---|---|---|\n"
          "| `torch.version` | 2.11.0 | 2.12.0 | any device |\n| `cuda.cudnn` | 9.19.0 | 9.20.0 | cuda |\n\n"
          "Also differ, ignored (cannot change results): `torch.library_dir`\n") != std::string::npos);
  CHECK(m.find("| m\\<1\\>&amp;\"'.pt | strict | **regression** | 2/3 differ |\n") != std::string::npos);
  CHECK(m.find("| m\\<1\\>&amp;\"'.pt | threads-1 | **explained** | 1/3 differ |\n") != std::string::npos);
  CHECK(m.find("| m\\<1\\>&amp;\"'.pt | det | match | 3 match |\n") != std::string::npos);
  CHECK(m.find("| m\\<1\\>&amp;\"'.pt | mkl-cbwr | missing | - |\n") != std::string::npos);
  CHECK(m.find("- **m\\<1\\>&amp;\"'.pt · strict: regression** - 2 of 3 tensors differ") != std::string::npos);
  CHECK(m.find("  - differing tensors: `output`, `loss`\n") != std::string::npos);
  CHECK(m.find("> **Explained differences** do not fail the run") != std::string::npos);
  CHECK(m.find("`--save-baseline golden <1>.json`") != std::string::npos);
  CHECK(ra::report::render_markdown(ra::test::every_verdict_report(10)).find("### Baseline") == std::string::npos);
}
