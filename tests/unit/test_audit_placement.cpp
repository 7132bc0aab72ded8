// SPDX-License-Identifier: Apache-2.0
// One GPU per child (audit/trial/placement.h): which GPUs, what each child sees, which slot a cell
// keeps, the runner's promise that two children never hold one slot at once, its ticks while
// children run, and the progress line it keeps. All on the CPU: the placement is arithmetic, and
// the slots, ticks and line are exercised with shell children.
#include "audit/common/errors.h"
#include "audit/common/progress.h"
#include "audit/trial/placement.h"
#include "audit/trial/runner.h"
#include "tests/unit/stderr_capture.h"
#include "tests/unit/temp_folder.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <unistd.h>

TEST_CASE("--devices takes distinct cuda:N, and nothing else") {
  CHECK(ra::parse_devices("cuda:0,cuda:2") == std::vector<int>{0, 2});
  CHECK(ra::parse_devices("cuda:7") == std::vector<int>{7});
  for (const char* bad :
       {"", "0,1", "cuda:0,,cuda:1", "cuda:", "cuda:x", "cpu", "cuda:0,cuda:0", "cuda:-1", "cuda:12345"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(ra::parse_devices(bad), ra::UsageError);
  }
}

TEST_CASE("a placement: --devices, or --device cuda with --jobs over several GPUs; none otherwise") {
  // --devices names the GPUs; each child sees only its own.
  auto p = ra::place_devices({0, 2}, ra::Device::cuda(), 1, 4, std::nullopt);
  REQUIRE(p);
  CHECK(p->visible == std::vector<std::string>{"0", "2"});
  CHECK(p->names == std::vector<std::string>{"cuda:0", "cuda:2"});
  // Cells keep one slot, round robin over the GPUs.
  CHECK(p->slot_of(0) == 0);
  CHECK(p->slot_of(1) == 1);
  CHECK(p->slot_of(2) == 0);
  // The parent's own CUDA_VISIBLE_DEVICES maps cuda:N to its N-th entry (an index or a UUID).
  p = ra::place_devices({1}, ra::Device::cuda(), 1, 2, std::string("GPU-aaaa,GPU-bbbb"));
  REQUIRE(p);
  CHECK(p->visible == std::vector<std::string>{"GPU-bbbb"});
  // --device cuda --jobs 3 on 4 GPUs: the first 3; on 2 GPUs: both.
  p = ra::place_devices({}, ra::Device::cuda(), 3, 4, std::nullopt);
  REQUIRE(p);
  CHECK(p->slots() == 3);
  CHECK(ra::place_devices({}, ra::Device::cuda(), 3, 2, std::nullopt)->slots() == 2);
  // No placement: one job, the CPU.
  CHECK_FALSE(ra::place_devices({}, ra::Device::cuda(), 1, 4, std::nullopt));
  CHECK_FALSE(ra::place_devices({}, ra::Device::cuda(), 1, 1, std::nullopt));
  CHECK_FALSE(ra::place_devices({}, ra::Device::cuda(1), 1, 4, std::nullopt));
  CHECK_FALSE(ra::place_devices({}, ra::Device::cpu(), 4, 0, std::nullopt));
  // A GPU the machine does not have, or --devices with another --device.
  CHECK_THROWS_AS(ra::place_devices({0, 4}, ra::Device::cuda(), 1, 4, std::nullopt), ra::UsageError);
  CHECK_THROWS_AS(ra::place_devices({0}, ra::Device::cpu(), 1, 0, std::nullopt), ra::UsageError);
  CHECK_THROWS_AS(ra::place_devices({0}, ra::Device::cuda(0), 1, 2, std::nullopt), ra::UsageError);
}

TEST_CASE("--jobs J on one GPU: J children share it, and the report is told so") {
  // Issue 31: with one GPU there was no placement, so J children ran on it unrecorded; now the one
  // GPU is a slot that J children hold at once, the report says so, and the children see what the
  // parent sees (no CUDA_VISIBLE_DEVICES of their own).
  auto p = ra::place_devices({}, ra::Device::cuda(), 4, 1, std::nullopt);
  REQUIRE(p);
  CHECK(p->slots() == 1);
  CHECK(p->per_slot == 4);
  CHECK(p->visible == std::vector<std::string>{""});
  CHECK(p->names == std::vector<std::string>{"cuda:0"});
  CHECK(p->slot_of(5) == 0);
  CHECK(ra::contention_note(*p, 4) ==
        "up to 4 children at once shared cuda:0; their timings include each other's work");
  // A named GPU on a machine of several: it is shared, and stays the one the children use.
  p = ra::place_devices({}, ra::Device::cuda(1), 3, 4, std::string("2,3"));
  REQUIRE(p);
  CHECK(p->per_slot == 3);
  CHECK(p->visible == std::vector<std::string>{""});
  CHECK(p->names == std::vector<std::string>{"cuda:1"});
  // More jobs than GPUs: each GPU takes its share (rounded up), the runner caps the total at J.
  p = ra::place_devices({}, ra::Device::cuda(), 5, 2, std::nullopt);
  REQUIRE(p);
  CHECK(p->slots() == 2);
  CHECK(p->per_slot == 3);
  CHECK(ra::contention_note(*p, 5) ==
        "up to 3 children at once shared each of cuda:0, cuda:1; their timings include each other's work");
  p = ra::place_devices({0, 2}, ra::Device::cuda(), 4, 4, std::nullopt);
  REQUIRE(p);
  CHECK(p->per_slot == 2);
  // One child per GPU, as before: nothing to say.
  p = ra::place_devices({}, ra::Device::cuda(), 3, 4, std::nullopt);
  REQUIRE(p);
  CHECK(p->per_slot == 1);
  CHECK(ra::contention_note(*p, 3).empty());
  p = ra::place_devices({0, 2}, ra::Device::cuda(), 1, 4, std::nullopt);
  REQUIRE(p);
  CHECK(p->per_slot == 1);
  CHECK(ra::contention_note(*p, 1).empty());
}

TEST_CASE("the runner lets per_slot children hold one slot at once, and never more") {
  // Four jobs on slot 0 with room for two: each waits (up to 20 s) until its partner (0 with 1, 2
  // with 3) has started, so two must run side by side; a runner that kept one per slot would let
  // each wait out its 20 s alone, and the log would show it. Each logs its start before it makes
  // the file its partner waits for, so a partner's end is always logged after both starts.
  char pattern[] = "/tmp/ra-slots2-XXXXXX";
  REQUIRE(::mkdtemp(pattern) != nullptr);
  const std::string dir = pattern;
  const std::string log = dir + "/log";
  std::vector<ra::ChildJob> jobs;
  for (int i = 0; i < 4; ++i) {
    const std::string me = dir + "/m" + std::to_string(i), partner = dir + "/m" + std::to_string(i ^ 1);
    ra::ChildJob j;
    j.argv = {"/bin/sh", "-c",
              "echo start 0 " + std::to_string(i) + " >> " + log + "; touch " + me + "; n=0; while [ ! -e " + partner +
                  " ] && [ $n -lt 400 ]; do sleep 0.05; n=$((n+1)); done; echo end 0 " + std::to_string(i) + " >> " +
                  log};
    j.log_path = dir + "/child" + std::to_string(i) + ".log";
    jobs.push_back(j);
  }
  const auto outcomes = ra::run_children(
      jobs, 4, {}, [](size_t) { return 0; }, 2);
  for (const auto& o : outcomes) CHECK(o.kind == ra::ChildOutcome::Kind::Exited);
  std::ifstream in(log);
  int holding = 0, peak = 0, lines = 0, slot = 0, index = 0;
  std::string word;
  while (in >> word >> slot >> index) {
    ++lines;
    holding += word == "start" ? 1 : -1;
    peak = std::max(peak, holding);
  }
  CHECK(lines == 8);
  CHECK(peak == 2);
  in.close();
  ::unlink(log.c_str());
  for (int i = 0; i < 4; ++i) {
    ::unlink((dir + "/child" + std::to_string(i) + ".log").c_str());
    ::unlink((dir + "/m" + std::to_string(i)).c_str());
  }
  ::rmdir(dir.c_str());
}

TEST_CASE("the runner never lets two children hold one slot at once, and runs every job") {
  // (No std::filesystem here: this binary links LibTorch, whose copy of it is not to be trusted.)
  char pattern[] = "/tmp/ra-slots-XXXXXX";
  REQUIRE(::mkdtemp(pattern) != nullptr);
  const std::string dir = pattern;
  const std::string log = dir + "/log";
  const std::vector<int> slots = {0, 0, 1, 1, 0, 1, -1, 0};
  std::vector<ra::ChildJob> jobs;
  for (size_t i = 0; i < slots.size(); ++i) {
    ra::ChildJob j;
    const std::string tag = std::to_string(slots[i]) + " " + std::to_string(i);
    j.argv = {"/bin/sh", "-c", "echo start " + tag + " >> " + log + "; sleep 0.05; echo end " + tag + " >> " + log};
    j.log_path = dir + "/child" + std::to_string(i) + ".log";
    jobs.push_back(j);
  }
  const auto outcomes = ra::run_children(jobs, 3, {}, [&](size_t i) { return slots[i]; });
  for (const auto& o : outcomes) CHECK(o.kind == ra::ChildOutcome::Kind::Exited);
  std::ifstream in(log);
  std::map<int, int> holding;  // slot -> children between their start and end lines
  std::string word;
  int slot = 0, index = 0, lines = 0;
  while (in >> word >> slot >> index) {
    ++lines;
    if (slot < 0) continue;
    holding[slot] += word == "start" ? 1 : -1;
    CHECK(holding[slot] <= 1);
  }
  CHECK(lines == 2 * static_cast<int>(slots.size()));
  in.close();
  ::unlink(log.c_str());
  for (size_t i = 0; i < slots.size(); ++i) ::unlink((dir + "/child" + std::to_string(i) + ".log").c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("the runner ticks while children run, naming them with the time they have run") {
  // Two children that each end only once a tick has touched their file (or after 20 s, exit 1):
  // a runner that never ticked would leave them to wait it out and fail.
  char pattern[] = "/tmp/ra-tick-XXXXXX";
  REQUIRE(::mkdtemp(pattern) != nullptr);
  const std::string dir = pattern;
  std::vector<ra::ChildJob> jobs;
  for (int i = 0; i < 2; ++i) {
    const std::string flag = dir + "/f" + std::to_string(i);
    ra::ChildJob j;
    j.argv = {"/bin/sh", "-c",
              "n=0; while [ ! -e " + flag + " ]; do [ $n -ge 400 ] && exit 1; sleep 0.05; n=$((n+1)); done"};
    j.log_path = dir + "/child" + std::to_string(i) + ".log";
    jobs.push_back(j);
  }
  size_t ticks = 0;
  bool well_formed = true;
  const auto outcomes = ra::run_children(jobs, 1, {}, {}, 1, [&](const std::vector<ra::RunningChild>& now) {
    ++ticks;
    well_formed = well_formed && now.size() == 1 && now.front().index < 2 && now.front().elapsed_ms >= 0;
    std::ofstream(dir + "/f" + std::to_string(now.front().index)) << "tick";
  });
  for (const auto& o : outcomes) CHECK((o.kind == ra::ChildOutcome::Kind::Exited && o.exit_code == 0));
  CHECK(ticks >= 2);  // one at least per child: one runs at a time
  CHECK(well_formed);
  for (int i = 0; i < 2; ++i) {
    ::unlink((dir + "/child" + std::to_string(i) + ".log").c_str());
    ::unlink((dir + "/f" + std::to_string(i)).c_str());
  }
  ::rmdir(dir.c_str());
}

TEST_CASE("the runner keeps a batch's progress line: numbered after what it finished, each end named") {
  // A line that planned three children and has seen one end: the runner's two count on from it, and
  // each end is reported by the caller's name for it, after on_done has filed it. Off a terminal the
  // line is the log's debug records, which the capture reads.
  const ra::test::TempFolder dir("ra-runner-progress");
  std::vector<ra::ChildJob> jobs;
  for (int i = 0; i < 2; ++i) {
    ra::ChildJob j;
    j.argv = {"/bin/sh", "-c", "exit " + std::to_string(i + 3)};
    j.log_path = dir.file("child" + std::to_string(i) + ".log");
    jobs.push_back(j);
  }
  std::vector<std::string> lines;
  std::vector<size_t> finished_when_filed;
  ra::Progress line(3, /*terminal=*/false);
  {
    const ra::test::StderrCapture capture(dir.file("stderr"));
    line.done("an earlier child");
    const ra::ChildProgress progress{line, [](size_t i) { return "job " + std::to_string(i); },
                                     [](size_t i, const ra::ChildOutcome& outcome) {
                                       return "job " + std::to_string(i) + ": exit " +
                                              std::to_string(outcome.exit_code);
                                     }};
    const auto outcomes = ra::run_children(
        jobs, 1, progress, [&](size_t, const ra::ChildOutcome&) { finished_when_filed.push_back(line.finished()); });
    CHECK(outcomes.size() == 2);
    lines = capture.lines();
  }
  CHECK(line.finished() == 3);
  CHECK(line.total() == 3);
  CHECK(finished_when_filed == std::vector<size_t>{1, 2});  // on_done first, then the count
  std::vector<std::string> counted;
  for (const auto& l : lines)
    if (const auto at = l.find("] ["); at != std::string::npos) counted.push_back(l.substr(at + 2));
  CHECK(counted == std::vector<std::string>{"[1/3] an earlier child", "[2/3] job 0: exit 3", "[3/3] job 1: exit 4"});
}

TEST_CASE("the runner asks a batch's own status line while its children run, on a terminal only") {
  // A child that ends only once its status has been asked for (or after 20 s, exit 1): on a terminal
  // line the runner draws the caller's line in place of "still running"; off a terminal it asks
  // nothing (the status may read files), and the child, which only sleeps, ends as it would.
  const ra::test::TempFolder dir("ra-runner-status");
  const std::string flag = dir.file("asked");
  ra::ChildJob waits;
  waits.argv = {"/bin/sh", "-c",
                "n=0; while [ ! -e " + flag + " ]; do [ $n -ge 400 ] && exit 1; sleep 0.05; n=$((n+1)); done"};
  waits.log_path = dir.file("waits.log");
  size_t asked = 0;
  const auto status = [&](const std::vector<ra::RunningChild>& now) {
    ++asked;
    std::ofstream(flag) << "asked";
    return "sizes 1/2 of job " + std::to_string(now.front().index);
  };
  const auto done = [](size_t i, const ra::ChildOutcome&) { return "job " + std::to_string(i); };
  std::vector<std::string> lines;
  {
    ra::Progress terminal(1, /*terminal=*/true);
    const ra::test::StderrCapture capture(dir.file("stderr"));
    const auto outcomes = ra::run_children({waits}, 1, ra::ChildProgress{terminal, {}, done, status});
    CHECK((outcomes.front().kind == ra::ChildOutcome::Kind::Exited && outcomes.front().exit_code == 0));
    lines = capture.lines();
  }
  CHECK(asked >= 1);
  std::string seen;
  for (const auto& l : lines) seen += l + "\n";
  CHECK(seen.find("\rsizes 1/2 of job 0\033[K") != std::string::npos);
  CHECK(seen.find("still running") == std::string::npos);
  CHECK(seen.find("\r[1/1] job 0\033[K\n") != std::string::npos);

  asked = 0;
  ra::ChildJob sleeps;
  sleeps.argv = {"/bin/sh", "-c", "sleep 1.5"};
  sleeps.log_path = dir.file("sleeps.log");
  ra::Progress logged(1, /*terminal=*/false);
  const auto outcomes = ra::run_children({sleeps}, 1, ra::ChildProgress{logged, {}, done, status});
  CHECK(outcomes.front().exit_code == 0);
  CHECK(asked == 0);
  CHECK(logged.finished() == 1);
}
