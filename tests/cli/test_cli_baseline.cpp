// SPDX-License-Identifier: Apache-2.0
// Baselines end to end on the CPU: `--save-baseline` then `--baseline` (run and probes), and
// `compare A B`. A regression in an unchanged environment is produced honestly by tampering with
// a saved digest (the model and the machine stay the same); an explained difference by a real
// environment change (OMP_NUM_THREADS, which changes the default configuration's thread count and
// a training step's reductions) and by editing a saved baseline's torch version; a cuDNN change
// cannot explain a CPU difference. Bad baselines exit 3 with one line and write nothing. The
// baselines and reports written into RA_REPORT_DIR are validated by the report_schema and
// baseline_schema tests, the JUnit file in RA_JUNIT_DIR by junit_schema.
#include "tests/cli/harness.h"

// torch before doctest: c10 defines a CHECK macro that doctest must override.
#include <torch/script.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

using nlohmann::json;
using ra::test::run_cli;

namespace {

void spit(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

using ra::test::fresh;

// Sets an environment variable for the binaries a test case runs, and restores it.
struct Env {
  std::string name;
  std::optional<std::string> was;
  Env(const char* n, const char* value) : name(n) {
    if (const char* v = std::getenv(n)) was = v;
    ::setenv(n, value, 1);
  }
  ~Env() { was ? ::setenv(name.c_str(), was->c_str(), 1) : ::unsetenv(name.c_str()); }
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;
};

std::vector<std::string> linear_run(const ra::test::TempDir& dir, std::vector<std::string> extra) {
  std::vector<std::string> args = {
      "run", dir.file("m.pt"), "--shape", "4x16", "--configs", "default,threads-1", "--repeats", "2", "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

const json& result_of(const json& report, const std::string& config) {
  const json& results = report.at("baseline").at("results");
  const json* found = nullptr;
  for (size_t i = 0; i < results.size() && !found; ++i)
    if (results[i]["config"] == config) found = &results[i];
  REQUIRE_MESSAGE(found != nullptr, "no baseline result for " << config);
  return *found;
}

// Saves a baseline of the linear model (default, threads-1) into `path`.
void save_linear_baseline(const ra::test::TempDir& dir, const std::string& path) {
  ra::test::save_model(dir.file("m.pt"), ra::test::kLinearReluModel, {{"w", {16, 8}}});
  const auto r = run_cli(linear_run(dir, {"--save-baseline", path}));
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
}

// The baseline at `path` with the default configuration's output digest replaced.
json tampered(const std::string& path) {
  json g = ra::test::read_json(path);
  json& tensors = g["targets"][0]["configs"][0]["reference_digests"];
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i]["name"] == "output") tensors[i]["digest"] = std::string(32, '0');
  return g;
}

// Saves the linear model's baseline as g.json, and torch.json: the same with the default
// configuration's output digest tampered and the torch version set to 2.10.0.
void save_torch_changed_baseline(const ra::test::TempDir& dir) {
  save_linear_baseline(dir, dir.file("g.json"));
  json torch = tampered(dir.file("g.json"));
  torch["environment"]["torch"]["version"] = "2.10.0";
  spit(dir.file("torch.json"), torch.dump(2));
}

}  // namespace

TEST_CASE("run --save-baseline, then --baseline in the same environment: everything matches (exit 0)") {
  ra::test::TempDir dir;
  const std::string golden = fresh(RA_REPORT_DIR, "baseline.json");
  save_linear_baseline(dir, golden);
  const json g = ra::test::read_json(golden);
  CHECK(g["schema"] == "repro-audit/baseline");
  CHECK(g["schema_version"] == 1);
  REQUIRE(g["targets"].size() == 1);
  CHECK(g["targets"][0]["name"] == "m.pt");
  CHECK(g["targets"][0]["model_digest"].get<std::string>().size() == 32);
  CHECK(g["targets"][0]["inputs"] == json::array({"float32[4x16]"}));
  REQUIRE(g["targets"][0]["configs"].size() == 2);
  CHECK(g["targets"][0]["configs"][1]["config"] == "threads-1");
  CHECK(g["targets"][0]["configs"][1]["reference_digests"].size() == 2);  // param/w, output
  CHECK(g["environment"]["torch"]["version"].is_string());
  CHECK(!g.contains("timing"));

  // The same command again writes the same bytes: nothing in a baseline depends on the clock.
  const std::string first = ra::test::read_file(golden);
  REQUIRE(run_cli(linear_run(dir, {"--save-baseline", golden})).code == 0);
  CHECK(ra::test::read_file(golden) == first);

  const std::string report = fresh(RA_REPORT_DIR, "run-baseline.json");
  const auto r = run_cli(linear_run(dir, {"--baseline", golden, "--report", report}));
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("  environment: unchanged\n") != std::string::npos);
  CHECK(r.out.find("m.pt / default: match (2 tensors)\n") != std::string::npos);
  CHECK(r.out.find("verdict: reproducible, matches the baseline (exit 0)\n") != std::string::npos);
  const json j = ra::test::read_json(report);
  CHECK(j["targets"][0]["model_digest"] == g["targets"][0]["model_digest"]);
  CHECK(j["baseline"]["source"] == golden);
  CHECK(j["baseline"]["schema"] == "repro-audit/baseline");
  CHECK(j["baseline"]["environment_changes"].empty());
  REQUIRE(j["baseline"]["results"].size() == 2);
  for (const auto* config : {"default", "threads-1"}) {
    CHECK(result_of(j, config)["status"] == "match");
    CHECK(result_of(j, config)["tensors"] == 2);
  }
  // A report with a baseline section re-renders byte for byte.
  const auto again = run_cli({"report", report, "--json"});
  CHECK(again.code == 0);
  CHECK(again.out == ra::test::read_file(report));
}

