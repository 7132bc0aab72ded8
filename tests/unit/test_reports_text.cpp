// SPDX-License-Identifier: Apache-2.0
#include "reports/render.h"
#include "tests/unit/report_samples.h"

#include <doctest/doctest.h>

namespace {

ra::report::Report traced_report() {
  ra::report::Report r;
  ra::report::Target t;
  t.name = "m.pt";
  t.device = "cpu";
  t.mode = "train";
  ra::report::RunFacts facts;
  facts.steps = 1;
  ra::report::ConfigResult c;
  c.name = "default";
  c.verdict = ra::report::Verdict::Diverged;
  ra::report::TraceSummary trace = ra::test::sample_trace();
  ra::report::RootCause rc = trace.root_causes.front();
  rc.op = "ra_test::nondet_sum";
  rc.direction = "forward";
  rc.node = rc.forward_op = "";
  rc.module = "encoder.block";
  rc.source = "model.py:3";
  rc.step = 0;
  trace.root_causes.push_back(rc);
  c.trace = trace;
  t.configs = {c};
  r.body = ra::report::RunBody{{{t, facts}}};
  ra::report::finalize(r);
  return r;
}

}  // namespace

TEST_CASE("render_text: root causes and splits of a traced configuration") {
  auto r = traced_report();
  const std::string text = ra::report::render_text(r);
  CHECK(text.find("root cause: aten::index_add (backward, step 1, in IndexAddBackward0 of aten::index_add at "
                  "model.py:5 in enc)") != std::string::npos);
  CHECK(text.find("root cause: ra_test::nondet_sum (forward) at model.py:3 in encoder.block - inputs matched, "
                  "output 0 differed; 2/2 runs; 14 later ops propagated\n") != std::string::npos);
  CHECK(text.find("trace: 120 records per run, 4.0 KiB in memory") != std::string::npos);
  CHECK(text.find("split at #90") != std::string::npos);
  r.targets()[0].configs[0].trace->root_causes.clear();
  CHECK(ra::report::render_text(r).find("root cause: none") != std::string::npos);
  r.targets()[0].configs[0].trace.reset();
  CHECK(ra::report::render_text(r).find("trace:") == std::string::npos);
}

TEST_CASE("render_baseline_text: changes, one line per result, differing tensors, counts and the re-save hint") {
  auto r = ra::test::every_verdict_report(10);
  r.baseline = ra::test::sample_baseline();
  ra::report::finalize(r);
  const std::string text = ra::report::render_text(r);
  const std::string section = ra::report::render_baseline_text(r);
  CHECK(text.find(section) != std::string::npos);
  CHECK(section.rfind("baseline golden <1>.json (a baseline written by repro-audit 0.1.0)\n"
                      "  environment: 2 changes\n"
                      "    torch.version: 2.11.0 -> 2.12.0 (can affect any device)\n"
                      "    cuda.cudnn: 9.19.0 -> 9.20.0 (can affect cuda)\n"
                      "  1 result kept their bits, 3 changed\n"
                      "  newly divergent (1): m<1>&\"'.pt / default\n"
                      "  ignored, cannot change results: torch.library_dir\n"
                      "  m<1>&\"'.pt / det: match (3 tensors)\n",
                      0) == 0);
  CHECK(
      section.find("  m<1>&\"'.pt / strict: regression: 2 of 3 tensors differ and nothing that can affect cpu changed "
                   "(changed, but cannot affect cpu: cuda.cudnn 9.19.0 -> 9.20.0)\n"
                   "    output: float32[8] -> float32[2x4]\n"
                   "    loss float32[8]: only in the baseline\n") != std::string::npos);
  CHECK(section.find(
            "  m<1>&\"'.pt / threads-1: explained: 1 of 3 tensors differ; explained by changes that can affect cpu: "
            "torch.version 2.11.0 -> 2.12.0, config.threads 2 -> 1\n"
            "    switch threads: 2 -> 1\n"
            "    output float32[8]: aaaaaaaaaaaa -> bbbbbbbbbbbb\n") != std::string::npos);
  CHECK(section.find("  m<1>&\"'.pt / mkl-cbwr: missing: in the baseline only\n") != std::string::npos);
  CHECK(section.find(
            "baseline: 1 regression, 1 nondeterministic, 1 explained, 1 incomparable, 1 missing, 1 added, 1 match\n"
            "  explained: the results changed together with the environment, which does not fail the run; if the "
            "new results are the right ones, save the baseline again (rerun the audit with --save-baseline golden "
            "<1>.json)\n") != std::string::npos);
  CHECK(text.find("verdict: diverged, configuration-dependent, 1 baseline regression, 1 nondeterministic against the "
                  "baseline (exit 1)\n") != std::string::npos);
  // The section comes just before the verdict line; no baseline, no section.
  CHECK(text.find(section) + section.size() == text.find("verdict: "));
  CHECK(ra::report::render_baseline_text(ra::test::every_verdict_report(10)).empty());
}

TEST_CASE("render_baseline_text: many results list only the noteworthy ones") {
  auto r = ra::test::every_verdict_report(10);
  auto b = ra::test::sample_baseline();
  const auto match = b.results.front();
  for (int i = 0; i < 20; ++i) b.results.push_back(match);
  auto skipped = b.results[4];  // incomparable
  skipped.config = "skipped-both";
  skipped.baseline_verdict = skipped.current_verdict = ra::report::Verdict::Skipped;
  b.results.push_back(skipped);
  b.changes.clear();
  r.baseline = b;
  ra::report::finalize(r);
  const std::string section = ra::report::render_baseline_text(r);
  CHECK(section.find("  environment: unchanged\n") != std::string::npos);
  CHECK(section.find(": match") == std::string::npos);
  CHECK(section.find("skipped-both") == std::string::npos);
  CHECK(section.find("/ cudnn-det: incomparable") != std::string::npos);  // skipped on one side only
  CHECK(section.find("2 incomparable, 1 missing, 1 added, 21 match") != std::string::npos);
  CHECK(ra::report::render_markdown(r).find(
            "\n22 more (matches, and configurations skipped or raised alike on both sides) are counted above") !=
        std::string::npos);
}

