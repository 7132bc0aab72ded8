// SPDX-License-Identifier: Apache-2.0
// `repro-audit run` end to end, on CPU.
#include "tests/cli/harness.h"

// torch before doctest: c10 defines a CHECK macro that doctest must override.
#include <torch/script.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

using ra::test::run_cli;

namespace {

const char* kLinear = ra::test::kLinearReluModel;

}  // namespace

TEST_CASE("run: a deterministic model is reproducible (exit 0)") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), kLinear, {{"w", {16, 8}}});
  const auto r = run_cli({"run", dir.file("m.pt"), "--shape", "4x16", "--configs", "default,det", "--report",
                          dir.file("r.json"), "--quiet"});
  CHECK(r.code == 0);
  CHECK(r.out.find("verdict: reproducible (exit 0)") != std::string::npos);
  // What three repeats can promise (Wilson's 95% upper bound for 0 of 2 comparisons).
  CHECK(r.out.find(
            "  reproducible: no divergence in 2 comparisons (3 runs); a divergence rate above 66% would have shown "
            "(95% confidence)\n") != std::string::npos);
  const auto more =
      run_cli({"run", dir.file("m.pt"), "--shape", "4x16", "--configs", "default", "--repeats", "20", "--quiet"});
  CHECK(more.out.find("no divergence in 19 comparisons (20 runs); a divergence rate above 17% would have shown") !=
        std::string::npos);
  const auto j = ra::test::read_json(dir.file("r.json"));
  CHECK(j["verdict"] == "reproducible");
  CHECK(j["exit_code"] == 0);
  const auto& configs = j["targets"][0]["configs"];
  REQUIRE(configs.size() == 2);
  for (const auto& c : configs) {
    CHECK(c["verdict"] == "reproducible");
    CHECK(c["completed"] == 3);
    CHECK(c["reference_digests"].size() == 2);  // param/w and output
  }
  CHECK(configs[1]["switches"][3]["key"] == "deterministic");
  CHECK(configs[1]["switches"][3]["effective"] == "on");
  CHECK(j["environment"]["torch"]["version"] == ra::test::python_torch_version());
}

TEST_CASE("run: the test-only nondeterministic op diverges (exit 1) with statistics") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("nd.pt"), ra::test::kNondetSumModel, {{"w", {64, 4096}}});
  const auto r = run_cli({"run", dir.file("nd.pt"), "--shape", "8x64", "--configs", "default", "--repeats", "4",
                          "--load-library", ra::test::test_ops_library(), "--report", dir.file("r.json"), "--quiet"});
  CHECK(r.code == 1);
  const auto j = ra::test::read_json(dir.file("r.json"));
  const auto& c = j["targets"][0]["configs"][0];
  CHECK(c["verdict"] == "diverged");
  CHECK(c["divergence"]["diverging_repeats"].get<int>() >= 1);
  CHECK(c["divergence"]["rate"].get<double>() > 0);
  REQUIRE(c["diverged_tensors"].size() == 1);
  const auto& t = c["diverged_tensors"][0];
  CHECK(t["name"] == "output");
  CHECK(t["stats"]["differing"].get<int>() >= 1);
  CHECK(t["stats"]["max_ulp"].get<double>() >= 1);
  CHECK(t["stats"]["max_abs_diff"].get<double>() > 0);
  CHECK(t["stats"]["first_index"].get<int>() >= 0);
}

