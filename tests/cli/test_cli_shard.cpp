// SPDX-License-Identifier: Apache-2.0
// --shard K/N and `repro-audit merge` end to end: the shards of a plan joined give the report one
// process running the whole plan gives (outside `timing` and `fleet`, which say when and where
// they ran), including a configuration dependence and its traced cause across shards; bad
// requests and foreign, duplicate or missing shards exit with one line and write nothing.
#include "tests/cli/harness.h"

// torch before doctest: c10 defines a CHECK macro that doctest must override.
#include <torch/script.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

using ra::test::run_cli;

namespace {

// The full sum of a 256x16384 product: its reduction order, so its bits, follow the thread count.
constexpr const char* kFullSumModel = R"JIT(
def forward(self, x):
    return torch.sum(torch.matmul(x, self.w))
)JIT";

// A variable set for the scope of a test.
class ScopedEnv {
 public:
  explicit ScopedEnv(std::vector<std::pair<std::string, std::string>> vars) : vars_(std::move(vars)) {
    for (const auto& [k, v] : vars_) ::setenv(k.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto& [k, v] : vars_) ::unsetenv(k.c_str());
  }

 private:
  std::vector<std::pair<std::string, std::string>> vars_;
};

// The report without what says when and where it ran, and without the command (whose --report
// paths differ between the runs compared).
nlohmann::json results_of(const std::string& path) {
  nlohmann::json j = ra::test::read_json(path);
  j.erase("timing");
  j.erase("fleet");
  j.erase("command");
  return j;
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// Runs `args` as shards 1..n, each with its own --report in `dir`; returns the reports' paths.
std::vector<std::string> run_shards(const ra::test::TempDir& dir, const std::vector<std::string>& args, int n,
                                    const std::string& prefix = "shard") {
  std::vector<std::string> paths;
  for (int k = 1; k <= n; ++k) {
    paths.push_back(dir.file(prefix + std::to_string(k) + ".json"));
    const auto r =
        run_cli(with(args, {"--shard", std::to_string(k) + "/" + std::to_string(n), "--report", paths.back()}));
    CAPTURE(r.err);
    REQUIRE((r.code == 0 || r.code == 1));
  }
  return paths;
}

}  // namespace

TEST_CASE("shard: a traced model's configurations over 3 shards merge into the unsharded report") {
  ra::test::TempDir dir;
  const std::string model = dir.file("sum.pt");
  ra::test::save_model(model, kFullSumModel, {{"w", {64, 16384}}});
  const std::vector<std::string> args = {"run",    model, "--shape", "256x64", "--configs", "default,threads-1,det",
                                         "--trace"};
  const auto whole = run_cli(with(args, {"--report", dir.file("whole.json")}));
  REQUIRE(whole.code == 0);
  const auto shards = run_shards(dir, args, 3);
  // Each shard ran one configuration, and kept its reference tensors and trace for merge.
  for (int k = 0; k < 3; ++k) {
    const auto j = ra::test::read_json(shards[k]);
    CHECK(j["shard"]["index"] == k + 1);
    CHECK(j["targets"][0]["configs"].size() == 1);
    CHECK(std::filesystem::exists(shards[k] + ".tensors/cell-" + std::to_string(k) + ".pt"));
    CHECK(std::filesystem::exists(shards[k] + ".tensors/cell-" + std::to_string(k) + ".trace"));
  }
  const std::string merged = ra::test::fresh(RA_REPORT_DIR, "merged.json");
  const auto r = run_cli({"merge", shards[0], shards[1], shards[2], "--report", merged});
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(results_of(merged) == results_of(dir.file("whole.json")));
  const auto j = ra::test::read_json(merged);
  // The dependence spans shards: found again from the kept tensors and traces.
  REQUIRE(j["targets"][0]["configuration_dependent"] == true);
  CHECK(j["targets"][0]["configuration_dependence"]["causes"][0]["trace"]["root_causes"][0]["op"] == "aten::sum");
  CHECK(j["targets"][0]["configuration_dependence"]["differing_tensors"][0]["stats"]["differing"] == 1);
  // The command is shard 1's without --shard 1/3.
  const nlohmann::json first = ra::test::read_json(shards[0]);
  std::vector<std::string> command = first["command"].get<std::vector<std::string>>();
  const auto at = std::find(command.begin(), command.end(), "--shard");
  REQUIRE(at != command.end());
  command.erase(at, at + 2);
  CHECK(j["command"].get<std::vector<std::string>>() == command);
  CHECK(j["fleet"]["shards"].size() == 3);
  CHECK(r.out.find("merged from 3 shards of plan") != std::string::npos);
  // A shard's own report validates against the schema too.
  std::filesystem::copy_file(shards[1], ra::test::fresh(RA_REPORT_DIR, "shard.json"));
}