TEST_CASE("render_text: where configurations part, each in one line") {
  const std::string text = ra::report::render_text(ra::test::every_verdict_report(10));
  CHECK(text.find(
            "    strict against det (deterministic off -> on): first differing op aten::sum (forward) at model.py:4 - "
            "inputs matched, output 0 differed; 2 later ops propagated\n") != std::string::npos);
  CHECK(text.find(
            "    other against det (no switch differs in effect): no op can be named: other has no traced repeat\n") !=
        std::string::npos);
}

TEST_CASE("render_text: a long configuration name widens the column instead of shifting its row") {
  ra::report::Report r = ra::test::every_verdict_report(10);
  const std::string name = "default+mkl_cbwr=COMPATIBLE+threads=1";
  r.targets().front().configs.front().name = name;
  const std::string text = ra::report::render_text(r);
  const size_t header = text.find("  configuration");
  REQUIRE(header != std::string::npos);
  const size_t row = text.find("  " + name + " ");
  REQUIRE(row != std::string::npos);
  const size_t header_verdict = text.find("verdict", header) - header;
  const size_t row_line_end = text.find('\n', row);
  const std::string row_line = text.substr(row, row_line_end - row);
  // The verdict starts in the same column in the header and in the long row.
  CHECK(row_line.find_first_not_of(' ', 2 + name.size()) == header_verdict);
}

TEST_CASE("render_text: an AOTInductor package's metadata, and whether it says how determinism was set") {
  ra::report::Report r;
  ra::report::Target t;
  t.name = "net.pt2";
  t.device = "cpu";
  t.mode = "infer";
  ra::report::RunFacts facts;
  facts.package = {{"AOTI_DEVICE_KEY", "cpu"}, {"AOTI_CPU_ISA", "AVX512"}, {"AOTI_COMPUTE_CAPABILITY", ""}};
  r.body = ra::report::RunBody{{{t, facts}}};
  ra::report::finalize(r);
  std::string text = ra::report::render_text(r);
  CHECK(text.find("  AOTInductor package: AOTI_COMPUTE_CAPABILITY -, AOTI_CPU_ISA AVX512, AOTI_DEVICE_KEY cpu\n") !=
        std::string::npos);
  CHECK(text.find("does not record whether it was compiled with deterministic algorithms") != std::string::npos);
  ra::test::run_facts(r).package["Deterministic_Algorithms"] = "True";
  text = ra::report::render_text(r);
  CHECK(text.find("Deterministic_Algorithms True") != std::string::npos);
  CHECK(text.find("does not record whether") == std::string::npos);
}

TEST_CASE("render_text: run's summary names the outputs it compared, each once, a long list cut") {
  ra::report::Report r;
  ra::report::Target t;
  t.name = "lm.pt2";
  t.device = "cpu";
  t.mode = "train";
  ra::report::ConfigResult c;
  c.name = "default";
  c.verdict = ra::report::Verdict::Reproducible;
  for (const char* name : {"param/lm_head.weight", "step1/output/logits", "step1/loss", "step2/output/logits"})
    c.reference.push_back({name, "float32", {2}, std::string(32, '0')});
  t.configs = {c};
  ra::report::RunFacts f;
  f.package = {{"runtime", "interpreter"}};
  r.body = ra::report::RunBody{{{t, f}}};
  ra::report::finalize(r);
  CHECK(ra::report::render_text(r).find("  outputs compared: output/logits\n") != std::string::npos);
  auto& ref = r.targets()[0].configs[0].reference;
  ref.clear();
  for (int i = 0; i < 8; ++i) ref.push_back({"output/" + std::to_string(i), "float32", {2}, std::string(32, '0')});
  CHECK(ra::report::render_text(r).find("  outputs compared: output/0, output/1, output/2, output/3, output/4, "
                                        "output/5 and 2 more\n") != std::string::npos);
}

TEST_CASE("batch_classes_text: runs of four or more neighbouring sizes are written first…last") {
  using Classes = std::vector<std::vector<int64_t>>;
  CHECK(ra::report::batch_classes_text(Classes{{1, 2, 3}, {4, 5, 6, 7, 8, 9, 16, 17, 257}}) == "{1,2,3} | {4…257}");
  CHECK(ra::report::batch_classes_text(Classes{{1}, {2, 3}, {4, 5, 6, 7}}) == "{1} | {2,3} | {4…7}");
  // Neighbours among the sizes tried, not among the integers: 9, 16, 17 and 31 follow each other here.
  CHECK(ra::report::batch_classes_text(Classes{{1, 9, 16, 17, 31}, {2}}) == "{1,9…31} | {2}");
  CHECK(ra::report::batch_classes_text(Classes{{1, 3, 4, 5}, {2}}) == "{1,3,4,5} | {2}");
  ra::report::ProbeFacts p;
  p.batch_classes = {{"default", Classes{{1, 2, 3, 4}}}, {"threads-1", Classes{{1}, {2, 3, 4}}}};
  CHECK(ra::report::batch_classes_lines(p) ==
        std::vector<std::string>{"batch classes under default: {1…4}: invariant",
                                 "batch classes under threads-1: {1} | {2,3,4}: variant"});
}