TEST_CASE("run --repeats auto: repeats until each configuration is decided, and the report counts them") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), kLinear, {{"w", {16, 8}}});
  // Clean runs: 4 comparisons bound the rate at 49%, below the 50% asked.
  const auto r = run_cli({"run", dir.file("m.pt"), "--shape", "4x16", "--configs", "default,threads-1", "--repeats",
                          "auto", "--detect-rate", "50%", "--report", dir.file("r.json"), "--quiet"});
  CHECK(r.code == 0);
  CHECK(r.out.find(
            "repeats: auto, 3 to 20 runs per configuration, each until a divergence, a failure, or no divergence in "
            "enough runs to rule out a rate above 50% (95% confidence)\n") != std::string::npos);
  const auto j = ra::test::read_json(dir.file("r.json"));
  CHECK(j["auto_repeats"] == nlohmann::json({{"min", 3}, {"max", 20}, {"detect_rate", 0.5}}));
  for (const auto& c : j["targets"][0]["configs"]) {
    CHECK(c["repeats"] == 5);
    CHECK(c["stopped_by"] == "confidence");
  }

  // A rate too small for --max-repeats: stopped there, undecided, and said so.
  const auto capped =
      run_cli({"run", dir.file("m.pt"), "--shape", "4x16", "--configs", "default", "--repeats", "auto", "--detect-rate",
               "0.01", "--max-repeats", "4", "--report", dir.file("c.json"), "--quiet"});
  CHECK(capped.code == 0);
  CHECK(
      capped.out.find("undecided at --max-repeats 4: no divergence in 3 comparisons rules out only a rate above 56%") !=
      std::string::npos);
  CHECK(capped.out.find("; 1 of 1 undecided at --max-repeats") != std::string::npos);
  const auto c = ra::test::read_json(dir.file("c.json"))["targets"][0]["configs"][0];
  CHECK(c["repeats"] == 4);
  CHECK(c["stopped_by"] == "max-repeats");

  // A divergence decides at once: the first round is enough for an op that diverges every time.
  ra::test::save_model(dir.file("nd.pt"), ra::test::kNondetSumModel, {{"w", {64, 4096}}});
  const auto nd = run_cli({"run", dir.file("nd.pt"), "--shape", "8x64", "--configs", "default", "--repeats", "auto",
                           "--load-library", ra::test::test_ops_library(), "--report", dir.file("nd.json"), "--quiet"});
  CHECK(nd.code == 1);
  const auto d = ra::test::read_json(dir.file("nd.json"))["targets"][0]["configs"][0];
  CHECK(d["verdict"] == "diverged");
  CHECK(d["stopped_by"] == "divergence");
  CHECK(d["repeats"] == 3);

  // A fixed count records no rule.
  const auto fixed = run_cli(
      {"run", dir.file("m.pt"), "--shape", "4x16", "--configs", "default", "--report", dir.file("f.json"), "--quiet"});
  CHECK(fixed.code == 0);
  const auto f = ra::test::read_json(dir.file("f.json"));
  CHECK_FALSE(f.contains("auto_repeats"));
  CHECK_FALSE(f["targets"][0]["configs"][0].contains("stopped_by"));
}

TEST_CASE("run: --repeats takes a count or auto; --max-repeats and --detect-rate need auto") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), kLinear, {{"w", {16, 8}}});
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--repeats", "often"}, "--repeats: expected a count from 1 to 1000000 or 'auto', got 'often'"},
      {{"--repeats", "0"}, "--repeats: expected a count from 1 to 1000000 or 'auto', got '0'"},
      {{"--max-repeats", "10"}, "--max-repeats applies to --repeats auto"},
      {{"--detect-rate", "10%"}, "--detect-rate applies to --repeats auto"},
      {{"--repeats", "auto", "--detect-rate", "1.5"},
       "--detect-rate: expected a rate above 0 and below 1 (0.2 or 20%), got '1.5'"},
      {{"--repeats", "auto", "--max-repeats", "2"}, "--max-repeats: expected an integer from 3 to 1000000, got '2'"},
  };
  for (const auto& [extra, message] : cases) {
    std::vector<std::string> args = {"run", dir.file("m.pt"), "--shape", "4x16"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_cli(args);
    CHECK_MESSAGE(r.code == 2, message);
    CHECK_MESSAGE(r.err.find(message) != std::string::npos, r.err);
  }
}

