// SPDX-License-Identifier: Apache-2.0
// `repro-audit run --trace` end to end, on CPU: root causes (forward and backward), propagation,
// and the fix search, with the test-only ops of tests/support/test_ops.cpp as positive controls.
#include "tests/cli/harness.h"

// torch before doctest: c10 defines a CHECK macro that doctest must override.
#include <torch/script.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

using nlohmann::json;
using ra::test::run_cli;

namespace {

// A chain of deterministic ops with the nondeterministic test op in the middle: line 4 of forward.
const char* kChain = R"JIT(
def forward(self, x):
    h = torch.relu(torch.matmul(x, self.w))
    s = ra_test.nondet_sum(h.repeat(1, 64))
    y = h + s.unsqueeze(1)
    return torch.matmul(y, self.v).sum(1)
)JIT";

json traced_config(const ra::test::TempDir& dir, const std::string& report, int config = 0) {
  const auto j = ra::test::read_json(dir.file(report));
  return j["targets"][0]["configs"][config];
}

}  // namespace

TEST_CASE("run --trace: the root cause is exactly the nondeterministic op, at its source line") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("chain.pt"), kChain, {{"w", {16, 64}}, {"v", {64, 8}}});
  const auto r = run_cli({"run", dir.file("chain.pt"), "--shape", "8x16", "--configs", "default", "--repeats", "3",
                          "--trace", "--no-fix-search", "--load-library", ra::test::test_ops_library(), "--report",
                          dir.file("r.json"), "--quiet"});
  CHECK(r.code == 1);
  const json c = traced_config(dir, "r.json");
  REQUIRE(c["verdict"] == "diverged");
  const json& t = c["trace"];
  REQUIRE(t.is_object());
  CHECK(t["runs_compared"] == 2);
  CHECK(t["runs_identical"] == 0);
  CHECK(t["dropped"] == 0);
  REQUIRE(t["root_causes"].size() == 1);
  const json& rc = t["root_causes"][0];
  CHECK(rc["op"] == "ra_test::nondet_sum");
  CHECK(rc["direction"] == "forward");
  CHECK(rc["runs_diverged"] == 2);
  CHECK(rc["inputs"] == json::array({"float32[8x4096]"}));
  CHECK(rc["outputs"] == json::array({"float32[8]"}));
  CHECK(rc["differing_outputs"] == json::array({0}));
  // The source line of the call, as TorchScript compiled it.
  const std::string source = rc["source"].get<std::string>();
  CHECK(source.find(":4: s = ra_test.nondet_sum(h.repeat(1, 64))") != std::string::npos);
  // Downstream: unsqueeze, add, matmul and sum all read the differing sum.
  CHECK(rc["propagated"].get<int>() >= 4);
  CHECK(rc["independent_mismatches"] == 0);
  CHECK(c["fix_search"].is_null());
  CHECK(r.out.find("root cause: ra_test::nondet_sum (forward)") != std::string::npos);
}

TEST_CASE("run --trace: a deterministic model has identical traces and no root cause") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("det.pt"), R"JIT(
def forward(self, x):
    return torch.tanh(torch.matmul(x, self.w)).sum()
)JIT",
                       {{"w", {16, 8}}});
  const auto r = run_cli({"run", dir.file("det.pt"), "--shape", "4x16", "--mode", "train", "--steps", "2", "--configs",
                          "default", "--trace", "--report", dir.file("r.json"), "--quiet"});
  CHECK(r.code == 0);
  const json c = traced_config(dir, "r.json");
  CHECK(c["verdict"] == "reproducible");
  CHECK(c["trace"]["runs_identical"] == 2);
  CHECK(c["trace"]["root_causes"].empty());
  CHECK(c["trace"]["records"].get<int>() > 10);  // forward, backward and optimizer ops of two steps
  CHECK(c["fix_search"].is_null());
}