TEST_CASE("shard: probes as 5 shards merge into the unsharded report, probe findings and census included") {
  ra::test::TempDir dir;
  // Reproducible probes, three of them configuration-dependent on the CPU, whose cells the five
  // blocks split mid-target.
  const std::vector<std::string> args = {"probes", "--only", "sum.threads,dot.threads,matmul.mkl,empty.uninitialized"};
  const auto whole = run_cli(with(args, {"--report", dir.file("whole.json")}));
  REQUIRE(whole.code == 0);
  const auto shards = run_shards(dir, args, 5);
  std::vector<std::string> merge = {"merge"};
  // Given in any order.
  for (auto it = shards.rbegin(); it != shards.rend(); ++it) merge.push_back(*it);
  merge.insert(merge.end(), {"--report", dir.file("merged.json"), "--junit", dir.file("merged.xml")});
  const auto r = run_cli(merge);
  CAPTURE(r.err);
  CHECK(r.code == 0);
  const auto m = results_of(dir.file("merged.json"));
  CHECK(m == results_of(dir.file("whole.json")));
  int dependent = 0;
  for (const auto& t : m["targets"]) dependent += t["configuration_dependent"].get<bool>();
  CHECK(dependent >= 3);
  CHECK(std::filesystem::exists(dir.file("merged.xml")));
}

TEST_CASE("shard: a plan with fewer cells than shards leaves an empty but valid shard") {
  ra::test::TempDir dir;
  const std::string model = dir.file("m.pt");
  ra::test::save_model(model, ra::test::kLinearReluModel, {{"w", {16, 8}}});
  const std::vector<std::string> args = {"run", model, "--shape", "4x16", "--configs", "default"};
  const auto empty = run_cli(with(args, {"--shard", "2/2", "--report", dir.file("s2.json")}));
  CHECK(empty.code == 0);
  CHECK(empty.err.find("no cell to run") != std::string::npos);
  CHECK(empty.out.find("shard 2/2 (--shard): no cell") != std::string::npos);
  CHECK(ra::test::read_json(dir.file("s2.json"))["targets"].empty());
  REQUIRE(run_cli(with(args, {"--shard", "1/2", "--report", dir.file("s1.json")})).code == 0);
  REQUIRE(run_cli(with(args, {"--report", dir.file("whole.json")})).code == 0);
  const auto r = run_cli({"merge", dir.file("s1.json"), dir.file("s2.json"), "--report", dir.file("merged.json")});
  CHECK(r.code == 0);
  CHECK(results_of(dir.file("merged.json")) == results_of(dir.file("whole.json")));
}

TEST_CASE("shard: missing, duplicate, foreign and unsharded reports exit 3 naming them, and nothing is written") {
  ra::test::TempDir dir;
  const std::string model = dir.file("m.pt");
  ra::test::save_model(model, ra::test::kLinearReluModel, {{"w", {16, 8}}});
  const std::vector<std::string> args = {"run",       model, "--shape", "4x16", "--configs", "default,threads-1,det",
                                         "--repeats", "2"};
  const auto shards = run_shards(dir, args, 3);
  const auto other = run_shards(dir, with(args, {"--seed", "7"}), 3, "seed7-");
  REQUIRE(run_cli(with(args, {"--report", dir.file("whole.json")})).code == 0);
  const std::string out = dir.file("merged.json");
  const auto refused = [&](std::vector<std::string> files, const std::string& message) {
    std::vector<std::string> cmd = {"merge"};
    cmd.insert(cmd.end(), files.begin(), files.end());
    cmd.insert(cmd.end(), {"--report", out, "--html", dir.file("merged.html")});
    const auto r = run_cli(cmd);
    CAPTURE(r.err);
    CHECK(r.code == 3);
    CHECK(r.err.find(message) != std::string::npos);
    CHECK(ra::test::count_lines(r.err) == 1);
    CHECK(r.out.empty());
    CHECK_FALSE(std::filesystem::exists(out));
    CHECK_FALSE(std::filesystem::exists(dir.file("merged.html")));
  };
  refused({shards[0], shards[2]}, "shard 2/3 of plan ");
  refused({shards[0], shards[2]}, "is missing (2 of 3 given)");
  refused({shards[0], shards[1], shards[1], shards[2]}, "shard 2/3 is given twice");
  refused({shards[0], shards[1], shards[2], other[0]}, "seed7-1.json (plan ");
  refused({shards[0], shards[1], dir.file("whole.json")}, "whole.json is not a shard");
  refused({shards[0], dir.file("nosuch.json")}, "nosuch.json");
  std::filesystem::resize_file(shards[2], 100);
  refused({shards[0], shards[1], shards[2]}, "shard3.json");
}