TEST_CASE("run: --rtol/--atol judge each differing tensor; --tolerant alone turns within-tolerance into exit 0") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("nd.pt"), ra::test::kNondetSumModel, {{"w", {64, 4096}}});
  const std::vector<std::string> base = {
      "run",     dir.file("nd.pt"), "--shape", "8x64",           "--configs",
      "default", "--repeats",       "3",       "--load-library", ra::test::test_ops_library(),
      "--quiet"};
  const auto with = [&](std::vector<std::string> extra, const std::string& report) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--report", dir.file(report), "--markdown", dir.file(report + ".md"), "--junit",
                             dir.file(report + ".xml")});
    return run_cli(args);
  };
  // A reordered float sum differs in the last bits: far inside rtol 1e-3.
  const auto informative = with({"--rtol", "1e-3"}, "i.json");
  CAPTURE(informative.err);
  CHECK(informative.code == 1);
  CHECK(informative.out.find("every differing element is within tolerance") != std::string::npos);
  CHECK(informative.out.find("; all within rtol 0.001, atol 0") != std::string::npos);
  const auto i = ra::test::read_json(dir.file("i.json"));
  CHECK(i["verdict"] == "diverged");
  CHECK(i["tolerance"]["rtol"] == 1e-3);
  CHECK(i["tolerance"]["tolerant"] == false);
  const auto& ic = i["targets"][0]["configs"][0];
  CHECK(ic["verdict"] == "diverged");
  CHECK(ic["within_tolerance"] == true);
  CHECK(ic["tolerated"] == false);
  CHECK(ic["diverged_tensors"][0]["stats"]["beyond_tolerance"] == 0);

  const auto tolerant = with({"--rtol", "1e-3", "--tolerant"}, "t.json");
  CHECK(tolerant.code == 0);
  CHECK(tolerant.out.find("within tolerance; accepted by --tolerant") != std::string::npos);
  const auto t = ra::test::read_json(dir.file("t.json"));
  CHECK(t["exit_code"] == 0);
  CHECK(t["targets"][0]["configs"][0]["verdict"] == "diverged");  // the bitwise verdict stays
  CHECK(t["targets"][0]["configs"][0]["tolerated"] == true);
  CHECK(ra::test::read_file(dir.file("t.json.md")).find("accepted by --tolerant") != std::string::npos);
  CHECK(ra::test::read_file(dir.file("t.json.xml"))
            .find("<skipped message=\"diverged, every differing element is within tolerance") != std::string::npos);

  // No tolerance at all: the last-bit difference is beyond it, and --tolerant changes nothing.
  const auto strict = with({"--rtol", "0", "--atol", "0", "--tolerant"}, "s.json");
  CHECK(strict.code == 1);
  const auto s = ra::test::read_json(dir.file("s.json"));
  CHECK(s["targets"][0]["configs"][0]["within_tolerance"] == false);
  CHECK(s["targets"][0]["configs"][0]["diverged_tensors"][0]["stats"]["beyond_tolerance"].get<int>() >= 1);

  ra::test::expect_error(dir, {"run", dir.file("nd.pt"), "--rtol", "-0.5"}, 2,
                         "--rtol: expected a number of at least 0, got '-0.5'");
  ra::test::expect_error(dir, {"probes", "--atol", "x"}, 2, "--atol: expected a number of at least 0, got 'x'");
}

TEST_CASE("run: a thread-count-dependent reduction is configuration-dependent, not nondeterministic") {
  ra::test::TempDir dir;
  // A full float32 sum of 16 Mi elements: ATen splits it into one partial sum per thread.
  ra::test::save_model(dir.file("red.pt"), R"JIT(
def forward(self, x):
    return torch.sum(x * self.scale)
)JIT",
                       {{"scale", {1}}});
  const auto r = run_cli({"run", dir.file("red.pt"), "--shape", "4096x4096", "--configs", "threads-1,threads-N",
                          "--repeats", "2", "--report", dir.file("r.json"), "--quiet"});
  CHECK(r.code == 0);
  const auto j = ra::test::read_json(dir.file("r.json"));
  const auto& t = j["targets"][0];
  CHECK(t["configs"][0]["verdict"] == "reproducible");
  CHECK(t["configs"][1]["verdict"] == "reproducible");
  CHECK(t["configuration_dependent"] == true);
  CHECK(t["configuration_dependence"]["groups"].size() == 2);
  CHECK(t["configuration_dependence"]["differing_tensors"].size() >= 1);
  CHECK(r.out.find("configuration-dependent") != std::string::npos);
}

