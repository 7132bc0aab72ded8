// SPDX-License-Identifier: Apache-2.0
#include "audit/digest/stats_math.h"
#include "audit/skeleton/rounds.h"
#include "audit/trial/analysis.h"
#include "tests/unit/stderr_capture.h"
#include "tests/unit/temp_folder.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <map>
#include <set>
#include <stdexcept>

namespace {

using ra::report::TrialStatus;
using ra::report::Verdict;

ra::TrialRun ok_run(int repeat, std::vector<std::string> digests) {
  ra::TrialRun r;
  r.repeat = repeat;
  r.dump_path = "dump" + std::to_string(repeat);
  ra::TrialResult res;
  for (size_t i = 0; i < digests.size(); ++i)
    res.tensors.push_back({"t" + std::to_string(i), "float32", {2}, digests[i]});
  r.result = res;
  return r;
}

ra::TrialRun signaled(int repeat, int sig) {
  ra::TrialRun r;
  r.repeat = repeat;
  r.process.kind = ra::ChildOutcome::Kind::Signaled;
  r.process.signal = sig;
  r.process.log_tail = "last words";
  return r;
}

// A fake statistics function that records what it was asked.
struct FakeDiff {
  std::vector<std::string> asked;
  ra::DiffFn fn() {
    return [this](const std::string& a, const std::string& b, const std::vector<std::string>& names) {
      std::map<std::string, ra::report::DivergenceStats> m;
      for (const auto& n : names) {
        asked.push_back(a + "|" + b + "|" + n);
        ra::report::DivergenceStats s;
        s.differing = 1;
        m[n] = s;
      }
      return m;
    };
  }
};

const ra::Config kConfig{"default", {}};

}  // namespace

TEST_CASE("analyse_config: identical repeats are reproducible") {
  FakeDiff diff;
  const auto c =
      ra::analyse_config(kConfig, {ok_run(0, {"a", "b"}), ok_run(1, {"a", "b"}), ok_run(2, {"a", "b"})}, diff.fn());
  CHECK(c.verdict == Verdict::Reproducible);
  CHECK(c.completed == 3);
  CHECK(c.distinct_outcomes == 1);
  CHECK(c.diverged_tensors.empty());
  CHECK(diff.asked.empty());
  CHECK(c.tensor_count == 2);
}

TEST_CASE("analyse_config: one diverging repeat gives rate, interval and per-tensor statistics") {
  FakeDiff diff;
  const auto c =
      ra::analyse_config(kConfig, {ok_run(0, {"a", "b"}), ok_run(1, {"a", "X"}), ok_run(2, {"a", "b"})}, diff.fn());
  CHECK(c.verdict == Verdict::Diverged);
  CHECK(c.diverging_repeats == 1);
  CHECK(c.divergence_rate == doctest::Approx(0.5));
  CHECK(c.rate_ci_low > 0.0);
  CHECK(c.rate_ci_high < 1.0);
  CHECK(c.distinct_outcomes == 2);
  REQUIRE(c.diverged_tensors.size() == 1);
  CHECK(c.diverged_tensors[0].name == "t1");
  CHECK(c.diverged_tensors[0].stats.has_value());
  CHECK(diff.asked == std::vector<std::string>{"dump0|dump1|t1"});
}

TEST_CASE("analyse_config: crashes and timeouts make the verdict incomplete, divergence wins") {
  FakeDiff diff;
  const auto crashed =
      ra::analyse_config(kConfig, {ok_run(0, {"a"}), signaled(1, SIGSEGV), ok_run(2, {"a"})}, diff.fn());
  CHECK(crashed.verdict == Verdict::Crashed);
  CHECK(crashed.message.find("SIGSEGV") != std::string::npos);
  CHECK(crashed.trials[1].stderr_tail == "last words");
  CHECK(crashed.completed == 2);

  ra::TrialRun timed = signaled(1, 0);
  timed.process.kind = ra::ChildOutcome::Kind::TimedOut;
  timed.timeout_s = 5;
  const auto timeout = ra::analyse_config(kConfig, {ok_run(0, {"a"}), timed}, diff.fn());
  CHECK(timeout.verdict == Verdict::Timeout);
  CHECK(timeout.trials[1].status == TrialStatus::Timeout);

  const auto both = ra::analyse_config(kConfig, {ok_run(0, {"a"}), signaled(1, SIGABRT), ok_run(2, {"b"})}, diff.fn());
  CHECK(both.verdict == Verdict::Diverged);
  CHECK(both.message.find("SIGABRT") != std::string::npos);
}

