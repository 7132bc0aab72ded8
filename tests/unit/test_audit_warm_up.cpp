// SPDX-License-Identifier: Apache-2.0
#include "audit/run/warm_up.h"
#include "reports/json_read.h"
#include "reports/render.h"

#include <doctest/doctest.h>

namespace {

using ra::report::TensorDigest;

std::vector<TensorDigest> digests(const std::string& output) {
  return {{"param/w", "float32", {2}, std::string(32, 'a')}, {"output", "float32", {2}, output}};
}

// A trial whose call 1 gave `first` and calls 2.. gave `later`, or whose call 1 changed `mutated`.
ra::TrialRun trial(int repeat, const std::string& first, const std::vector<std::string>& later,
                   std::vector<std::string> mutated = {}, int traced_call = 0) {
  ra::TrialRun r;
  r.repeat = repeat;
  ra::TrialResult res;
  res.tensors = digests(first);
  for (const auto& d : later) res.later_calls.push_back(digests(d));
  res.mutated = std::move(mutated);
  res.traced_call = traced_call;
  r.result = res;
  return r;
}

const std::string A(32, '1'), B(32, '2');

}  // namespace

TEST_CASE("compare_calls: equal later calls are no finding; one that differs names its call and tensors") {
  const auto same = ra::compare_calls({trial(0, A, {A, A}), trial(1, A, {A, A})}, {}, 3);
  CHECK(same.calls == 3);
  CHECK(same.trials_compared == 2);
  CHECK(same.trials_differing == 0);
  CHECK(same.first_call == 0);
  CHECK_FALSE(ra::report::warm_up_dependent(same));
  CHECK(ra::report::warm_up_lines(same) ==
        std::vector<std::string>{"no warm-up dependence: calls 2-3 equal call 1 bitwise in 2 trials"});

  // Only the later call 3 differs in trial 0; in trial 1, call 2 already does: the earliest is named.
  const auto w = ra::compare_calls({trial(0, A, {A, B}), trial(1, A, {B, B}), trial(2, A, {A, A})}, {}, 3);
  CHECK(w.trials_compared == 3);
  CHECK(w.trials_differing == 2);
  CHECK(w.first_call == 2);
  CHECK(w.tensors == std::vector<std::string>{"output"});
  CHECK(ra::report::warm_up_dependent(w));
  CHECK(ra::report::warm_up_lines(w).front() ==
        "warm-up dependence: call 2 differs from call 1 in the same process in 2/3 trials (output)");
}

TEST_CASE("compare_calls: a trial whose call 1 changed the model's state is named, not compared") {
  const auto w = ra::compare_calls({trial(0, A, {}, {"buffer 'count'"}), trial(1, A, {}, {"buffer 'count'"})}, {}, 3);
  CHECK(w.mutated == std::vector<std::string>{"buffer 'count'"});
  CHECK(w.trials_compared == 0);
  CHECK_FALSE(ra::report::warm_up_dependent(w));
  CHECK(ra::report::warm_up_lines(w) ==
        std::vector<std::string>{"calls are not comparable: forward mutates buffer 'count'"});
}

TEST_CASE("warm_up: a dependent configuration makes the report exit 1, and the JSON reads back byte for byte") {
  ra::report::Report r;
  r.tool_version = "0.1.0";
  r.command = {"repro-audit", "run", "m.pt", "--calls", "3"};
  ra::report::Target t;
  t.name = "m.pt";
  t.device = "cpu";
  t.mode = "infer";
  ra::report::ConfigResult c;
  c.name = "default";
  c.repeats = c.completed = 3;
  c.warm_up = ra::compare_calls({trial(0, A, {B, B}), trial(1, A, {B, B}), trial(2, A, {B, B})}, {}, 3);
  t.configs.push_back(c);
  r.body = ra::report::RunBody{{{t, {}}}};
  ra::report::finalize(r);
  CHECK(r.targets()[0].configs[0].verdict == ra::report::Verdict::Reproducible);
  CHECK(r.exit_code == 1);
  const std::string first = ra::report::render_json(r);
  CHECK(first.find("\"warm_up\"") != std::string::npos);
  CHECK(ra::report::render_json(ra::report::report_from_json(nlohmann::ordered_json::parse(first))) == first);
  CHECK(ra::report::render_text(r).find("warm-up-dependent (exit 1)") != std::string::npos);
  // Without --calls nothing of it is written.
  r.targets()[0].configs[0].warm_up.reset();
  ra::report::finalize(r);
  CHECK(r.exit_code == 0);
  CHECK(ra::report::render_json(r).find("warm_up") == std::string::npos);
}