TEST_CASE("run: a segfaulting and a hanging child give crashed and timeout (exit 4), the rest is reported") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("f.pt"), ra::test::kFaultModel, {{"w", {8, 8}}});
  const auto r = run_cli({"run", dir.file("f.pt"), "--shape", "2x8", "--configs", "threads=2,threads-1,threads=3",
                          "--repeats", "2", "--jobs", "3", "--timeout", "8", "--load-library",
                          ra::test::test_ops_library(), "--report", dir.file("r.json"), "--quiet"});
  CHECK(r.code == 4);
  const auto j = ra::test::read_json(dir.file("r.json"));
  const auto& configs = j["targets"][0]["configs"];
  REQUIRE(configs.size() == 3);
  CHECK(configs[0]["verdict"] == "reproducible");
  CHECK(configs[0]["completed"] == 2);
  CHECK(configs[1]["verdict"] == "crashed");
  CHECK(configs[1]["trials"][0]["status"] == "crashed");
  CHECK(configs[1]["trials"][0]["signal"] == 11);
  CHECK(configs[1]["message"].get<std::string>().find("SIGSEGV") != std::string::npos);
  CHECK(configs[2]["verdict"] == "timeout");
  CHECK(configs[2]["trials"][1]["status"] == "timeout");
  // --quiet prints no summary's reasons on stderr, yet exit 4 says why there: the first one, in one line.
  CAPTURE(r.err);
  CHECK(ra::test::count_lines(r.err) == 1);
  CHECK(r.err.rfind("repro-audit: verdict incomplete: f.pt, configuration threads-1 crashed: ", 0) == 0);
  CHECK(r.err.find("SIGSEGV") != std::string::npos);
}

TEST_CASE("run: inputs from a torch.save file (tuple and dict), and --jobs does not change digests") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("two.pt"), R"JIT(
def forward(self, a, b):
    return torch.matmul(a, self.w) + b
)JIT",
                       {{"w", {4, 3}}});
  auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
  const at::Tensor a = at::randn({2, 4}, gen), b = at::randn({2, 3}, gen);
  ra::test::save_value(dir.file("tuple.pt"), c10::ivalue::Tuple::create({a, b}));
  c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
  dict.insert("a", a);
  dict.insert("b", b);
  ra::test::save_value(dir.file("dict.pt"), dict);

  const auto t1 = run_cli({"run", dir.file("two.pt"), "--input", dir.file("tuple.pt"), "--configs", "default",
                           "--report", dir.file("t1.json"), "--quiet"});
  const auto t2 = run_cli({"run", dir.file("two.pt"), "--input", dir.file("dict.pt"), "--configs", "default", "--jobs",
                           "3", "--report", dir.file("t2.json"), "--quiet"});
  CHECK(t1.code == 0);
  CHECK(t2.code == 0);
  const auto j1 = ra::test::read_json(dir.file("t1.json")), j2 = ra::test::read_json(dir.file("t2.json"));
  CHECK(j1["targets"][0]["configs"][0]["reference_digests"] == j2["targets"][0]["configs"][0]["reference_digests"]);
  CHECK(j1["targets"][0]["inputs"].size() == 2);
  // Inputs are named after the forward arguments they fill; a dict's entries carry their keys.
  CHECK(j1["targets"][0]["input_names"] == nlohmann::json({"a", "b"}));
  CHECK(t1.out.find("  inputs: a: input/0=float32[2x4], b: input/1=float32[2x3]\n") != std::string::npos);
  CHECK_FALSE(j2["targets"][0].contains("input_names"));
  CHECK(t2.out.find("  inputs: input/a=float32[2x4], input/b=float32[2x3]\n") != std::string::npos);

  // Synthetic inputs too; the names are no part of a baseline's identity.
  const auto s = run_cli({"run", dir.file("two.pt"), "--shape", "2x4", "--shape", "2x3", "--configs", "default",
                          "--save-baseline", dir.file("b.json"), "--quiet"});
  CHECK(s.code == 0);
  CHECK(s.out.find("  inputs: a: float32[2x4], b: float32[2x3]\n") != std::string::npos);
  const auto baseline = ra::test::read_json(dir.file("b.json"));
  CHECK(baseline["targets"][0]["inputs"] == nlohmann::json({"float32[2x4]", "float32[2x3]"}));
  CHECK_FALSE(baseline["targets"][0].contains("input_names"));
}

TEST_CASE("env: text and JSON") {
  const auto text = run_cli({"env"});
  CHECK(text.code == 0);
  CHECK(text.out.find("torch.version:") != std::string::npos);
  const auto json = run_cli({"env", "--json"});
  REQUIRE(json.code == 0);
  const auto j = nlohmann::json::parse(json.out);
  CHECK(j["torch"]["version"] == ra::test::python_torch_version());
  CHECK(j["switches"].contains("cudnn.benchmark"));
  CHECK(j["cuda"].contains("available"));
  if (!j["cuda"]["available"].get<bool>()) CHECK(!j["cuda"]["reason"].get<std::string>().empty());
}

