// SPDX-License-Identifier: Apache-2.0
// `repro-audit run --mode train`: the optimizers, and the restart-replay check, end to end on CPU.
#include "tests/cli/harness.h"

// torch before doctest: c10 defines a CHECK macro that doctest must override.
#include <torch/script.h>

#include <doctest/doctest.h>

using ra::test::run_cli;

namespace {

const char* kLinear = ra::test::kLinearReluModel;

// Dropout in train mode draws its mask from the CPU generator at every step.
const char* kDropout = R"JIT(
def forward(self, x):
    h = torch.matmul(x, self.w)
    return torch.dropout(h, 0.5, self.training)
)JIT";

struct ReplayRun {
  ra::test::CliResult cli;
  nlohmann::json report;
};

ReplayRun run_replay(const ra::test::TempDir& dir, const std::string& model, std::vector<std::string> extra) {
  std::vector<std::string> args = {
      "run",      dir.file(model), "--shape", "4x16",      "--mode", "train",    "--steps",          "4",
      "--replay", "--configs",     "default", "--repeats", "2",      "--report", dir.file("r.json"), "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  ReplayRun r;
  r.cli = run_cli(args);
  if (ra::test::file_exists(dir.file("r.json"))) r.report = ra::test::read_json(dir.file("r.json"));
  return r;
}

const nlohmann::json& component(const nlohmann::json& replay, const std::string& name) {
  for (const auto& c : replay["components"])
    if (c["name"] == name) return c;
  FAIL("no component " << name);
  return replay;
}

}  // namespace

TEST_CASE("run --replay: a deterministic model resumes bit for bit, with sgd and with adam") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), kLinear, {{"w", {16, 8}}});
  for (const std::string optimizer : {"sgd", "adam"}) {
    CAPTURE(optimizer);
    const auto r = run_replay(dir, "m.pt", {"--optimizer", optimizer});
    CAPTURE(r.cli.err);
    CHECK(r.cli.code == 0);
    const auto& t = r.report["targets"][0];
    CHECK(t["optimizer"]["name"] == optimizer);
    CHECK(t["optimizer"]["lr"].get<double>() == (optimizer == "adam" ? 0.001 : 0.01));
    const auto& replay = t["replay"];
    CHECK(replay["verdict"] == "reproducible");
    CHECK(replay["config"] == "default");
    CHECK(replay["steps_before"] == 2);
    CHECK(replay["steps_after"] == 2);
    CHECK(replay["reason"] == "");
    CHECK(replay["tensors_compared"] == 8);  // steps 3 and 4: output, loss, grad/w, param/w
    CHECK(replay["differing_tensors"].empty());
    // Adam keeps step, exp_avg and exp_avg_sq for w; plain SGD keeps nothing.
    CHECK(component(replay, "optimizer")["tensors"] == (optimizer == "adam" ? 3 : 0));
    for (const auto& c : replay["components"]) {
      CHECK(c["saved_match"] == true);
      CHECK(c["restored_match"] == true);
    }
    CHECK(r.cli.out.find("train, 4 steps, " + optimizer + " lr") != std::string::npos);
    CHECK(
        r.cli.out.find("restart-replay under default (2 steps, checkpoint, 2 more in a fresh process): reproducible") !=
        std::string::npos);
  }
}

TEST_CASE("run --optimizer: adam and sgd train differently, and --lr is used") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), kLinear, {{"w", {16, 8}}});
  std::vector<nlohmann::json> digests;
  for (const auto& extra : {std::vector<std::string>{"--optimizer", "sgd"},
                            {"--optimizer", "adam"},
                            {"--optimizer", "adam", "--lr", "0.5"}}) {
    std::vector<std::string> args = {
        "run",     dir.file("m.pt"), "--shape", "4x16",     "--mode",           "train",  "--steps", "2", "--configs",
        "default", "--repeats",      "2",       "--report", dir.file("r.json"), "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_cli(args);
    CHECK(r.code == 0);
    const auto j = ra::test::read_json(dir.file("r.json"));
    CHECK(!j["targets"][0].contains("replay"));
    digests.push_back(j["targets"][0]["configs"][0]["reference_digests"]);
  }
  CHECK(digests[0] != digests[1]);
  CHECK(digests[1] != digests[2]);
}