TEST_CASE("run --baseline: a changed digest in the same environment is a regression (exit 1) naming the tensor") {
  ra::test::TempDir dir;
  save_linear_baseline(dir, dir.file("g.json"));
  spit(dir.file("t.json"), tampered(dir.file("g.json")).dump(2));
  const std::string junit = fresh(RA_JUNIT_DIR, "run-baseline.xml");
  // The JSON and HTML go to RA_REPORT_DIR for the report_schema and html_chromium tests.
  const std::string report = fresh(RA_REPORT_DIR, "run-regression.json"),
                    page = fresh(RA_REPORT_DIR, "run-regression.html");
  const auto r = run_cli(linear_run(dir, {"--baseline", dir.file("t.json"), "--report", report, "--junit", junit,
                                          "--markdown", dir.file("r.md"), "--html", page}));
  CAPTURE(r.err);
  CHECK(r.code == 1);
  CHECK(r.out.find("m.pt / default: regression: 1 of 2 tensors differ and nothing that can affect cpu changed\n"
                   "    output float32[4x8]: 000000000000 -> ") != std::string::npos);
  CHECK(r.out.find("m.pt / threads-1: match") != std::string::npos);
  CHECK(r.out.find("verdict: reproducible, 1 baseline regression (exit 1)\n") != std::string::npos);
  const json j = ra::test::read_json(report);
  CHECK(j["exit_code"] == 1);
  CHECK(j["verdict"] == "reproducible");
  const std::string html = ra::test::read_file(page);
  CHECK(html.find("<tr class=\"baseline-result\" data-status=\"regression\" "
                  "data-fails=\"true\"><td>m.pt</td><td>default</td>") != std::string::npos);
  CHECK(html.find("<a href=\"#baseline\">Baseline</a>") != std::string::npos);
  const json& res = result_of(j, "default");
  CHECK(res["status"] == "regression");
  CHECK(res["differing"] == 1);
  REQUIRE(res["differing_tensors"].size() == 1);
  CHECK(res["differing_tensors"][0]["name"] == "output");
  CHECK(res["differing_tensors"][0]["baseline"]["digest"] == std::string(32, '0'));
  const std::string xml = ra::test::read_file(junit);
  CHECK(xml.find("<testsuite name=\"baseline\" tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"0\">") !=
        std::string::npos);
  CHECK(xml.find("<failure type=\"regression\"") != std::string::npos);
  CHECK(ra::test::read_file(dir.file("r.md")).find("| m.pt | default | **regression** | 1/2 differ |") !=
        std::string::npos);
}

namespace {

// Saves mlp.pt, a training step whose reductions depend on the intra-op thread count, and returns
// a run of it. One repeat: two threads' training step has been seen to diverge between repeats on
// this machine (a rare race in a reduction), which would make a result nondeterministic instead of
// explained; the tests that use it are about the environment change.
std::vector<std::string> thread_mlp_run(const ra::test::TempDir& dir) {
  ra::test::save_model(dir.file("mlp.pt"), R"JIT(
def forward(self, x):
    h = torch.tanh(torch.matmul(x, self.w1) + self.b1)
    y = torch.matmul(h, self.w2)
    return (y * y).sum() / 1000.0
)JIT",
                       {{"w1", {4096, 256}}, {"b1", {256}}, {"w2", {256, 4096}}});
  return {"run", dir.file("mlp.pt"), "--shape",           "64x4096",   "--mode", "train",  "--steps",
          "2",   "--configs",        "default,threads-1", "--repeats", "1",      "--quiet"};
}

// The tensors a baseline kept (--baseline-tensors), by name, as torch reads them.
std::map<std::string, at::Tensor> kept_tensors(const std::string& path) {
  const std::string bytes = ra::test::read_file(path);
  const c10::IValue v = torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  std::map<std::string, at::Tensor> out;
  for (const auto& entry : v.toGenericDict()) out[entry.key().toStringRef()] = entry.value().toTensor();
  return out;
}

// The largest distance between two float32 tensors in units in the last place, over elements on
// one side of zero (as the statistics count them), measured here with torch alone.
double max_ulp_float(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor same_side = (a > 0).logical_and(b > 0).logical_or((a < 0).logical_and(b < 0));
  const at::Tensor ia = a.contiguous().view(at::kInt).to(at::kLong), ib = b.contiguous().view(at::kInt).to(at::kLong);
  const at::Tensor d = (ia - ib).abs().masked_select(same_side);
  return d.numel() == 0 ? 0.0 : d.max().item<double>();
}

}  // namespace

TEST_CASE("run --baseline: a real environment change (OMP_NUM_THREADS) explains the default configuration's new bits") {
  ra::test::TempDir dir;
  const std::vector<std::string> args = thread_mlp_run(dir);
  {
    const Env one("OMP_NUM_THREADS", "1");
    auto save = args;
    save.insert(save.end(), {"--save-baseline", dir.file("g.json")});
    REQUIRE(run_cli(save).code == 0);
  }
  const Env two("OMP_NUM_THREADS", "2");
  auto cmp = args;
  cmp.insert(cmp.end(), {"--baseline", dir.file("g.json"), "--report", dir.file("r.json")});
  const auto r = run_cli(cmp);
  CAPTURE(r.err);
  CAPTURE(r.out);
  CHECK(r.code == 0);
  const json j = ra::test::read_json(dir.file("r.json"));
  const json& changes = j["baseline"]["environment_changes"];
  REQUIRE(changes.size() == 1);
  CHECK(changes[0]["key"] == "env_vars.OMP_NUM_THREADS");
  CHECK(changes[0]["baseline"] == "1");
  CHECK(changes[0]["current"] == "2");
  CHECK(changes[0]["affects"] == "cpu");
  const json& def = result_of(j, "default");
  REQUIRE(def["switch_changes"].size() == 1);
  CHECK(def["switch_changes"][0]["key"] == "config.threads");
  CHECK(def["switch_changes"][0]["baseline"] == "1");
  CHECK(def["switch_changes"][0]["current"] == "2");
  CHECK(def["status"] == "explained");
  CHECK(def["explained_by"] == json::array({"env_vars.OMP_NUM_THREADS", "config.threads"}));
  CHECK(result_of(j, "threads-1")["status"] == "match");  // one thread either way
  CHECK(r.out.find("save the baseline again (rerun the audit with --save-baseline " + dir.file("g.json") + ")") !=
        std::string::npos);
}

