// SPDX-License-Identifier: Apache-2.0
#include "audit/trial/probe_protocol.h"

#include "audit/common/files.h"

#include <doctest/doctest.h>

#include <fstream>

namespace {

ra::TrialResult ok_result(const std::string& digest) {
  ra::TrialResult r;
  r.tensors = {{"output", "float32", {2, 3}, digest}};
  r.alerts = {"x does not have a deterministic implementation"};
  r.wall_ms = 1.5;
  return r;
}

}  // namespace

TEST_CASE("read_probe_log: a finished log gives every result") {
  ra::ScratchDir dir;
  const std::string path = dir.path() + "/log";
  std::ofstream(path) << ra::probe_begin_line(ra::TrialResult{}) << ra::probe_start_line("a")
                      << ra::probe_result_line("a", ok_result("d1")) << ra::probe_start_line("b")
                      << ra::probe_result_line("b", ok_result("d2")) << ra::probe_end_line();
  const ra::ProbeLog log = ra::read_probe_log(path);
  REQUIRE(log.begin);
  CHECK(log.ended);
  CHECK(log.running.empty());
  REQUIRE(log.done.size() == 2);
  CHECK(log.done.at("b").tensors.at(0).digest == "d2");
  CHECK(log.done.at("a").alerts.size() == 1);
  CHECK(log.done.at("a").wall_ms == doctest::Approx(1.5));
}

TEST_CASE("read_probe_log: a child that died names the running probe and ignores a torn line") {
  ra::ScratchDir dir;
  const std::string path = dir.path() + "/log";
  const std::string torn = ra::probe_result_line("b", ok_result("d2"));
  std::ofstream(path) << ra::probe_begin_line(ra::TrialResult{}) << ra::probe_start_line("a")
                      << ra::probe_result_line("a", ok_result("d1")) << ra::probe_start_line("b")
                      << torn.substr(0, torn.size() / 2);
  const ra::ProbeLog log = ra::read_probe_log(path);
  CHECK(!log.ended);
  CHECK(log.running == "b");
  CHECK(log.done.size() == 1);
}

TEST_CASE("read_probe_log: a missing file is an empty log") {
  const ra::ProbeLog log = ra::read_probe_log("/nonexistent/repro-audit/log");
  CHECK(!log.begin);
  CHECK(log.done.empty());
  CHECK(!log.ended);
}