TEST_CASE("analyse_config: a raised alert and a switch not in effect") {
  FakeDiff diff;
  ra::TrialRun raised = ok_run(0, {});
  raised.result->status = TrialStatus::Raised;
  raised.result->message = "foo does not have a deterministic implementation";
  CHECK(ra::analyse_config(kConfig, {raised, raised}, diff.fn()).verdict == Verdict::Raised);

  ra::TrialRun bad = ok_run(0, {});
  bad.result->status = TrialStatus::ConfigError;
  bad.result->message = "switch 'threads' asked for 4 but 2 is in effect";
  const auto c = ra::analyse_config(kConfig, {bad}, diff.fn());
  CHECK(c.verdict == Verdict::Crashed);
  CHECK(c.message.find("asked for 4") != std::string::npos);
}

TEST_CASE("analyse_config: a child that exits without a result has crashed") {
  FakeDiff diff;
  ra::TrialRun r;
  r.process.exit_code = 3;
  const auto c = ra::analyse_config(kConfig, {r}, diff.fn());
  CHECK(c.verdict == Verdict::Crashed);
  CHECK(c.trials[0].message.find("code 3") != std::string::npos);
}

TEST_CASE("configuration_dependence") {
  FakeDiff diff;
  const auto a = ra::analyse_config({"default", {}}, {ok_run(0, {"a", "b"}), ok_run(1, {"a", "b"})}, diff.fn());
  const auto b = ra::analyse_config({"threads-1", {}}, {ok_run(0, {"a", "c"}), ok_run(1, {"a", "c"})}, diff.fn());
  const auto c = ra::analyse_config({"det", {}}, {ok_run(0, {"a", "b"}), ok_run(1, {"a", "b"})}, diff.fn());
  CHECK(!ra::configuration_dependence({a, c}, {"da", "dc"}, diff.fn()).has_value());
  const auto dep = ra::configuration_dependence({a, b, c}, {"da", "db", "dc"}, diff.fn());
  REQUIRE(dep.has_value());
  CHECK(dep->groups == std::vector<std::vector<std::string>>{{"default", "det"}, {"threads-1"}});
  REQUIRE(dep->differing.size() == 1);
  CHECK(dep->differing[0].name == "t1");
  CHECK(diff.asked.back() == "da|db|t1");
}

TEST_CASE("analyse_config: each diverged tensor's statistics come from the first repeat it differed in") {
  // Repeat 1 differs in t0 only and repeat 2 in t1 only; with dumps that hold only differing
  // tensors (TrialSpec::dump_only_differing), t1's values exist in repeat 2's dump alone.
  FakeDiff diff;
  const auto c =
      ra::analyse_config(kConfig, {ok_run(0, {"a", "b"}), ok_run(1, {"X", "b"}), ok_run(2, {"a", "Y"})}, diff.fn());
  CHECK(c.verdict == Verdict::Diverged);
  REQUIRE(c.diverged_tensors.size() == 2);
  CHECK(diff.asked == std::vector<std::string>{"dump0|dump1|t0", "dump0|dump2|t1"});
  for (const auto& f : c.diverged_tensors) CHECK(f.stats.has_value());
}

TEST_CASE("analyse_config: a dump its child could not write is named in the statistics' note") {
  ra::TrialRun diverging = ok_run(1, {"X"});
  diverging.result->dump_error = "No space left on device";
  const ra::DiffFn missing = [](const std::string&, const std::string&, const std::vector<std::string>& names) {
    std::map<std::string, ra::report::DivergenceStats> m;
    for (const auto& n : names) m[n].note = "tensor values not available (trial dump missing)";
    return m;
  };
  const auto c = ra::analyse_config(kConfig, {ok_run(0, {"a"}), diverging}, missing);
  REQUIRE(c.diverged_tensors.size() == 1);
  REQUIRE(c.diverged_tensors[0].stats);
  CHECK(c.diverged_tensors[0].stats->note ==
        "tensor values not available: repeat 1's dump could not be written (No space left on device)");
}