TEST_CASE("run --baseline-tensors: a changed tensor says how far it moved, as torch measures it, and compare agrees") {
  ra::test::TempDir dir;
  const std::vector<std::string> args = thread_mlp_run(dir);
  {
    const Env one("OMP_NUM_THREADS", "1");
    auto save = args;
    save.insert(save.end(), {"--save-baseline", dir.file("g.json"), "--baseline-tensors"});
    const auto r = run_cli(save);
    CAPTURE(r.err);
    REQUIRE(r.code == 0);
  }
  const json g = ra::test::read_json(dir.file("g.json"));
  CHECK(g["tensors"] == "g.json.tensors");
  CHECK(g["targets"][0]["configs"][0]["reference_tensors"] == "t0-c0.pt");
  CHECK(g["targets"][0]["configs"][1]["reference_tensors"] == "t0-c1.pt");
  REQUIRE(ra::test::file_exists(dir.file("g.json.tensors/t0-c0.pt")));

  const Env two("OMP_NUM_THREADS", "2");
  auto cmp = args;
  cmp.insert(cmp.end(), {"--baseline", dir.file("g.json"), "--report", dir.file("r.json"), "--save-baseline",
                         dir.file("now.json"), "--baseline-tensors"});
  const auto r = run_cli(cmp);
  CAPTURE(r.err);
  CAPTURE(r.out);
  CHECK(r.code == 0);
  const json j = ra::test::read_json(dir.file("r.json"));
  const json& def = result_of(j, "default");
  CHECK(def["status"] == "explained");
  REQUIRE(!def["differing_tensors"].empty());
  const auto before = kept_tensors(dir.file("g.json.tensors/t0-c0.pt"));
  const auto after = kept_tensors(dir.file("now.json.tensors/t0-c0.pt"));
  int measured = 0;
  for (const json& t : def["differing_tensors"]) {
    const std::string name = t["name"];
    CAPTURE(name);
    REQUIRE(t.contains("stats"));
    REQUIRE(before.count(name) == 1);
    REQUIRE(after.count(name) == 1);
    const at::Tensor a = before.at(name), b = after.at(name);
    REQUIRE(a.dtype() == at::kFloat);
    const double max_abs = (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
    CHECK(t["stats"]["max_abs_diff"].get<double>() == doctest::Approx(max_abs).epsilon(1e-12));
    CHECK(t["stats"]["max_ulp"].get<double>() == max_ulp_float(a, b));
    CHECK(t["stats"]["differing"].get<int64_t>() == a.ne(b).sum().item<int64_t>());
    ++measured;
  }
  CHECK(measured > 0);
  CHECK(r.out.find(" elements differ, first at [") != std::string::npos);
  CHECK(r.out.find(", max abs ") != std::string::npos);

  // compare of the two saved baselines measures the same distances from the kept files alone.
  const auto c = run_cli({"compare", dir.file("g.json"), dir.file("now.json"), "--report", dir.file("c.json")});
  CAPTURE(c.err);
  CHECK(c.code == 0);
  const json compared = ra::test::read_json(dir.file("c.json"));
  const json& same = result_of(compared, "default");
  REQUIRE(same["differing_tensors"].size() == def["differing_tensors"].size());
  for (size_t i = 0; i < same["differing_tensors"].size(); ++i)
    CHECK(same["differing_tensors"][i]["stats"] == def["differing_tensors"][i]["stats"]);

  // Without the folder, the changed tensors are named, not measured, and a warning says why.
  std::filesystem::rename(dir.file("g.json.tensors"), dir.file("moved"));
  const auto gone = run_cli({"compare", dir.file("g.json"), dir.file("now.json"), "--report", dir.file("d.json")});
  CHECK(gone.code == 0);
  CHECK(gone.err.find("is missing: changed tensors are named, not measured") != std::string::npos);
  const json named = ra::test::read_json(dir.file("d.json"));
  CHECK_FALSE(result_of(named, "default")["differing_tensors"][0].contains("stats"));

  // A kept file named outside its folder is refused: one line, exit 3.
  json escape = g;
  escape["targets"][0]["configs"][0]["reference_tensors"] = "../now.json";
  spit(dir.file("escape.json"), escape.dump(2));
  ra::test::expect_error(dir, {"compare", dir.file("escape.json"), dir.file("now.json")}, 3,
                         "'../now.json' is not a plain file name");
  // --baseline-tensors keeps tensors beside a baseline it writes.
  ra::test::expect_error(dir, {"run", dir.file("mlp.pt"), "--shape", "64x4096", "--baseline-tensors"}, 2,
                         "--baseline-tensors keeps tensors beside a baseline: add --save-baseline FILE");
}

TEST_CASE("probes --baseline-tensors: each probe's reference tensors are kept, and compare measures from them") {
  ra::test::TempDir dir;
  const auto r =
      run_cli({"probes", "--only", "conv1d.forward,sum.threads", "--configs", "default,threads-1", "--repeats", "1",
               "--no-census", "--quiet", "--save-baseline", dir.file("g.json"), "--baseline-tensors"});
  CAPTURE(r.err);
  REQUIRE((r.code == 0 || r.code == 1));
  const json g = ra::test::read_json(dir.file("g.json"));
  CHECK(g["tensors"] == "g.json.tensors");
  int kept = 0;
  for (const json& t : g["targets"])
    for (const json& c : t["configs"]) {
      REQUIRE(c.contains("reference_tensors"));
      CHECK(ra::test::file_exists(dir.file("g.json.tensors/" + c["reference_tensors"].get<std::string>())));
      ++kept;
    }
  CHECK(kept == 4);
  // The same tensors under another digest: the comparison reads the kept files of both sides and
  // finds no element that differs, which is what an edited digest is.
  json edited = g;
  edited["targets"][0]["configs"][0]["reference_digests"][0]["digest"] = std::string(32, '0');
  spit(dir.file("edited.json"), edited.dump(2));
  const auto c = run_cli({"compare", dir.file("g.json"), dir.file("edited.json"), "--report", dir.file("c.json")});
  CAPTURE(c.err);
  const json j = ra::test::read_json(dir.file("c.json"));
  const json& first = j["baseline"]["results"][0];
  REQUIRE(first["differing_tensors"].size() == 1);
  REQUIRE(first["differing_tensors"][0].contains("stats"));
  CHECK(first["differing_tensors"][0]["stats"]["differing"] == 0);
  CHECK(first["differing_tensors"][0]["stats"]["numel"].get<int64_t>() > 0);
}

TEST_CASE("run --baseline: a torch change explains a difference; a cuDNN change cannot explain it on the CPU") {
  ra::test::TempDir dir;
  save_torch_changed_baseline(dir);
  const auto r = run_cli(linear_run(dir, {"--baseline", dir.file("torch.json"), "--report", dir.file("r.json")}));
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("    torch.version: 2.10.0 -> ") != std::string::npos);
  CHECK(r.out.find("m.pt / default: explained: 1 of 2 tensors differ; explained by changes that can affect cpu: "
                   "torch.version 2.10.0 -> ") != std::string::npos);
  CHECK(r.out.find("verdict: reproducible, changed with the environment since the baseline (exit 0)\n") !=
        std::string::npos);
  json j = ra::test::read_json(dir.file("r.json"));
  CHECK(result_of(j, "default")["status"] == "explained");
  CHECK(result_of(j, "default")["explained_by"] == json::array({"torch.version"}));
  CHECK(result_of(j, "threads-1")["status"] == "match");

  json cudnn = tampered(dir.file("g.json"));
  cudnn["environment"]["cuda"]["cudnn"] = "8.9.7";
  cudnn["environment"]["torch"]["library_dir"] = "/elsewhere/torch/lib";
  spit(dir.file("cudnn.json"), cudnn.dump(2));
  const auto c = run_cli(linear_run(dir, {"--baseline", dir.file("cudnn.json"), "--report", dir.file("c.json")}));
  CHECK(c.code == 1);
  j = ra::test::read_json(dir.file("c.json"));
  const json& changes = j["baseline"]["environment_changes"];
  REQUIRE(changes.size() == 1);
  CHECK(changes[0]["key"] == "cuda.cudnn");
  CHECK(changes[0]["baseline"] == "8.9.7");
  CHECK(changes[0]["affects"] == "cuda");
  REQUIRE(j["baseline"]["ignored_changes"].size() == 1);
  CHECK(j["baseline"]["ignored_changes"][0]["key"] == "torch.library_dir");
  CHECK(result_of(j, "default")["status"] == "regression");
  CHECK(result_of(j, "default")["reason"].get<std::string>().find(
            "(changed, but cannot affect cpu: cuda.cudnn 8.9.7 -> ") != std::string::npos);
}