TEST_CASE("run --trace: nondeterminism only in a backward node is found there, linked to its forward op") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("bw.pt"), R"JIT(
def forward(self, x):
    h = torch.relu(torch.matmul(x, self.w))
    g = ra_test.nondet_grad(h)
    return torch.matmul(g, self.v).sum()
)JIT",
                       {{"w", {16, 64}}, {"v", {64, 4}}});
  const auto r = run_cli({"run", dir.file("bw.pt"), "--shape", "8x16", "--mode", "train", "--steps", "2", "--configs",
                          "default", "--repeats", "3", "--trace", "--no-fix-search", "--load-library",
                          ra::test::test_ops_library(), "--report", dir.file("r.json"), "--quiet"});
  CHECK(r.code == 1);
  const json c = traced_config(dir, "r.json");
  REQUIRE(c["trace"]["root_causes"].size() >= 1);
  const json& rc = c["trace"]["root_causes"][0];
  CHECK(rc["op"] == "ra_test::nondet_sum");
  CHECK(rc["direction"] == "backward");
  CHECK(rc["phase"] == "backward");
  CHECK(rc["step"] == 1);
  CHECK(rc["node"].get<std::string>().find("NondetGrad") != std::string::npos);
  CHECK(rc["forward_op"] == "ra_test::nondet_grad");
  CHECK(rc["source"].get<std::string>().find(":4: g = ra_test.nondet_grad(h)") != std::string::npos);
  // The forward pass of step 1 is identical: every forward output of step 1 matched.
  CHECK(rc["propagated"].get<int>() >= 1);
}

TEST_CASE("run --trace: the fix search finds threads=1 for a thread-dependent reduction, with its cost") {
  ra::test::TempDir dir;
  // index_put_ with accumulate and duplicate indices: CPU threads add into the same rows in a
  // racy order.
  ra::test::save_model(dir.file("ip.pt"), R"JIT(
def forward(self, x):
    h = torch.matmul(x, self.w)
    idx = torch.remainder(torch.arange(h.size(0)), 3)
    out = torch.zeros([3, h.size(1)]).index_put_([idx], h, True)
    return torch.tanh(out * 0.001)
)JIT",
                       {{"w", {64, 64}}});
  const auto r = run_cli({"run", dir.file("ip.pt"), "--shape", "100000x64", "--configs", "threads=4", "--repeats", "3",
                          "--trace", "--report", dir.file("r.json"), "--quiet"});
  CHECK(r.code == 1);
  const auto j = ra::test::read_json(dir.file("r.json"));
  const json& c = j["targets"][0]["configs"][0];
  REQUIRE(c["verdict"] == "diverged");
  REQUIRE(c["trace"]["root_causes"].size() >= 1);
  CHECK(c["trace"]["root_causes"][0]["op"] == "aten::index_put_");
  const json& fs = c["fix_search"];
  REQUIRE(fs.is_object());
  CHECK(fs["from"] == "threads=4");
  json threads1;
  size_t threads1_index = 0;
  for (size_t i = 0; i < fs["candidates"].size(); ++i)
    if (fs["candidates"][i]["config"] == "threads=4+threads=1") {
      threads1 = fs["candidates"][i];
      threads1_index = i;
    }
  REQUIRE(threads1.is_object());
  CHECK(threads1["verdict"] == "reproducible");
  CHECK(threads1["minimal"] == true);
  CHECK(threads1["fixes_root_causes"].size() == c["trace"]["root_causes"].size());
  CHECK(threads1["snippet"]["cpp"] == "at::set_num_threads(1);");
  CHECK(threads1["snippet"]["python"] == "torch.set_num_threads(1)");
  const auto& minimal = fs["minimal_fixes"];
  CHECK(std::find(minimal.begin(), minimal.end(), json(threads1_index)) != minimal.end());
  CHECK(c["trace"]["root_causes"][0]["fixed_by"].size() >= 1);
  // Its cost, measured in uninstrumented runs, is in the timing section.
  const json& timing = j["timing"]["fixes"];
  REQUIRE(timing.size() == 1);
  CHECK(timing[0]["baseline_median_ms"].get<double>() > 0);
  bool timed = false;
  for (const auto& cand : timing[0]["candidates"])
    if (cand["config"] == "threads=4+threads=1") {
      timed = true;
      CHECK(cand["median_ms"].get<double>() > 0);
      CHECK(cand["cost_ratio"].get<double>() > 0);
    }
  CHECK(timed);
  CHECK(r.out.find("C++:    ") != std::string::npos);  // the cheapest fix's snippet
  CHECK(r.out.find("threads=1") != std::string::npos);
  CHECK(r.out.find("cost ") != std::string::npos);
}

