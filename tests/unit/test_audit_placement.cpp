// SPDX-License-Identifier: Apache-2.0
// One GPU per child (audit/trial/placement.h): which GPUs, what each child sees, which slot a cell
// keeps, and the runner's promise that two children never hold one slot at once. All on the CPU:
// the placement is arithmetic, and the slots are exercised with shell children.
#include "audit/common/errors.h"
#include "audit/trial/placement.h"
#include "audit/trial/runner.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <unistd.h>

TEST_CASE("--devices takes distinct cuda:N, and nothing else") {
  CHECK(ra::parse_devices("cuda:0,cuda:2") == std::vector<int>{0, 2});
  CHECK(ra::parse_devices("cuda:7") == std::vector<int>{7});
  for (const char* bad : {"", "0,1", "cuda:0,,cuda:1", "cuda:", "cuda:x", "cpu", "cuda:0,cuda:0", "cuda:-1", "cuda:12345"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(ra::parse_devices(bad), ra::UsageError);
  }
}

TEST_CASE("a placement: --devices, or --device cuda with --jobs over several GPUs; none otherwise") {
  // --devices names the GPUs; each child sees only its own.
  auto p = ra::place_devices({0, 2}, "cuda", 1, 4, std::nullopt);
  REQUIRE(p);
  CHECK(p->visible == std::vector<std::string>{"0", "2"});
  CHECK(p->names == std::vector<std::string>{"cuda:0", "cuda:2"});
  // Cells keep one slot, round robin over the GPUs.
  CHECK(p->slot_of(0) == 0);
  CHECK(p->slot_of(1) == 1);
  CHECK(p->slot_of(2) == 0);
  // The parent's own CUDA_VISIBLE_DEVICES maps cuda:N to its N-th entry (an index or a UUID).
  p = ra::place_devices({1}, "cuda", 1, 2, std::string("GPU-aaaa,GPU-bbbb"));
  REQUIRE(p);
  CHECK(p->visible == std::vector<std::string>{"GPU-bbbb"});
  // --device cuda --jobs 3 on 4 GPUs: the first 3; on 2 GPUs: both.
  p = ra::place_devices({}, "cuda", 3, 4, std::nullopt);
  REQUIRE(p);
  CHECK(p->slots() == 3);
  CHECK(ra::place_devices({}, "cuda", 3, 2, std::nullopt)->slots() == 2);
  // No placement: one job, one GPU, a named GPU, the CPU.
  CHECK_FALSE(ra::place_devices({}, "cuda", 1, 4, std::nullopt));
  CHECK_FALSE(ra::place_devices({}, "cuda", 4, 1, std::nullopt));
  CHECK_FALSE(ra::place_devices({}, "cuda:1", 4, 4, std::nullopt));
  CHECK_FALSE(ra::place_devices({}, "cpu", 4, 0, std::nullopt));
  // A GPU the machine does not have, or --devices with another --device.
  CHECK_THROWS_AS(ra::place_devices({0, 4}, "cuda", 1, 4, std::nullopt), ra::UsageError);
  CHECK_THROWS_AS(ra::place_devices({0}, "cpu", 1, 0, std::nullopt), ra::UsageError);
  CHECK_THROWS_AS(ra::place_devices({0}, "cuda:0", 1, 2, std::nullopt), ra::UsageError);
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