TEST_CASE("run --baseline: another model, shape, mode, seed or no shared configuration exits 3 and writes nothing") {
  ra::test::TempDir dir;
  save_linear_baseline(dir, dir.file("g.json"));
  ra::test::save_model(dir.file("other.pt"), ra::test::kLinearReluModel, {{"w", {16, 4}}});
  const std::vector<std::string> outputs = {"--junit",         dir.file("j.xml"),    "--markdown", dir.file("s.md"),
                                            "--save-baseline", dir.file("new.json"), "--baseline", dir.file("g.json")};
  const auto bad = [&](std::vector<std::string> args, const std::string& message) {
    args.insert(args.end(), outputs.begin(), outputs.end());
    ra::test::expect_error(dir, args, 3, message);
    for (const char* f : {"j.xml", "s.md", "new.json"}) CHECK(!ra::test::file_exists(dir.file(f)));
  };
  bad({"run", dir.file("other.pt"), "--shape", "4x16"},
      "baseline " + dir.file("g.json") +
          " was made from model m.pt, which computes another graph than other.pt (graph ");
  bad({"run", dir.file("m.pt"), "--shape", "8x16"}, "was made for m.pt with inputs float32[4x16], not float32[8x16]");
  bad({"run", dir.file("m.pt"), "--shape", "4x16", "--mode", "train"},
      "was made for m.pt in infer mode, not train mode");
  bad({"run", dir.file("m.pt"), "--shape", "4x16", "--seed", "5"}, "was made for m.pt with seed 0, not 5");
  bad({"run", dir.file("m.pt"), "--shape", "4x16", "--configs", "det"},
      "has no configuration of this run: it holds default, threads-1, this run has det");
  // A baseline from the same bytes under another name is the same model.
  std::filesystem::copy_file(dir.file("m.pt"), dir.file("renamed.pt"));
  const auto renamed = run_cli({"run", dir.file("renamed.pt"), "--shape", "4x16", "--configs", "default", "--repeats",
                                "2", "--baseline", dir.file("g.json"), "--quiet"});
  CHECK(renamed.code == 0);
  CHECK(renamed.out.find("renamed.pt / default: match") != std::string::npos);
  CHECK(renamed.out.find("renamed.pt / threads-1: missing: in the baseline only") != std::string::npos);
}