TEST_CASE("run --trace: an op without a deterministic implementation is named, with alternatives") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("al.pt"), ra::test::kNondetAlertModel, {{"w", {16, 64}}});
  const auto r =
      run_cli({"run", dir.file("al.pt"), "--shape", "8x16", "--configs", "default", "--repeats", "3", "--trace",
               "--load-library", ra::test::test_ops_library(), "--report", dir.file("r.json"), "--quiet"});
  CHECK(r.code == 1);
  const json c = traced_config(dir, "r.json");
  const json& fs = c["fix_search"];
  REQUIRE(fs.is_object());
  CHECK(fs["minimal_fixes"].empty());
  REQUIRE(fs["no_deterministic_implementation"].size() == 1);
  CHECK(fs["no_deterministic_implementation"][0]["op"] == "ra_test_nondet_alert");
  CHECK(fs["no_deterministic_implementation"][0]["alternatives"].size() == 3);
  CHECK(fs["conclusion"].get<std::string>().find("ra_test_nondet_alert has no deterministic implementation") !=
        std::string::npos);
  bool raised = false;
  for (const auto& cand : fs["candidates"])
    raised |= cand["config"] == "default+deterministic=on" && cand["verdict"] == "raised";
  CHECK(raised);
  CHECK(r.out.find("ra_test_nondet_alert has no deterministic implementation here") != std::string::npos);
}

TEST_CASE("run --trace: a full trace drops records and says so") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("long.pt"), R"JIT(
def forward(self, x):
    for i in range(600):
        x = torch.tanh(x)
    return x
)JIT",
                       {{"w", {1}}});
  const auto r = run_cli({"run", dir.file("long.pt"), "--shape", "4x4", "--configs", "default", "--repeats", "2",
                          "--trace", "--trace-capacity", "1024", "--report", dir.file("r.json"), "--quiet"});
  CHECK(r.code == 0);
  const json c = traced_config(dir, "r.json");
  CHECK(c["trace"]["capacity"] == 1024);
  CHECK(c["trace"]["dropped"].get<int>() > 0);
  CHECK(c["trace"]["records"].get<int>() <= 512);
  CHECK(r.out.find("records dropped") != std::string::npos);
}

TEST_CASE("run --trace: bad trace options are usage errors") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), "def forward(self, x):\n    return x * self.w\n", {{"w", {1}}});
  ra::test::expect_error(dir, {"run", dir.file("m.pt"), "--shape", "2", "--trace", "--trace-capacity", "10"}, 2,
                         "--trace-capacity");
  ra::test::expect_error(dir, {"run", dir.file("m.pt"), "--shape", "2", "--trace", "--timed-runs", "2"}, 2,
                         "--timed-runs");
}

TEST_CASE("run --trace: where two configurations part: a thread-dependent sum is named, with the switch between them") {
  ra::test::TempDir dir;
  // A full float32 sum of 16 Mi elements: one partial sum per thread, so threads-1 and threads-N
  // each reproduce their own bits; the multiplication after it only propagates.
  ra::test::save_model(dir.file("sum.pt"), R"JIT(
def forward(self, x):
    h = x * self.scale
    s = torch.sum(h)
    return s * self.scale
)JIT",
                       {{"scale", {1}}});
  const auto r = run_cli({"run", dir.file("sum.pt"), "--shape", "4096x4096", "--configs", "threads-1,threads-N",
                          "--repeats", "2", "--trace", "--report", dir.file("r.json"), "--junit", dir.file("r.xml"),
                          "--markdown", dir.file("r.md"), "--html", dir.file("r.html"), "--quiet"});
  CAPTURE(r.err);
  CHECK(r.code == 0);  // configuration dependence is not a failure
  const auto j = ra::test::read_json(dir.file("r.json"));
  const auto& dep = j["targets"][0]["configuration_dependence"];
  REQUIRE(dep.is_object());
  REQUIRE(dep["causes"].size() == 1);
  const auto& cause = dep["causes"][0];
  CHECK(cause["reference_config"] == "threads-1");
  CHECK(cause["config"] == "threads-N");
  REQUIRE(cause["switches"].size() == 1);
  CHECK(cause["switches"][0]["key"] == "threads");
  CHECK(cause["switches"][0]["reference"] == "1");
  CHECK(cause["switches"][0]["other"] != "1");
  REQUIRE(cause["trace"]["root_causes"].size() == 1);
  const auto& rc = cause["trace"]["root_causes"][0];
  CHECK(rc["op"] == "aten::sum");
  CHECK(rc["direction"] == "forward");
  CHECK(rc["source"].get<std::string>().find(":4") != std::string::npos);  // line 4 of forward's source
  CHECK(rc["propagated"] == 1);                                            // the multiplication after it
  CHECK(cause["note"] == "");
  // Every renderer says it in the same words.
  const std::string line = "threads-N against threads-1 (threads 1 -> ";
  CHECK(r.out.find(line) != std::string::npos);
  CHECK(r.out.find("first differing op aten::sum (forward)") != std::string::npos);
  CHECK(ra::test::read_file(dir.file("r.md")).find("first differing op aten::sum (forward)") != std::string::npos);
  CHECK(ra::test::read_file(dir.file("r.xml")).find("first differing op aten::sum (forward)") != std::string::npos);
  const std::string html = ra::test::read_file(dir.file("r.html"));
  CHECK(html.find("<div class=\"trace config-cause\" data-config=\"threads-N\" data-reference=\"threads-1\">") !=
        std::string::npos);
  CHECK(html.find("data-op=\"aten::sum\"") != std::string::npos);
}