TEST_CASE("reference_digests: the first completed repeat before a trial, once every repeat before it has ended") {
  const ra::TrialRun crashed = signaled(0, SIGKILL), ok = ok_run(1, {"a", "b"});
  CHECK(ra::reference_digests({}).empty());                     // repeat 0 is the reference itself
  CHECK(ra::reference_digests({nullptr, &ok}).empty());         // repeat 0 still running: not known yet
  CHECK(ra::reference_digests({&crashed}).empty());             // no completed repeat before it
  const auto digests = ra::reference_digests({&crashed, &ok});  // the reference is repeat 1
  CHECK(digests == std::map<std::string, std::string>{{"t0", "a"}, {"t1", "b"}});
  CHECK(ra::reference_digests({&ok, nullptr}) == digests);  // later repeats do not matter
}

TEST_CASE("switch_changes: effective values that differ, and keys one side lacks") {
  const std::vector<ra::report::SwitchValue> a = {
      {"threads", "1", "1"}, {"deterministic", "", "off"}, {"tf32", "", "off"}};
  const std::vector<ra::report::SwitchValue> b = {
      {"threads", "", "2"}, {"deterministic", "on", "off"}, {"mkl_cbwr", "AVX2", "AVX2"}};
  const auto c = ra::switch_changes(a, b);
  REQUIRE(c.size() == 3);
  CHECK(c[0].key == "threads");
  CHECK(c[0].reference == "1");
  CHECK(c[0].other == "2");
  CHECK(c[1].key == "tf32");  // (deterministic: requested differently, the same in effect: no change)
  CHECK(c[1].other == "(absent)");
  CHECK(c[2].key == "mkl_cbwr");
  CHECK(c[2].reference == "(absent)");
  CHECK(ra::switch_changes(a, a).empty());
}

TEST_CASE("--repeats auto: runs_to_bound matches the detection-power line's Wilson bound") {
  CHECK(ra::runs_to_bound(0.2) == 17);  // 16 comparisons: 3.84 / (16 + 3.84) = 0.194
  CHECK(ra::runs_to_bound(0.5) == 5);   // 4 comparisons: 0.49
  CHECK(ra::runs_to_bound(0.05) == 74);
  CHECK(ra::runs_to_bound(1e-300) == 1 << 30);  // no --max-repeats reaches it: the cap decides
  CHECK(ra::next_repeat_count(3, ra::report::AutoRepeats{3, 20, 1e-300}) == 6);
  for (const double rate : {0.5, 0.2, 0.1, 0.01, 0.001}) {
    const int n = ra::runs_to_bound(rate) - 1;
    CHECK(ra::wilson_interval(0, n).second <= rate);
    CHECK(ra::wilson_interval(0, n - 1).second > rate);
  }
}

TEST_CASE("--repeats auto: a divergence or a failure decides at once, clean runs once the rate is bounded") {
  const ra::report::AutoRepeats rule{3, 20, 0.2};
  std::vector<ra::TrialRun> runs = {ok_run(0, {"a"}), ok_run(1, {"a"}), ok_run(2, {"a"})};
  CHECK(ra::decide_repeats(runs, rule) == ra::RepeatDecision::More);
  runs.push_back(ok_run(3, {"b"}));
  CHECK(ra::decide_repeats(runs, rule) == ra::RepeatDecision::Divergence);
  CHECK(ra::to_string(ra::RepeatDecision::Divergence) == "divergence");

  std::vector<ra::TrialRun> failed = {ok_run(0, {"a"}), signaled(1, SIGSEGV), ok_run(2, {"a"})};
  CHECK(ra::decide_repeats(failed, rule) == ra::RepeatDecision::Failure);
  std::vector<ra::TrialRun> skipped = {ok_run(0, {"a"})};
  skipped.front().result->status = TrialStatus::Skipped;
  CHECK(ra::decide_repeats(skipped, rule) == ra::RepeatDecision::Skipped);
  CHECK(ra::to_string(ra::RepeatDecision::Skipped) == "skipped");

  std::vector<ra::TrialRun> clean;
  for (int r = 0; r < 16; ++r) clean.push_back(ok_run(r, {"a", "b"}));
  CHECK(ra::decide_repeats(clean, rule) == ra::RepeatDecision::More);
  clean.push_back(ok_run(16, {"a", "b"}));
  CHECK(ra::decide_repeats(clean, rule) == ra::RepeatDecision::Confidence);

  // A rate too small for --max-repeats: the configuration stops undecided.
  const ra::report::AutoRepeats strict{3, 5, 0.01};
  std::vector<ra::TrialRun> five(clean.begin(), clean.begin() + 5);
  CHECK(ra::decide_repeats(five, strict) == ra::RepeatDecision::MaxRepeats);
  CHECK(ra::to_string(ra::RepeatDecision::MaxRepeats) == "max-repeats");
}