TEST_CASE("--baseline: a missing, malformed, foreign or newer file exits 3 with one line, before any work") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), ra::test::kLinearReluModel, {{"w", {16, 8}}});
  const auto run = [&](const std::string& file) {
    return std::vector<std::string>{"run", dir.file("m.pt"),  "--shape",           "4x16", "--baseline",
                                    file,  "--save-baseline", dir.file("new.json")};
  };
  const std::pair<const char*, const char*> cases[] = {
      {"{\"schema\": ", "is not valid JSON: "},
      {R"({"schema": "repro-audit/lint", "schema_version": 1})",
       "not a repro-audit baseline or report (its schema is 'repro-audit/lint')"},
      {R"({"schema": "repro-audit/baseline", "schema_version": 2})",
       "baseline schema version 2 is not supported by this repro-audit (it reads version 1)"},
      {R"({"schema": "repro-audit/report", "schema_version": 0})",
       "report schema version 0 is not supported by this repro-audit (it reads version 1)"},
      {R"({"schema": "repro-audit/baseline", "schema_version": 1, "tool": {"version": "0.1.0"}, "command": [],
           "verdict": "reproducible", "environment": {}, "targets": [{"name": "m.pt"}]})",
       "targets[0].kind: missing"},
  };
  for (const auto& [text, message] : cases) {
    CAPTURE(text);
    spit(dir.file("bad.json"), text);
    ra::test::expect_error(dir, run(dir.file("bad.json")), 3, message);
    CHECK(!ra::test::file_exists(dir.file("new.json")));
  }
  ra::test::expect_error(dir, run(dir.file("missing.json")), 3,
                         "baseline '" + dir.file("missing.json") + "' does not exist");
  spit(dir.file("bad.json"), "{");
  ra::test::expect_error(dir, {"probes", "--only", "index_add", "--baseline", dir.file("bad.json")}, 3, "bad.json");
  // The --save-baseline folder is checked before any work, as the report's is.
  ra::test::expect_error(dir, {"run", dir.file("m.pt"), "--shape", "4x16", "--save-baseline", "/dev/null/g.json"}, 2,
                         "cannot create folder '/dev/null'");
}

TEST_CASE("compare: two reports of the same reproducible model match (exit 0); the result re-renders") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), ra::test::kLinearReluModel, {{"w", {16, 8}}});
  REQUIRE(run_cli(linear_run(dir, {"--report", dir.file("a.json")})).code == 0);
  REQUIRE(
      run_cli(linear_run(dir, {"--report", dir.file("b.json"), "--save-baseline", dir.file("b-baseline.json")})).code ==
      0);
  const std::string saved = fresh(RA_REPORT_DIR, "compare.json");
  const auto r = run_cli({"compare", dir.file("a.json"), dir.file("b.json"), "--report", saved});
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("baseline " + dir.file("a.json") + " (a report written by repro-audit ") != std::string::npos);
  CHECK(r.out.find("baseline: 2 match\n") != std::string::npos);
  const json j = ra::test::read_json(saved);
  CHECK(j["baseline"]["schema"] == "repro-audit/report");
  CHECK(result_of(j, "default")["status"] == "match");
  const auto again = run_cli({"report", saved, "--json"});
  CHECK(again.code == 0);
  CHECK(again.out == ra::test::read_file(saved));
  // A baseline file on either side compares the same.
  const auto mixed = run_cli({"compare", dir.file("b-baseline.json"), dir.file("a.json"), "--json"});
  CHECK(mixed.code == 0);
  CHECK(json::parse(mixed.out)["baseline"]["results"][1]["status"] == "match");
  const auto reverse = run_cli({"compare", dir.file("a.json"), dir.file("b-baseline.json")});
  CHECK(reverse.code == 0);
  CHECK(reverse.out.find("baseline: 2 match\n") != std::string::npos);
}

TEST_CASE("compare: a diverging model is nondeterministic against its own earlier report (exit 1)") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("nd.pt"), ra::test::kNondetSumModel, {{"w", {64, 4096}}});
  for (const char* out : {"a.json", "b.json"}) {
    const auto r = run_cli({"run", dir.file("nd.pt"), "--shape", "8x64", "--configs", "default", "--repeats", "3",
                            "--load-library", ra::test::test_ops_library(), "--report", dir.file(out), "--quiet"});
    REQUIRE(r.code == 1);
  }
  const auto r = run_cli({"compare", dir.file("a.json"), dir.file("b.json"), "--json"});
  CAPTURE(r.err);
  CHECK(r.code == 1);
  const json j = json::parse(r.out);
  const json& res = result_of(j, "default");
  CHECK(res["status"] == "nondeterministic");
  CHECK(res["baseline_verdict"] == "diverged");
  CHECK(res["verdict"] == "diverged");
  CHECK(res["reason"].get<std::string>().find("the configuration diverged within both") != std::string::npos);

  // compare --allowlist: the accepted divergence no longer fails, and still reads as one.
  spit(dir.file("allow.json"), R"({"allowlist": 1, "entries": [{"target": "nd.pt", "reason": "known test op"}]})");
  const auto allowed =
      run_cli({"compare", dir.file("a.json"), dir.file("b.json"), "--allowlist", dir.file("allow.json")});
  CAPTURE(allowed.out);
  CHECK(allowed.code == 0);
  CHECK(allowed.out.find("verdict: diverged (allowed: known test op), 1 nondeterministic") == std::string::npos);
  CHECK(allowed.out.find("verdict: diverged (allowed: known test op) (exit 0)") != std::string::npos);
  CHECK(run_cli({"compare", dir.file("a.json"), dir.file("b.json"), "--allowlist", dir.file("missing.json")}).code ==
        3);
}

TEST_CASE("--fail-on-explained: an environment change that explains new bits fails a release gate") {
  ra::test::TempDir dir;
  save_torch_changed_baseline(dir);
  CHECK(run_cli(linear_run(dir, {"--baseline", dir.file("torch.json")})).code == 0);
  const auto gate = run_cli(
      linear_run(dir, {"--baseline", dir.file("torch.json"), "--fail-on-explained", "--report", dir.file("r.json")}));
  CHECK(gate.code == 1);
  const json j = ra::test::read_json(dir.file("r.json"));
  CHECK(j["baseline"]["fail_on_explained"] == true);
  CHECK(result_of(j, "default")["status"] == "explained");
  CHECK(j["exit_code"] == 1);
  // The same through compare, and a match still passes.
  CHECK(run_cli({"compare", dir.file("torch.json"), dir.file("r.json"), "--fail-on-explained"}).code == 1);
  CHECK(run_cli({"compare", dir.file("r.json"), dir.file("r.json"), "--fail-on-explained"}).code == 0);
  ra::test::expect_error(dir, linear_run(dir, {"--fail-on-explained"}), 2,
                         "--fail-on-explained applies to a comparison: add --baseline FILE");
}

