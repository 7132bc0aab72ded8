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
  t.steps = 1;
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
  r.targets = {t};
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
  r.targets[0].configs[0].trace->root_causes.clear();
  CHECK(ra::report::render_text(r).find("root cause: none") != std::string::npos);
  r.targets[0].configs[0].trace.reset();
  CHECK(ra::report::render_text(r).find("trace:") == std::string::npos);
}