TEST_CASE("shard: bad --shard values and inconsistent scheduler variables are usage errors") {
  ra::test::TempDir dir;
  const std::string model = dir.file("m.pt");
  ra::test::save_model(model, ra::test::kLinearReluModel, {{"w", {16, 8}}});
  const std::vector<std::string> args = {"run", model, "--shape", "4x16"};
  for (const char* bad : {"0/4", "5/4", "a/b", "3"})
    ra::test::expect_error(dir, with(args, {"--shard", bad}), 2, "--shard");
  // A shard's result is its report: no --report, no shard.
  const auto r = run_cli(with(args, {"--shard", "1/2"}));
  CHECK(r.code == 2);
  CHECK(r.err.find("needs --report FILE") != std::string::npos);
  {
    // An array whose tasks run different audits: the variables would shard this one; the message
    // says how not to, and --shard 1/1 runs every cell.
    ScopedEnv env({{"CI_NODE_INDEX", "2"}, {"CI_NODE_TOTAL", "2"}});
    const auto sharded = run_cli(args);
    CHECK(sharded.code == 2);
    CHECK(sharded.err.find("GitLab (CI_NODE_INDEX=2 CI_NODE_TOTAL=2) makes this shard 2/2") != std::string::npos);
    CHECK(sharded.err.find("pass --shard 1/1") != std::string::npos);
    const auto whole = run_cli(with(args, {"--shard", "1/1"}));
    CHECK(whole.code == 0);
    CHECK(whole.out.find("shard") == std::string::npos);
  }
  {
    ScopedEnv env({{"CI_NODE_INDEX", "3"}, {"CI_NODE_TOTAL", "2"}});
    ra::test::expect_error(dir, args, 2, "GitLab says this job is sharded, but shard 3 of 2 is out of range");
  }
  {
    ScopedEnv env({{"SLURM_ARRAY_TASK_ID", "3"},
                   {"SLURM_ARRAY_TASK_COUNT", "3"},
                   {"SLURM_ARRAY_TASK_MIN", "1"},
                   {"SLURM_ARRAY_TASK_MAX", "7"}});
    ra::test::expect_error(dir, args, 2, "cannot be mapped to shards");
  }
  {
    ScopedEnv env(std::vector<std::pair<std::string, std::string>>{{"JOB_COMPLETION_INDEX", "1"}});
    ra::test::expect_error(dir, args, 2, "add --shards N");
  }
  ra::test::expect_error(dir, with(args, {"--shards", "2"}), 2, "--shards N applies to a Kubernetes Indexed Job");
}

TEST_CASE("shard: the scheduler's variables name the shard, and the report records them") {
  ra::test::TempDir dir;
  const std::string model = dir.file("m.pt");
  ra::test::save_model(model, ra::test::kLinearReluModel, {{"w", {16, 8}}});
  const std::vector<std::string> args = {"run", model, "--shape", "4x16", "--configs", "default,det", "--repeats", "2"};
  {
    ScopedEnv env(std::vector<std::pair<std::string, std::string>>{{"JOB_COMPLETION_INDEX", "1"}});
    const auto r = run_cli(with(args, {"--shards", "2", "--report", dir.file("k.json")}));
    CAPTURE(r.err);
    REQUIRE(r.code == 0);
    const nlohmann::json j = ra::test::read_json(dir.file("k.json"));
    REQUIRE(j["targets"].size() == 1);
    CHECK(j["shard"]["index"] == 2);
    CHECK(j["shard"]["source"] == "the Kubernetes Indexed Job");
    CHECK(j["shard"]["variables"]["JOB_COMPLETION_INDEX"] == "1");
    CHECK(j["targets"][0]["configs"][0]["config"] == "det");
  }
  {
    // Bazel: the status file is touched to say the test runner shards.
    ScopedEnv env(
        {{"TEST_SHARD_INDEX", "0"}, {"TEST_TOTAL_SHARDS", "2"}, {"TEST_SHARD_STATUS_FILE", dir.file("status")}});
    const auto r = run_cli(with(args, {"--report", dir.file("b.json")}));
    CHECK(r.code == 0);
    CHECK(std::filesystem::exists(dir.file("status")));
    CHECK(ra::test::read_json(dir.file("b.json"))["shard"]["source"] == "Bazel");
  }
  const auto m = run_cli({"merge", dir.file("b.json"), dir.file("k.json")});
  CHECK(m.code == 0);
  CHECK(m.out.find("merged from 2 shards") != std::string::npos);
}