TEST_CASE("run --trace: MKL_CBWR changing a matmul's bits names the matmul, and the switch") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("mm.pt"), R"JIT(
def forward(self, x):
    h = torch.relu(x)
    return torch.matmul(h, self.w).sum(1)
)JIT",
                       {{"w", {256, 256}}});
  const auto r =
      run_cli({"run", dir.file("mm.pt"), "--shape", "64x256", "--configs", "default,default+mkl_cbwr=COMPATIBLE",
               "--repeats", "2", "--trace", "--report", dir.file("r.json"), "--quiet"});
  CAPTURE(r.out);
  CHECK(r.code == 0);
  const auto j = ra::test::read_json(dir.file("r.json"));
  const auto& dep = j["targets"][0]["configuration_dependence"];
  if (dep.is_null()) {
    // MKL's code path for this CPU may already be the compatible one: then there is nothing to name.
    MESSAGE("MKL_CBWR=COMPATIBLE gives this CPU the same bits; nothing to name");
    return;
  }
  REQUIRE(dep["causes"].size() == 1);
  const auto& cause = dep["causes"][0];
  CHECK(cause["switches"] == json::array({{{"key", "mkl_cbwr"}, {"reference", "unset"}, {"other", "COMPATIBLE"}}}));
  REQUIRE(cause["trace"]["root_causes"].size() == 1);
  CHECK(cause["trace"]["root_causes"][0]["op"] == "aten::matmul");
  CHECK(cause["trace"]["root_causes"][0]["propagated"] == 1);  // the sum after it
}

TEST_CASE("run: configuration dependence without --trace lists no causes") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("sum.pt"), "def forward(self, x):\n    return torch.sum(x * self.scale)\n",
                       {{"scale", {1}}});
  // Without --trace: the dependence is reported, with no causes.
  const auto plain = run_cli({"run", dir.file("sum.pt"), "--shape", "4096x4096", "--configs", "threads-1,threads-N",
                              "--repeats", "1", "--report", dir.file("p.json"), "--quiet"});
  CHECK(plain.code == 0);
  const auto p = ra::test::read_json(dir.file("p.json"));
  CHECK(p["targets"][0]["configuration_dependence"]["causes"].empty());
}

TEST_CASE("run --trace: a method a module calls on itself is not a submodule in the root cause's module path") {
  ra::test::TempDir dir;
  // torchvision's Conv2d calls self._conv_forward: the interpreter's hierarchy then holds a
  // "SELF(...)" entry, which must not show up as "SELF" in the module path.
  ra::test::save_model(dir.file("m.pt"), R"JIT(
def reduce(self, h):
    return ra_test.nondet_sum(h.repeat(1, 64))

def forward(self, x):
    h = torch.relu(torch.matmul(x, self.w))
    return self.reduce(h)
)JIT",
                       {{"w", {16, 64}}});
  const auto r = run_cli({"run", dir.file("m.pt"), "--shape", "8x16", "--configs", "default", "--repeats", "3",
                          "--trace", "--no-fix-search", "--load-library", ra::test::test_ops_library(), "--report",
                          dir.file("r.json"), "--quiet"});
  CAPTURE(r.out);
  const auto c = traced_config(dir, "r.json");
  REQUIRE(c["trace"]["root_causes"].size() >= 1);
  const auto& rc = c["trace"]["root_causes"][0];
  CHECK(rc["op"] == "ra_test::nondet_sum");
  CHECK(rc["module"].is_null());  // the top-level module, not "SELF"
}