TEST_CASE("--repeats auto: rounds about double, up to what the rule needs or allows") {
  const ra::report::AutoRepeats rule{3, 20, 0.2};
  std::vector<int> counts = {3};
  while (counts.back() < 17) counts.push_back(ra::next_repeat_count(counts.back(), rule));
  CHECK(counts == std::vector<int>{3, 6, 12, 17});
  CHECK(ra::next_repeat_count(12, ra::report::AutoRepeats{3, 14, 0.01}) == 14);
  CHECK(ra::next_repeat_count(1, rule) == 2);
}

TEST_CASE("--repeats auto: a round takes only the undecided configurations further, repeat-major") {
  const ra::report::AutoRepeats rule{3, 20, 0.2};
  // Configuration 0 diverged in its first round; configuration 1 has three clean runs.
  std::vector<std::vector<ra::TrialRun>> runs = {{ok_run(0, {"a"}), ok_run(1, {"b"}), ok_run(2, {"a"})},
                                                 {ok_run(0, {"a"}), ok_run(1, {"a"}), ok_run(2, {"a"})}};
  std::vector<int> target = {3, 3};
  std::vector<std::string> stopped_by;
  CHECK(ra::plan_next_round(runs, rule, target, stopped_by));
  CHECK(stopped_by == std::vector<std::string>{"divergence", ""});
  CHECK(target == std::vector<int>{3, 6});
  const auto jobs = ra::round_jobs({3, 3}, target);
  CHECK(jobs == std::vector<std::pair<size_t, int>>{{1, 3}, {1, 4}, {1, 5}});
  // From nothing: every configuration's repeats, repeat by repeat.
  CHECK(ra::round_jobs({0, 0}, {2, 1}) == std::vector<std::pair<size_t, int>>{{0, 0}, {1, 0}, {0, 1}});
  // Once everything is decided, no further round.
  runs[1][1] = ok_run(1, {"b"});
  CHECK_FALSE(ra::plan_next_round(runs, rule, target, stopped_by));
  CHECK(stopped_by == std::vector<std::string>{"divergence", "divergence"});
}

TEST_CASE("the round-runner: rounds until every cell is decided, each job once, the same for every kind") {
  // Cell 0 diverges at its third repeat; cell 1 never does. Each job is answered as a kind would:
  // its run lands at its repeat, and runs are read only between rounds.
  const ra::report::AutoRepeats rule{3, 20, 0.2};
  std::vector<std::vector<ra::TrialRun>> runs(2);
  std::vector<ra::RoundJobs> rounds;
  std::set<const ra::Progress*> lines;
  const ra::RoundParts parts{[&](const ra::RoundJobs& jobs, const std::vector<int>& target, ra::Progress& line) {
                               rounds.push_back(jobs);
                               lines.insert(&line);
                               for (size_t c = 0; c < runs.size(); ++c) runs[c].resize(static_cast<size_t>(target[c]));
                               for (const auto& [c, r] : jobs)
                                 runs[c][static_cast<size_t>(r)] = ok_run(r, {c == 0 && r == 2 ? "b" : "a"});
                             },
                             [&]() -> const std::vector<std::vector<ra::TrialRun>>& { return runs; }};
  const std::vector<std::string> decided = ra::run_rounds(2, 0, rule, parts);
  CHECK(decided == std::vector<std::string>{"divergence", "confidence"});
  CHECK(lines.size() == 1);     // one progress line for every round
  REQUIRE(rounds.size() == 4);  // cell 1: 3, 6, 12, then 17 runs (runs_to_bound(0.2))
  CHECK(rounds[0] == ra::RoundJobs{{0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 2}, {1, 2}});
  CHECK(rounds[1] == ra::RoundJobs{{1, 3}, {1, 4}, {1, 5}});
  CHECK(rounds[3].back() == std::pair<size_t, int>{1, 16});
  CHECK(runs[0].size() == 3);
  CHECK(runs[1].size() == 17);

  // --repeats N: one round of N repeats each, and nothing to decide.
  rounds.clear();
  runs.assign(2, {});
  const ra::RoundParts once{parts.run, []() -> const std::vector<std::vector<ra::TrialRun>>& {
                              throw std::logic_error("runs are read only under --repeats auto");
                            }};
  CHECK(ra::run_rounds(2, 2, std::nullopt, once) == std::vector<std::string>{"", ""});
  REQUIRE(rounds.size() == 1);
  CHECK(rounds[0] == ra::RoundJobs{{0, 0}, {1, 0}, {0, 1}, {1, 1}});
}

