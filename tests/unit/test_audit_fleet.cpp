// SPDX-License-Identifier: Apache-2.0
// Shards (audit/fleet/shard.h): --shard K/N, each scheduler's variables, the assignment of cells.
#include "audit/common/errors.h"
#include "audit/fleet/merge.h"
#include "audit/fleet/shard.h"
#include "reports/json_read.h"
#include "reports/render.h"

#include <doctest/doctest.h>

#include <map>
#include <string>

namespace {

using ra::fleet::ShardRequest;

// A fake environment for shard_from_environment.
struct Env {
  std::map<std::string, std::string> vars;
  ra::fleet::Getenv getenv() const {
    return [this](const char* name) -> const char* {
      const auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
  std::optional<ShardRequest> shard(std::optional<int> shards = std::nullopt) const {
    return ra::fleet::shard_from_environment(getenv(), shards);
  }
};

std::string usage_message(const Env& env, std::optional<int> shards = std::nullopt) {
  try {
    env.shard(shards);
  } catch (const ra::UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("--shard K/N: K from 1, N at least K; anything else is a usage error naming it") {
  const ShardRequest r = ra::fleet::parse_shard("3/4");
  CHECK(r.index == 3);
  CHECK(r.count == 4);
  CHECK(r.source == "--shard");
  CHECK(ra::fleet::parse_shard("1/1").count == 1);
  for (const char* bad : {"0/4", "5/4", "a/b", "4", "/4", "3/", "-1/4", "1/0", "1/1000001", " 1/4", "1/4/2"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(ra::fleet::parse_shard(bad), ra::UsageError);
  }
  try {
    ra::fleet::parse_shard("0/4");
  } catch (const ra::UsageError& e) {
    CHECK(std::string(e.what()).find("K counts from 1") != std::string::npos);
  }
}

TEST_CASE("the blocks of a plan cover every cell exactly once, in order, sizes within one") {
  for (size_t cells : {0, 1, 3, 12, 392, 1000})
    for (int n : {1, 2, 3, 4, 5, 7, 200}) {
      size_t next = 0, smallest = cells, largest = 0;
      for (int k = 1; k <= n; ++k) {
        const auto [first, last] = ra::fleet::shard_range(cells, k, n);
        CHECK(first == next);
        next = last;
        smallest = std::min(smallest, last - first);
        largest = std::max(largest, last - first);
        for (size_t c = first; c < last; ++c) CHECK(ra::fleet::shard_of(c, cells, n) == k);
      }
      CHECK(next == cells);
      CHECK(largest - smallest <= 1);
    }
  // The same plan and N always give the same assignment; fewer cells than shards leave some empty.
  CHECK(ra::fleet::shard_range(12, 2, 5) == std::pair<size_t, size_t>{3, 5});
  CHECK(ra::fleet::shard_range(1, 1, 4) == std::pair<size_t, size_t>{0, 1});
  CHECK(ra::fleet::shard_range(1, 4, 4) == std::pair<size_t, size_t>{1, 1});
}

TEST_CASE("no scheduler variable: not sharded; --shards alone is a usage error") {
  CHECK_FALSE(Env{}.shard());
  CHECK(usage_message(Env{}, 4).find("Kubernetes") != std::string::npos);
}

TEST_CASE("Slurm arrays map MIN-MAX:STEP onto 1..N and refuse lists they cannot map") {
  Env env{{{"SLURM_ARRAY_TASK_ID", "6"},
           {"SLURM_ARRAY_TASK_COUNT", "4"},
           {"SLURM_ARRAY_TASK_MIN", "0"},
           {"SLURM_ARRAY_TASK_MAX", "9"},
           {"SLURM_ARRAY_TASK_STEP", "3"}}};
  auto r = env.shard();
  REQUIRE(r);
  CHECK(r->index == 3);
  CHECK(r->count == 4);
  CHECK(r->source == "the Slurm array");
  CHECK(r->variables.front() == std::pair<std::string, std::string>{"SLURM_ARRAY_TASK_ID", "6"});
  // --array=1-4: no STEP means 1.
  env.vars = {{"SLURM_ARRAY_TASK_ID", "1"},
              {"SLURM_ARRAY_TASK_COUNT", "4"},
              {"SLURM_ARRAY_TASK_MIN", "1"},
              {"SLURM_ARRAY_TASK_MAX", "4"}};
  r = env.shard();
  REQUIRE(r);
  CHECK(r->index == 1);
  // --array=1,3,7: three tasks that are not the range 1-7.
  env.vars = {{"SLURM_ARRAY_TASK_ID", "3"},
              {"SLURM_ARRAY_TASK_COUNT", "3"},
              {"SLURM_ARRAY_TASK_MIN", "1"},
              {"SLURM_ARRAY_TASK_MAX", "7"},
              {"SLURM_ARRAY_TASK_STEP", "1"}};
  CHECK(usage_message(env).find("cannot be mapped") != std::string::npos);
  // A job array task without the count.
  env.vars = {{"SLURM_ARRAY_TASK_ID", "3"}};
  CHECK(usage_message(env).find("SLURM_ARRAY_TASK_COUNT") != std::string::npos);
  env.vars = {{"SLURM_ARRAY_TASK_ID", "x"}, {"SLURM_ARRAY_TASK_COUNT", "3"}, {"SLURM_ARRAY_TASK_MIN", "0"}};
  CHECK(usage_message(env).find("not a non-negative integer") != std::string::npos);
}

TEST_CASE("Kubernetes gives the index; N comes from --shards") {
  Env env{{{"JOB_COMPLETION_INDEX", "0"}}};
  CHECK(usage_message(env).find("--shards N") != std::string::npos);
  auto r = env.shard(3);
  REQUIRE(r);
  CHECK(r->index == 1);
  CHECK(r->count == 3);
  env.vars["JOB_COMPLETION_INDEX"] = "3";
  CHECK(usage_message(env, 3).find("out of range") != std::string::npos);
}

TEST_CASE("Bazel, GitLab and Buildkite: each scheduler's base, and half a pair refused") {
  auto r = Env{{{"TEST_SHARD_INDEX", "0"}, {"TEST_TOTAL_SHARDS", "2"}, {"TEST_SHARD_STATUS_FILE", "/tmp/x"}}}.shard();
  REQUIRE(r);
  CHECK(r->index == 1);
  CHECK(r->status_file == "/tmp/x");
  r = Env{{{"CI_NODE_INDEX", "2"}, {"CI_NODE_TOTAL", "2"}}}.shard();
  REQUIRE(r);
  CHECK(r->index == 2);
  CHECK(r->source == "GitLab");
  CHECK(usage_message(Env{{{"CI_NODE_INDEX", "0"}, {"CI_NODE_TOTAL", "2"}}}).find("counts from 1") !=
        std::string::npos);
  r = Env{{{"BUILDKITE_PARALLEL_JOB", "1"}, {"BUILDKITE_PARALLEL_JOB_COUNT", "2"}}}.shard();
  REQUIRE(r);
  CHECK(r->index == 2);
  CHECK(usage_message(Env{{{"BUILDKITE_PARALLEL_JOB", "1"}}}).find("without BUILDKITE_PARALLEL_JOB_COUNT") !=
        std::string::npos);
  CHECK(usage_message(Env{{{"CI_NODE_INDEX", "3"}, {"CI_NODE_TOTAL", "2"}}}).find("out of range") != std::string::npos);
}

TEST_CASE("the command of the whole plan drops --shard and --shards") {
  CHECK(ra::fleet::unsharded_command({"repro-audit", "probes", "--shard", "2/4", "--report", "r.json"}) ==
        std::vector<std::string>{"repro-audit", "probes", "--report", "r.json"});
  CHECK(ra::fleet::unsharded_command({"repro-audit", "run", "m.pt", "--shard=1/2", "--shards", "3"}) ==
        std::vector<std::string>{"repro-audit", "run", "m.pt"});
  // exec: the user's command after -- is kept whole, its own --shard included.
  CHECK(
      ra::fleet::unsharded_command({"repro-audit", "exec", "--shard", "1/2", "--", "python", "t.py", "--shard", "3"}) ==
      std::vector<std::string>{"repro-audit", "exec", "--", "python", "t.py", "--shard", "3"});
}

TEST_CASE("a shard record survives the JSON round trip, and a range outside the plan is refused") {
  ra::report::Report r;
  r.tool_version = "0.1.0";
  r.environment = nlohmann::ordered_json::object();
  ra::report::ShardInfo s;
  s.plan = std::string(32, 'a');
  s.index = 2;
  s.count = 3;
  s.plan_cells = 6;
  s.configs = {"default", "det"};
  s.first_cell = 2;
  s.last_cell = 4;
  s.source = "the Slurm array";
  s.variables = {{"SLURM_ARRAY_TASK_ID", "1"}};
  s.host = "node7";
  s.census = {{"index_add", true, {"an alert"}}};
  r.shard = s;
  ra::report::finalize(r);
  const std::string text = ra::report::render_json(r);
  auto j = nlohmann::ordered_json::parse(text);
  const auto back = ra::report::report_from_json(j);
  REQUIRE(back.shard);
  CHECK(back.shard->host == "node7");
  CHECK(back.shard->census.front().alerts == std::vector<std::string>{"an alert"});
  CHECK(ra::report::render_json(back) == text);
  j["shard"]["last_cell"] = 7;
  CHECK_THROWS_AS(ra::report::report_from_json(j), ra::report::ReportError);
}

TEST_CASE("a merged report's fleet survives the JSON round trip, and the summary says where shards ran") {
  ra::report::Report r;
  r.tool_version = "0.1.0";
  r.environment = nlohmann::ordered_json::object();
  ra::report::Fleet f;
  f.count = 3;
  f.plan = std::string(32, 'b');
  f.replicated = true;
  f.shards = {{1, "node1", "the Slurm array", 0, 2, 1, 1000},
              {2, "node1", "the Slurm array", 2, 4, 1, 2000},
              {3, "node2", "the Slurm array", 4, 6, 2, 500}};
  ra::report::FleetMachine m1, m2;
  m1.environment = {{"cuda", {{"driver", "580"}}}};
  m1.shards = {1, 2};
  m2.environment = {{"cuda", {{"driver", "590"}}}};
  m2.shards = {3};
  m2.changes = {{"cuda.driver", "580", "590", "cuda"}};
  f.machines = {m1, m2};
  f.failures = {{"m.pt", "det", "crashed", "node2", 3, 2}};
  f.cells = {{"m.pt", "default", {"aa", "aa"}, true}, {"m.pt", "det", {"aa", "bb"}, false}};
  f.notes = {"a note"};
  r.fleet = f;
  ra::report::finalize(r);
  const std::string text = ra::report::render_json(r);
  const auto back = ra::report::report_from_json(nlohmann::ordered_json::parse(text));
  REQUIRE(back.fleet);
  CHECK(ra::report::render_json(back) == text);
  const std::string summary = ra::report::fleet_text(r);
  CHECK(summary.find(
            "merged from 3 shards of plan bbbbbbbbbbbb on 2 hosts: node1 (shards 1-2 of 3), node2 (shard 3 of 3)") !=
        std::string::npos);
  CHECK(summary.find("machine 2 (shards 3) differs from machine 1 in cuda.driver 580 -> 590") != std::string::npos);
  CHECK(summary.find("crashed: m.pt / det on node2 (shard 3/3)") != std::string::npos);
  CHECK(summary.find("1 of 2 cells gave the same bits on every one; not: m.pt / det") != std::string::npos);
}