TEST_CASE("run --replay: dropout resumes with a full restore, and diverges when the generator state is omitted") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("d.pt"), kDropout, {{"w", {16, 8}}});
  const auto full = run_replay(dir, "d.pt", {});
  CAPTURE(full.cli.err);
  CHECK(full.cli.code == 0);
  CHECK(full.report["targets"][0]["configs"][0]["verdict"] == "reproducible");
  CHECK(full.report["targets"][0]["replay"]["verdict"] == "reproducible");

  const auto omit = run_replay(dir, "d.pt", {"--replay-omit", "rng"});
  CAPTURE(omit.cli.err);
  CHECK(omit.cli.code == 1);
  CHECK(omit.report["verdict"] == "diverged");
  CHECK(omit.report["targets"][0]["configs"][0]["verdict"] == "reproducible");
  const auto& replay = omit.report["targets"][0]["replay"];
  CHECK(replay["verdict"] == "diverged");
  CHECK(replay["omit"] == nlohmann::json::array({"rng"}));
  const std::string reason = replay["reason"];
  CHECK(reason.find("the CPU generator state after restore differs from the uninterrupted run's at step 2") == 0);
  CHECK(reason.find("--replay-omit rng") != std::string::npos);
  const auto& gen = component(replay, "generator/cpu");
  CHECK(gen["in_checkpoint"] == false);
  CHECK(gen["saved_match"] == true);
  CHECK(gen["restored_match"] == false);
  CHECK(component(replay, "parameters")["restored_match"] == true);
  REQUIRE(!replay["differing_tensors"].empty());
  CHECK(replay["differing_tensors"][0]["name"] == "step3/output");
  CHECK(replay["differing_tensors"][0]["stats"]["differing"].get<int>() >= 1);
  CHECK(omit.cli.out.find("generator/cpu differs (not in the checkpoint)") != std::string::npos);
  CHECK(omit.cli.out.find("verdict: diverged (exit 1)") != std::string::npos);
}

TEST_CASE("run --replay-omit optimizer: adam without its state diverges, naming the optimizer state") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), kLinear, {{"w", {16, 8}}});
  const auto r = run_replay(dir, "m.pt", {"--optimizer", "adam", "--replay-omit", "optimizer"});
  CAPTURE(r.cli.err);
  CHECK(r.cli.code == 1);
  const auto& replay = r.report["targets"][0]["replay"];
  CHECK(replay["verdict"] == "diverged");
  CHECK(replay["reason"].get<std::string>().find("the optimizer state after restore differs") == 0);
  CHECK(component(replay, "optimizer")["restored_match"] == false);
  CHECK(component(replay, "optimizer")["in_checkpoint"] == false);
  CHECK(component(replay, "parameters")["restored_match"] == true);
  // Plain SGD has no state: leaving it out changes nothing.
  const auto sgd = run_replay(dir, "m.pt", {"--optimizer", "sgd", "--replay-omit", "optimizer"});
  CHECK(sgd.cli.code == 0);
  CHECK(sgd.report["targets"][0]["replay"]["verdict"] == "reproducible");
}

TEST_CASE("run --replay: usage errors (exit 2, one line, no report)") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), kLinear, {{"w", {16, 8}}});
  const std::string m = dir.file("m.pt");
  ra::test::expect_error(dir, {"run", m, "--shape", "4x16", "--replay"}, 2, "--replay needs --mode train");
  ra::test::expect_error(dir, {"run", m, "--shape", "4x16", "--mode", "train", "--replay"}, 2,
                         "--replay needs --steps 2 or more");
  ra::test::expect_error(dir, {"run", m, "--shape", "4x16", "--mode", "train", "--steps", "1", "--replay"}, 2,
                         "--replay needs --steps 2 or more");
  ra::test::expect_error(dir, {"run", m, "--shape", "4x16", "--mode", "train", "--steps", "2", "--replay-omit", "rng"},
                         2, "--replay-omit needs --replay");
  ra::test::expect_error(
      dir, {"run", m, "--shape", "4x16", "--mode", "train", "--steps", "2", "--replay", "--replay-omit", "weights"}, 2,
      "--replay-omit");
  ra::test::expect_error(dir, {"run", m, "--shape", "4x16", "--optimizer", "adam"}, 2,
                         "--optimizer and --lr need --mode train");
  ra::test::expect_error(dir, {"run", m, "--shape", "4x16", "--mode", "train", "--optimizer", "rmsprop"}, 2,
                         "--optimizer");
}