TEST_CASE("compare: B from another model exits 3 and writes nothing") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), ra::test::kLinearReluModel, {{"w", {16, 8}}});
  ra::test::save_model(dir.file("other.pt"), ra::test::kLinearReluModel, {{"w", {16, 4}}});
  REQUIRE(run_cli(linear_run(dir, {"--report", dir.file("a.json")})).code == 0);
  REQUIRE(run_cli({"run", dir.file("other.pt"), "--shape", "4x16", "--configs", "default", "--repeats", "2", "--report",
                   dir.file("b.json"), "--quiet"})
              .code == 0);
  ra::test::expect_error(dir, {"compare", dir.file("a.json"), dir.file("b.json"), "--junit", dir.file("j.xml")}, 3,
                         "was made from model m.pt, which computes another graph than other.pt (graph ");
  CHECK(!ra::test::file_exists(dir.file("j.xml")));
  ra::test::expect_error(dir, {"compare", dir.file("a.json"), dir.file("missing.json")}, 3,
                         "report '" + dir.file("missing.json") + "' does not exist");
}

TEST_CASE(
    "probes --save-baseline, then --baseline: matches, the positive control nondeterministic, left-out probes "
    "missing") {
  ra::test::TempDir dir;
  const std::string golden = fresh(RA_REPORT_DIR, "probes-baseline.json");
  const std::vector<std::string> base = {"probes",    "--load-library", ra::test::test_ops_library(),
                                         "--configs", "default",        "--repeats",
                                         "2",         "--no-census",    "--quiet"};
  auto save = base;
  save.insert(save.end(), {"--only", "test.nondet-sum,test.stable", "--save-baseline", golden});
  REQUIRE(run_cli(save).code == 1);
  const json g = ra::test::read_json(golden);
  REQUIRE(g["targets"].size() == 2);
  CHECK(g["targets"][0]["kind"] == "probe");

  auto cmp = base;
  cmp.insert(cmp.end(),
             {"--only", "test.nondet-sum,test.stable", "--baseline", golden, "--report", dir.file("r.json")});
  const auto r = run_cli(cmp);
  CAPTURE(r.err);
  CHECK(r.code == 1);
  const json j = ra::test::read_json(dir.file("r.json"));
  const json& results = j["baseline"]["results"];
  REQUIRE(results.size() == 2);
  CHECK(results[0]["target"] == "test.nondet-sum");
  CHECK(results[0]["status"] == "nondeterministic");
  CHECK(results[1]["target"] == "test.stable");
  CHECK(results[1]["status"] == "match");

  auto subset = base;
  subset.insert(subset.end(), {"--only", "test.stable", "--baseline", golden});
  const auto s = run_cli(subset);
  CHECK(s.code == 0);
  CHECK(s.out.find("test.nondet-sum / default: missing: in the baseline only") != std::string::npos);
  CHECK(s.out.find("test.stable / default: match") != std::string::npos);

  auto none = base;
  none.insert(none.end(), {"--only", "test.alert", "--baseline", golden});
  ra::test::expect_error(
      dir, none, 3,
      "has no target of this run: it holds probes test.nondet-sum, test.stable, this run has probe test.alert");
}

namespace {

// A product, a full sum (one partial sum per thread, so its bits follow the thread count) and a product.
constexpr const char* kSumModel = R"JIT(
def forward(self, x):
    h = x * self.scale
    s = torch.sum(h)
    return s * self.scale
)JIT";

std::vector<std::string> sum_run(const ra::test::TempDir& dir, std::vector<std::string> extra) {
  std::vector<std::string> args = {"run",     dir.file("sum.pt"), "--shape", "4096x4096", "--configs",
                                   "default", "--repeats",        "2",       "--trace",   "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

}  // namespace

TEST_CASE("run --trace --baseline: the environment change that explains new bits comes with the first op it changed") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("sum.pt"), kSumModel, {{"scale", {1}}});
  const std::string golden = fresh(RA_REPORT_DIR, "baseline-traced.json");
  {
    const Env two("OMP_NUM_THREADS", "2");
    const auto save = run_cli(sum_run(dir, {"--save-baseline", golden}));
    CAPTURE(save.err);
    REQUIRE(save.code == 0);
  }
  const json g = ra::test::read_json(golden);
  const json& stream = g["targets"][0]["configs"][0]["op_stream"];
  REQUIRE(stream.is_object());
  CHECK(stream["threads"][0]["records"] == 3);
  CHECK(stream["threads"][0]["packed"].get<std::string>().size() == 3 * 32);  // 32 bytes per record
  CHECK_FALSE(stream.contains("ops"));                                        // what names the ops stays in reports
  CHECK_FALSE(stream["threads"][0].contains("names"));
  CHECK(g.dump().find("\"digest\":\"") != std::string::npos);  // the final tensors' digests, as always ...
  CHECK(stream.dump().find("digest") == std::string::npos);    // ... but no op's tensor digest

  const Env one("OMP_NUM_THREADS", "1");
  const std::string report = fresh(RA_REPORT_DIR, "run-baseline-traced.json");
  const auto r = run_cli(sum_run(dir, {"--baseline", golden, "--report", report, "--markdown", dir.file("r.md"),
                                       "--junit", dir.file("r.xml"), "--html", dir.file("r.html")}));
  CAPTURE(r.err);
  CAPTURE(r.out);
  CHECK(r.code == 0);
  const json j = ra::test::read_json(report);
  const json& def = result_of(j, "default");
  CHECK(def["status"] == "explained");
  REQUIRE(def["first_changed_op"].is_object());
  CHECK(def["first_changed_op"]["op"] == "aten::sum");
  CHECK(def["first_changed_op"]["direction"] == "forward");
  CHECK(def["first_changed_op"]["propagated"] == 1);  // the product after it
  CHECK(def["op_note"] == "");
  const std::string line = "first changed op: aten::sum (forward) at ";
  CHECK(r.out.find("    " + line) != std::string::npos);
  CHECK(r.out.find("1 later op changed") != std::string::npos);
  CHECK(ra::test::read_file(dir.file("r.md")).find(line) != std::string::npos);
  CHECK(ra::test::read_file(dir.file("r.xml")).find(line) != std::string::npos);
  CHECK(ra::test::read_file(dir.file("r.html")).find("<div class=\"changed-op\">" + line) != std::string::npos);

  // compare of the two traced reports says the same, with no run.
  const std::string first = dir.file("first.json");
  {
    const Env two("OMP_NUM_THREADS", "2");
    REQUIRE(run_cli(sum_run(dir, {"--report", first})).code == 0);
  }
  const auto c = run_cli({"compare", first, report, "--json"});
  CAPTURE(c.err);
  CHECK(c.code == 0);
  const json cj = json::parse(c.out);
  CHECK(result_of(cj, "default")["first_changed_op"]["op"] == "aten::sum");
}