namespace {

// Writes `name` under RA_JUNIT_DIR afresh; the junit_schema test validates it with xmllint.
std::string junit_out(const std::string& name) { return ra::test::fresh(RA_JUNIT_DIR, name); }

}  // namespace

TEST_CASE("run --junit --markdown: a reproducible model passes every test case") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), kLinear, {{"w", {16, 8}}});
  const std::string junit = junit_out("run-reproducible.xml");
  const auto r = run_cli({"run", dir.file("m.pt"), "--shape", "4x16", "--configs", "default,det", "--repeats", "2",
                          "--junit", junit, "--markdown", dir.file("summary.md"), "--quiet"});
  CHECK(r.code == 0);
  const std::string x = ra::test::read_file(junit);
  CHECK(x.find("<testsuites name=\"repro-audit\" tests=\"2\" failures=\"0\" errors=\"0\" skipped=\"0\">") !=
        std::string::npos);
  CHECK(x.find("<testcase classname=\"m.pt\" name=\"default\"/>") != std::string::npos);
  CHECK(x.find("<testcase classname=\"m.pt\" name=\"det\"/>") != std::string::npos);
  const std::string m = ra::test::read_file(dir.file("summary.md"));
  CHECK(m.rfind("## repro-audit: reproducible (exit 0)\n", 0) == 0);
  CHECK(m.find("| m.pt | det | reproducible | 0/1 (0.00) |") != std::string::npos);
}

TEST_CASE("run --junit --markdown: the test-only nondeterministic op fails its test case") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("nd.pt"), ra::test::kNondetSumModel, {{"w", {64, 4096}}});
  const std::string junit = junit_out("run-diverged.xml");
  const auto r =
      run_cli({"run", dir.file("nd.pt"), "--shape", "8x64", "--configs", "default", "--repeats", "4", "--load-library",
               ra::test::test_ops_library(), "--junit", junit, "--markdown", dir.file("summary.md"), "--quiet"});
  CHECK(r.code == 1);
  const std::string x = ra::test::read_file(junit);
  CHECK(x.find("tests=\"1\" failures=\"1\" errors=\"0\" skipped=\"0\"") != std::string::npos);
  CHECK(x.find("<testcase classname=\"nd.pt\" name=\"default\">\n      <failure type=\"diverged\" message=\"divergence "
               "rate ") != std::string::npos);
  CHECK(x.find("diverged tensors (1):\n  output float32[8]: ") != std::string::npos);
  const std::string m = ra::test::read_file(dir.file("summary.md"));
  CHECK(m.rfind("## repro-audit: diverged (exit 1)\n", 0) == 0);
  CHECK(m.find("| nd.pt | default | **diverged** |") != std::string::npos);
  CHECK(m.find("- diverged tensors: `output`") != std::string::npos);
}

TEST_CASE("run --junit: the folder is checked before any work") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), kLinear, {{"w", {16, 8}}});
  ra::test::expect_error(dir, {"run", dir.file("m.pt"), "--shape", "4x16", "--junit", dir.file("m.pt/j.xml")}, 2,
                         "cannot create folder");
  ra::test::expect_error(dir, {"run", dir.file("m.pt"), "--shape", "4x16", "--markdown", "/dev/null/s.md"}, 2,
                         "cannot create folder '/dev/null' (File exists)");
}

TEST_CASE("run --mode train: buffers are digested after every step, so a divergence only in running statistics shows") {
  // The output and the gradients depend on x and w only; a running statistic is updated in place
  // from a nondeterministic sum, as batch norm updates its running mean. Before buffers were
  // digested after each step this audit read "reproducible".
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("stat.pt"), R"JIT(
def forward(self, x):
    h = torch.matmul(x, self.w)
    self.stat.add_(ra_test.nondet_sum(h).sum())
    return torch.relu(h)
)JIT",
                       {{"w", {64, 4096}}}, {{"stat", {1}}});
  const auto r = run_cli({"run", dir.file("stat.pt"), "--shape", "8x64", "--mode", "train", "--steps", "2", "--configs",
                          "default", "--repeats", "4", "--load-library", ra::test::test_ops_library(), "--report",
                          dir.file("r.json"), "--quiet"});
  INFO(r.out, r.err);
  CHECK(r.code == 1);
  const auto j = ra::test::read_json(dir.file("r.json"));
  const auto& c = j["targets"][0]["configs"][0];
  CHECK(c["verdict"] == "diverged");
  // Only the statistic diverges (in step 1, step 2 or both: a nondeterministic sum can repeat itself).
  std::vector<std::string> names;
  for (const auto& t : c["diverged_tensors"]) names.push_back(t["name"].get<std::string>());
  CHECK_FALSE(names.empty());
  for (const auto& n : names) CHECK((n == "step1/buffer/stat" || n == "step2/buffer/stat"));
  bool recorded = false;
  for (const auto& t : c["reference_digests"]) recorded = recorded || t["name"] == "step2/buffer/stat";
  CHECK(recorded);
}