TEST_CASE("the round-runner runs a trial kind's children: each (cell, repeat) once, on one line across rounds") {
  // The kind gives only how a child is made, where its run goes and what a cell is called; the
  // rounds are those of the test above (cell 0 diverges at its third repeat), each trial a shell
  // child that ends with its repeat as exit code. The progress line, off a terminal the log's debug
  // records, numbers the 20 children 1 to 20 across the four rounds, its total growing by round.
  const ra::test::TempFolder dir("ra-rounds");
  const ra::report::AutoRepeats rule{3, 20, 0.2};
  std::vector<std::vector<ra::TrialRun>> runs(2);
  std::map<std::pair<size_t, int>, int> made, collected;
  const ra::TrialParts parts{.grow = [&](size_t c, int n) { runs[c].resize(static_cast<size_t>(n)); },
                             .make =
                                 [&](size_t c, int r) {
                                   ++made[{c, r}];
                                   ra::ChildJob job;
                                   job.argv = {"/bin/sh", "-c", "exit " + std::to_string(r)};
                                   job.log_path = dir.file(std::to_string(c) + "-" + std::to_string(r) + ".log");
                                   return job;
                                 },
                             .collect =
                                 [&](size_t c, int r, const ra::ChildOutcome& outcome) {
                                   ++collected[{c, r}];
                                   runs[c][static_cast<size_t>(r)] =
                                       ok_run(outcome.exit_code, {c == 0 && r == 2 ? "b" : "a"});
                                 },
                             .runs = [&]() -> const std::vector<std::vector<ra::TrialRun>>& { return runs; },
                             .name = [](size_t c) { return "cell" + std::to_string(c); },
                             .parallel = 2};
  std::vector<std::string> lines;
  {
    const ra::test::StderrCapture capture(dir.file("stderr"));
    CHECK(ra::run_rounds(2, 0, rule, parts) == std::vector<std::string>{"divergence", "confidence"});
    lines = capture.lines();
  }
  CHECK(made.size() == 20);
  CHECK(collected == made);
  for (const auto& [job, times] : made) CHECK(times == 1);
  CHECK(runs[0].size() == 3);
  REQUIRE(runs[1].size() == 17);
  for (int r = 0; r < 17; ++r) CHECK(runs[1][static_cast<size_t>(r)].repeat == r);  // each run where its job was
  std::vector<std::string> counted;
  for (const auto& l : lines)
    if (const auto at = l.find("] ["); at != std::string::npos) counted.push_back(l.substr(at + 2));
  REQUIRE(counted.size() == 20);
  for (size_t k = 0; k < counted.size(); ++k) {
    const size_t total = k < 6 ? 6 : k < 9 ? 9 : k < 15 ? 15 : 20;
    const std::string head = "[" + std::to_string(k + 1) + "/" + std::to_string(total) + "] cell";
    CHECK_MESSAGE(counted[k].rfind(head, 0) == 0, counted[k]);
    CHECK(counted[k].find(" repeat ") != std::string::npos);
    CHECK(counted[k].find(" ms") != std::string::npos);
  }
  CHECK(std::count_if(counted.begin(), counted.end(),
                      [](const std::string& l) { return l.find("] cell1 repeat 16: ") != std::string::npos; }) == 1);
}