TEST_CASE("run --trace --baseline: new bits in an unchanged environment are a regression, with the op that changed") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("sum.pt"), kSumModel, {{"scale", {1}}});
  REQUIRE(run_cli(sum_run(dir, {"--save-baseline", dir.file("g.json")})).code == 0);
  // Tamper with the output's digest and with the outputs hash of the sum's record: bytes 18..23
  // of a record are its last 8 base64 characters, all in the outputs hash.
  json g = ra::test::read_json(dir.file("g.json"));
  json& config = g["targets"][0]["configs"][0];
  for (auto& t : config["reference_digests"])
    if (t["name"] == "output") t["digest"] = std::string(32, '0');
  const size_t sum = 1;  // the records: x * scale, the sum, s * scale
  std::string packed = config["op_stream"]["threads"][0]["packed"];
  char& last = packed[sum * 32 + 31];
  last = last == 'A' ? 'B' : 'A';
  config["op_stream"]["threads"][0]["packed"] = packed;
  spit(dir.file("tampered.json"), g.dump(2));
  const auto r = run_cli(sum_run(dir, {"--baseline", dir.file("tampered.json"), "--report", dir.file("r.json")}));
  CAPTURE(r.out);
  CHECK(r.code == 1);
  const json rj = ra::test::read_json(dir.file("r.json"));
  const json& res = result_of(rj, "default");
  CHECK(res["status"] == "regression");
  CHECK(res["first_changed_op"]["op"] == "aten::sum");
  CHECK(r.out.find("first changed op: aten::sum (forward)") != std::string::npos);

  // A baseline without a trace: the comparison works as before and says why no op is named.
  REQUIRE(run_cli({"run", dir.file("sum.pt"), "--shape", "4096x4096", "--configs", "default", "--repeats", "2",
                   "--quiet", "--save-baseline", dir.file("plain.json")})
              .code == 0);
  json plain = ra::test::read_json(dir.file("plain.json"));
  CHECK_FALSE(plain["targets"][0]["configs"][0].contains("op_stream"));
  for (auto& t : plain["targets"][0]["configs"][0]["reference_digests"])
    if (t["name"] == "output") t["digest"] = std::string(32, '0');
  spit(dir.file("plain-tampered.json"), plain.dump(2));
  const auto p = run_cli(sum_run(dir, {"--baseline", dir.file("plain-tampered.json"), "--report", dir.file("p.json")}));
  CHECK(p.code == 1);
  const json pj = ra::test::read_json(dir.file("p.json"));
  const json& pres = result_of(pj, "default");
  CHECK(pres["status"] == "regression");
  CHECK(pres["first_changed_op"].is_null());
  CHECK(pres["op_note"] ==
        "no op can be named: the baseline holds no trace (save it with --save-baseline and --trace)");
  CHECK(p.out.find("    no op can be named: the baseline holds no trace") != std::string::npos);

  // A stream that cannot be decoded is a note, not a crash.
  json broken = g;
  broken["targets"][0]["configs"][0]["op_stream"]["threads"][0]["packed"] = std::string(3 * 32, '*');
  spit(dir.file("broken.json"), broken.dump(2));
  const auto b = run_cli(sum_run(dir, {"--baseline", dir.file("broken.json"), "--report", dir.file("b.json")}));
  CHECK(b.code == 1);
  const json bj = ra::test::read_json(dir.file("b.json"));
  CHECK(result_of(bj, "default")["op_note"].get<std::string>().find("could not be read") != std::string::npos);
  // One whose length disagrees with its record count is a bad baseline (exit 3).
  broken["targets"][0]["configs"][0]["op_stream"]["threads"][0]["packed"] = std::string(31, 'A');
  spit(dir.file("short.json"), broken.dump(2));
  const auto s = run_cli(sum_run(dir, {"--baseline", dir.file("short.json")}));
  CHECK(s.code == 3);
  CHECK(s.err.find("length does not match the record count") != std::string::npos);
}