TEST_CASE(
    "run --mode train: a model traced in eval mode is audited, with a warning that dropout and batch norm stay in "
    "eval") {
  ra::test::TempDir dir;
  // tests/data/make_traced.py: Linear, BatchNorm1d, Dropout, Linear, traced with torch.jit.trace in eval mode.
  const std::string traced = std::string(RA_TEST_DATA) + "/eval_traced.pt";
  const auto train =
      run_cli({"run", traced, "--shape", "8x4", "--mode", "train", "--configs", "default", "--repeats", "2"});
  CAPTURE(train.err);
  CHECK(train.code == 0);
  CHECK(train.err.find(
            "the model was traced in eval mode: its dropout and batch_norm keep eval behaviour under --mode train") !=
        std::string::npos);
  // In infer mode, eval behaviour is what is wanted: no warning.
  const auto infer = run_cli({"run", traced, "--shape", "8x4", "--configs", "default", "--repeats", "2"});
  CHECK(infer.code == 0);
  CHECK(infer.err.find("traced in eval mode") == std::string::npos);
  // A scripted model reads self.training: no warning in train mode either.
  ra::test::save_model(dir.file("m.pt"),
                       "def forward(self, x):\n    return torch.dropout(torch.matmul(x, self.w), 0.5, self.training)\n",
                       {{"w", {4, 2}}});
  const auto scripted =
      run_cli({"run", dir.file("m.pt"), "--shape", "8x4", "--mode", "train", "--configs", "default", "--repeats", "2"});
  CHECK(scripted.err.find("traced in eval mode") == std::string::npos);
}

TEST_CASE(
    "run: a torch.export archive runs under the interpreter: its weights and outputs are digested, the report names "
    "the runtime, train mode steps, bad inputs say why not") {
  ra::test::TempDir dir;
  // tests/data/make_model_kinds.py: Linear(4, 3) then relu, exported with an input of 2x4.
  const std::string model = std::string(RA_TEST_DATA) + "/exported.pt2";
  const auto r =
      run_cli({"run", model, "--shape", "2x4", "--configs", "default,threads-1", "--report", dir.file("r.json")});
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("inputs: x: float32[2x4]") != std::string::npos);
  const nlohmann::json j = ra::test::read_json(dir.file("r.json"));
  std::vector<std::string> names;
  for (const auto& t : j["targets"][0]["configs"][0]["reference_digests"])
    names.push_back(t["name"].get<std::string>());
  CHECK(names == std::vector<std::string>{"param/fc.bias", "param/fc.weight", "output"});
  CHECK(j["targets"][0]["verdict"] == "reproducible");
  CHECK(j["targets"][0]["package"]["runtime"] == "interpreter");
  CHECK(r.out.find("  runtime: interpreter") != std::string::npos);
  // The weights are read from the archive's records with their exported shapes.
  CHECK(j["targets"][0]["configs"][0]["reference_digests"][1]["shape"] == nlohmann::json({3, 4}));

  ra::test::expect_error(dir, {"run", model, "--shape", "2x5"}, 3,
                         "the exported program rejects the inputs (float32[2x5])");
  ra::test::expect_error(dir, {"run", model}, 2, "the exported program takes 1 input (x), but none was given");
  ra::test::expect_error(dir, {"run", model, "--shape", "2x4", "--shape", "2x4"}, 3,
                         "takes 1 input (x), but 2 were given");
  // Train mode differentiates through the same ops: per step the loss and the gradients.
  const auto train = run_cli({"run", model, "--shape", "2x4", "--mode", "train", "--steps", "2", "--configs", "default",
                              "--report", dir.file("t.json")});
  CAPTURE(train.err);
  CHECK(train.code == 0);
  names.clear();
  // A named document: a range-for over a subobject of read_json's temporary would read freed memory.
  const nlohmann::json trained = ra::test::read_json(dir.file("t.json"));
  for (const auto& t : trained["targets"][0]["configs"][0]["reference_digests"])
    names.push_back(t["name"].get<std::string>());
  for (const char* want : {"step0/loss", "step0/grad/fc.weight", "step1/grad/fc.bias", "final/param/fc.weight"})
    CHECK_MESSAGE(std::find(names.begin(), names.end(), want) != names.end(), want);
  // The runtime variable: anything but the two runtimes is a usage error, in one line.
  ::setenv("REPRO_AUDIT_EXPORT_RUNTIME", "fast", 1);
  ra::test::expect_error(dir, {"run", model, "--shape", "2x4"}, 2, "the runtimes are interpreter and nativert");
  ::unsetenv("REPRO_AUDIT_EXPORT_RUNTIME");
}