TEST_CASE("shard: a cell that crashed in a shard is named in the merged report with its host and shard") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("f.pt"), ra::test::kFaultModel, {{"w", {8, 8}}});
  // ra_test.fault segfaults with one intra-op thread: threads-1 crashes, in shard 2 of 2.
  const std::vector<std::string> args = {"run",
                                         dir.file("f.pt"),
                                         "--shape",
                                         "2x8",
                                         "--configs",
                                         "threads=2,threads-1",
                                         "--repeats",
                                         "2",
                                         "--load-library",
                                         ra::test::test_ops_library(),
                                         "--quiet"};
  for (int k = 1; k <= 2; ++k) {
    const auto r = run_cli(
        with(args, {"--shard", std::to_string(k) + "/2", "--report", dir.file("s" + std::to_string(k) + ".json")}));
    CHECK(r.code == (k == 1 ? 0 : 4));
  }
  const auto r = run_cli({"merge", dir.file("s1.json"), dir.file("s2.json"), "--report", dir.file("m.json")});
  CAPTURE(r.err);
  CHECK(r.code == 4);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const nlohmann::json j = ra::test::read_json(dir.file("m.json"));
  REQUIRE(j["fleet"]["failures"].size() == 1);
  const auto& failure = j["fleet"]["failures"][0];
  CHECK(failure["config"] == "threads-1");
  CHECK(failure["status"] == "crashed");
  CHECK(failure["shard"] == 2);
  CHECK(failure["host"] == std::string(host));
  CHECK(r.out.find("crashed: f.pt / threads-1 on " + std::string(host) + " (shard 2/2)") != std::string::npos);
  // Exit 4 says why on stderr, in one line, whatever the command: merge's too.
  CHECK(ra::test::count_lines(r.err) == 1);
  CHECK(r.err.rfind("repro-audit: verdict incomplete: f.pt, configuration threads-1 crashed: ", 0) == 0);
}

TEST_CASE("shard: merge of an invariance shard whose negative control saw nothing exits 4 saying so on stderr") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), ra::test::kDoubleModel, {});
  ra::test::save_value(dir.file("rows.pt"), torch::arange(32, torch::kFloat).reshape({8, 4}));
  const std::vector<std::string> paths = run_shards(
      dir, {"invariance", dir.file("m.pt"), "--input", dir.file("rows.pt"), "--sizes", "1,2,3", "--quiet"}, 2);
  // Shard 2 as a machine whose comparison could not see a flipped bit would have written it.
  nlohmann::json blind = ra::test::read_json(paths[1]);
  REQUIRE(blind["invariance"]["control"]["detected"] == true);
  blind["invariance"]["control"] = {{"detected", false}, {"evidence", "FAILED: the flipped bit went unseen"}};
  blind["exit_code"] = 4;
  std::ofstream(paths[1]) << blind.dump();
  const auto r = run_cli({"merge", paths[0], paths[1], "--report", dir.file("m.json"), "--quiet"});
  CAPTURE(r.err);
  CHECK(r.code == 4);
  CHECK(ra::test::count_lines(r.err) == 1);
  CHECK(r.err.rfind("repro-audit: verdict incomplete: the negative control", 0) == 0);
  CHECK(r.err.find("shard 2/2: FAILED: the flipped bit went unseen") != std::string::npos);
  // The merged report carries the control that failed, not the first shard's that passed.
  const nlohmann::json j = ra::test::read_json(dir.file("m.json"));
  CHECK(j["invariance"]["control"]["detected"] == false);
  CHECK(j["invariance"]["control"]["evidence"] == "shard 2/2: FAILED: the flipped bit went unseen");
}

TEST_CASE("shard: REPORT.tensors replaces only a folder an earlier shard wrote; anything else exits 3") {
  ra::test::TempDir dir;
  const std::string model = dir.file("m.pt");
  ra::test::save_model(model, ra::test::kLinearReluModel, {{"w", {16, 8}}});
  const auto shard = [&](const std::string& report) {
    return std::vector<std::string>{"run",     model,     "--shape", "4x16",     "--configs",     "default,threads-1",
                                    "--quiet", "--shard", "1/2",     "--report", dir.file(report)};
  };
  for (int round = 0; round < 2; ++round) {  // the second replaces the first's folder
    const auto r = run_cli(shard("s.json"));
    CAPTURE(r.err);
    REQUIRE(r.code == 0);
    std::vector<std::string> kept;
    for (const auto& e : std::filesystem::directory_iterator(dir.file("s.json.tensors")))
      kept.push_back(e.path().filename().string());
    std::sort(kept.begin(), kept.end());
    CHECK(kept == std::vector<std::string>{"cell-0.pt", "repro-audit.manifest"});
  }
  for (const auto& [name, why] : ra::test::plant_folder_obstacles(dir, dir.file("s.json.tensors"))) {
    CAPTURE(name);
    ra::test::expect_error(
        dir, shard(name + ".json"), 3,
        "cannot keep the shard's reference tensors in '" + dir.file(name + ".json.tensors") + "': " + why);
    CHECK_FALSE(ra::test::file_exists(dir.file(name + ".json")));
  }
  ra::test::check_folder_obstacles(dir);
}