// Identity by content (audit/baseline/identity.h): a model loaded and saved again still matches
// its baseline (the mangled class names of a model scripted twice are a unit test's); a changed weight is compared and said ("same
// graph, other weights"); another graph is another model (exit 3, nothing written).
TEST_CASE("--baseline: a re-saved model still matches; other weights are said and explain; another graph is refused") {
  ra::test::TempDir dir;
  save_linear_baseline(dir, dir.file("g.json"));
  const json g = ra::test::read_json(dir.file("g.json"));
  REQUIRE(g["targets"][0].contains("weights_digest"));
  REQUIRE(g["targets"][0].contains("graph_digest"));
  const std::string original = ra::test::read_file(dir.file("m.pt"));

  // Load and save under another name, then back to m.pt: the archive's records are named after
  // the file it was saved as, so its bytes differ while its graph and weights do not.
  {
    torch::jit::Module again = torch::jit::load(dir.file("m.pt"));
    again.save(dir.file("m2.pt"));
  }
  std::filesystem::rename(dir.file("m2.pt"), dir.file("m.pt"));
  REQUIRE(ra::test::read_file(dir.file("m.pt")) != original);
  const std::string resaved = fresh(RA_REPORT_DIR, "baseline-resaved.json");
  auto r = run_cli(linear_run(dir, {"--baseline", dir.file("g.json"), "--report", resaved}));
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("model: model m.pt was saved or exported again: its file's bytes differ") != std::string::npos);
  CHECK(r.out.find("m.pt / default: match (2 tensors)") != std::string::npos);
  json j = ra::test::read_json(resaved);
  CHECK(j["targets"][0]["model_digest"] != g["targets"][0]["model_digest"]);
  CHECK(j["targets"][0]["graph_digest"] == g["targets"][0]["graph_digest"]);
  CHECK(j["targets"][0]["weights_digest"] == g["targets"][0]["weights_digest"]);
  REQUIRE(j["baseline"]["models"].size() == 1);
  CHECK(j["baseline"]["models"][0]["relation"] == "resaved");

  // One weight changed, the graph kept: compared, and the weights explain the differences.
  {
    torch::jit::Module m = torch::jit::load(dir.file("m.pt"));
    at::NoGradGuard no_grad;
    m.attr("w").toTensor()[0][0].add_(1.0);
    m.save(dir.file("m.pt"));
  }
  const std::string reweighted = fresh(RA_REPORT_DIR, "baseline-reweighted.json");
  r = run_cli(linear_run(dir, {"--baseline", dir.file("g.json"), "--report", reweighted}));
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("model: model m.pt: same graph, other weights") != std::string::npos);
  CHECK(r.out.find("m.pt / default: explained: ") != std::string::npos);
  CHECK(r.out.find("tensors differ; explained by changes that can affect cpu: model.weights") != std::string::npos);
  j = ra::test::read_json(reweighted);
  CHECK(j["baseline"]["models"][0]["relation"] == "other_weights");
  CHECK(result_of(j, "default")["explained_by"] == json::array({"model.weights"}));
  CHECK(j["baseline"]["environment_changes"].empty());

  // Another graph: another model, an input error before any trial, nothing written.
  ra::test::save_model(dir.file("m.pt"), "def forward(self, x):\n    return torch.sigmoid(torch.matmul(x, self.w))\n",
                       {{"w", {16, 8}}});
  r = run_cli(linear_run(dir, {"--baseline", dir.file("g.json"), "--report", dir.file("never.json")}));
  CHECK(r.code == 3);
  CHECK(r.err.find("was made from another version of model m.pt, which computes another graph") != std::string::npos);
  CHECK(!std::filesystem::exists(dir.file("never.json")));
}

TEST_CASE("--baseline on torch.export archives: exported twice matches, a changed weight is other weights") {
  ra::test::TempDir dir;
  const auto data = [](const char* name) { return std::string(RA_TEST_DATA) + "/" + name; };
  const auto run = [&](const char* model, std::vector<std::string> extra) {
    std::vector<std::string> args = {"run", data(model), "--shape", "2x4", "--repeats", "2", "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  };
  auto r = run("exported_linear.pt2", {"--save-baseline", dir.file("g.json")});
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  r = run("exported_linear_again.pt2", {"--baseline", dir.file("g.json")});
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("was saved or exported again: its file's bytes differ") != std::string::npos);
  CHECK(r.out.find("exported_linear_again.pt2 / default: match") != std::string::npos);
  r = run("exported_linear_reweighted.pt2", {"--baseline", dir.file("g.json")});
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("same graph, other weights") != std::string::npos);
  CHECK(r.out.find("exported_linear_reweighted.pt2 / default: explained") != std::string::npos);
  // Another exported graph altogether is refused.
  r = run("exported.pt2", {"--baseline", dir.file("g.json")});
  CHECK(r.code == 3);
  CHECK(r.err.find("which computes another graph") != std::string::npos);
}

namespace {

std::vector<std::string> folder_entries(const std::string& folder) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(folder)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("run --baseline-tensors: only a folder of ours is replaced; a file, a foreign folder or a symlink exits 3") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), ra::test::kLinearReluModel, {{"w", {16, 8}}});
  const auto save = [&](const std::string& configs, const std::string& baseline) {
    return std::vector<std::string>{"run",       dir.file("m.pt"),  "--shape",          "4x16",
                                    "--configs", configs,           "--repeats",        "1",
                                    "--quiet",   "--save-baseline", dir.file(baseline), "--baseline-tensors"};
  };
  REQUIRE(run_cli(save("default,threads-1", "g.json")).code == 0);
  CHECK(folder_entries(dir.file("g.json.tensors")) ==
        std::vector<std::string>{"repro-audit.manifest", "t0-c0.pt", "t0-c1.pt"});
  // Our own earlier folder: replaced whole (the second configuration's file goes with it).
  const auto again = run_cli(save("default", "g.json"));
  CAPTURE(again.err);
  REQUIRE(again.code == 0);
  CHECK(folder_entries(dir.file("g.json.tensors")) == std::vector<std::string>{"repro-audit.manifest", "t0-c0.pt"});

  // What is not ours stays as it was: exit 3, one line naming the path, no baseline written.
  for (const auto& [name, why] : ra::test::plant_folder_obstacles(dir, dir.file("g.json.tensors"))) {
    CAPTURE(name);
    const std::string folder = dir.file(name + ".json.tensors");
    ra::test::expect_error(dir, save("default", name + ".json"), 3,
                           "cannot keep the baseline's reference tensors in '" + folder + "': " + why);
    CHECK_FALSE(ra::test::file_exists(dir.file(name + ".json")));
  }
  ra::test::check_folder_obstacles(dir);
  CHECK(folder_entries(dir.file("g.json.tensors")) == std::vector<std::string>{"repro-audit.manifest", "t0-c0.pt"});
}