TEST_CASE("run --trace on an exported image model: reproducible in infer mode, every weight digested, no root cause") {
  ra::test::TempDir dir;
  // tests/data/make_model_kinds.py: SmallCNN (conv, batch norm, relu, max pool, conv, average pool,
  // linear), returning its logits and their squared norm.
  const std::string model = std::string(RA_TEST_DATA) + "/exported_cnn.pt2";
  const auto r = run_cli({"run", model, "--shape", "1x3x16x16", "--trace", "--configs", "default,threads-1",
                          "--repeats", "3", "--report", dir.file("r.json")});
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("    root cause:") == std::string::npos);
  const nlohmann::json j = ra::test::read_json(dir.file("r.json"));
  const auto& t = j["targets"][0];
  CHECK(t["mode"] == "infer");
  CHECK(t["verdict"] == "reproducible");
  std::vector<std::string> names;
  for (const auto& d : t["configs"][0]["reference_digests"]) names.push_back(d["name"].get<std::string>());
  for (const char* want : {"param/features.0.weight", "param/features.1.weight", "buffer/features.1.running_mean",
                           "param/features.4.weight", "param/classifier.weight", "output/0", "output/1"})
    CHECK_MESSAGE(std::find(names.begin(), names.end(), want) != names.end(), want);
  // Traced: both configurations carry a trace, and the graph's identity by content is recorded.
  // Every compared run traced identically.
  for (const auto& c : t["configs"]) {
    REQUIRE(c["trace"].is_object());
    CHECK(c["trace"]["runs_compared"] == 2);
    CHECK(c["trace"]["runs_identical"] == 2);
  }
  CHECK(t["graph_digest"].get<std::string>().size() == 32);
  CHECK(t["weights_digest"].get<std::string>().size() == 32);
}

TEST_CASE("run --trace on a torch.export archive: the root cause names the graph node and its source line") {
  ra::test::TempDir dir;
  // tests/data/make_model_kinds.py: bins rows with index_put_(accumulate=True), which threads reorder
  // (its atomic adds, on every release from 2.11 to 2.15). They race only while both threads run at
  // once, which a loaded machine's scheduler may not allow for a short call: 20000 rows and 5 repeats
  // found nothing once on a machine at load 12, so the call is ten times longer and repeated 8 times.
  const std::string model = std::string(RA_TEST_DATA) + "/exported_index_put.pt2";
  const auto r = run_cli({"run", model, "--shape", "200000x4", "--trace", "--configs", "threads-N", "--repeats", "8",
                          "--no-fix-search", "--report", dir.file("r.json")});
  CAPTURE(r.err);
  CHECK(r.code == 1);
  const nlohmann::json j = ra::test::read_json(dir.file("r.json"));
  const auto& causes = j["targets"][0]["configs"][0]["trace"]["root_causes"];
  REQUIRE(causes.size() == 1);
  CHECK(causes[0]["op"] == "aten::index_put_");
  const std::string source = causes[0]["source"].get<std::string>();
  CHECK(source.find("make_model_kinds.py:") == 0);
  CHECK(source.find("(node index_put_)") != std::string::npos);
  // A reproducible archive traces to no root cause.
  const auto clean = run_cli({"run", std::string(RA_TEST_DATA) + "/exported.pt2", "--shape", "2x4", "--trace"});
  CHECK(clean.code == 0);
  CHECK(clean.out.find("    root cause:") == std::string::npos);
  // The interpreter dispatches every node: nothing is hidden from the trace, so no note says so.
  CHECK(!j["targets"][0].contains("notes"));
}
