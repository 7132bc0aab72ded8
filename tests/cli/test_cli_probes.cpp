// SPDX-License-Identifier: Apache-2.0
// `repro-audit probes` end to end, on CPU. The test-only probes come from the ra_test_ops plugin
// (tests/support/test_ops.cpp): test.nondet-sum is the positive control that proves a divergence
// is caught without a GPU, test.fault crashes or hangs by configuration, test.alert raises a
// determinism alert, test.stable is a deterministic neighbour.
#include "tests/cli/harness.h"

// torch before doctest: c10 defines a CHECK macro that doctest must override.
#include <torch/script.h>

#include <doctest/doctest.h>

#include <set>

using ra::test::run_cli;

namespace {

const nlohmann::json& target(const nlohmann::json& report, const std::string& name) {
  for (const auto& t : report["targets"])
    if (t["name"] == name) return t;
  FAIL("no target " << name);
  static const nlohmann::json none;
  return none;
}

bool contains(const nlohmann::json& list, const std::string& name) {
  for (const auto& x : list)
    if (x == name) return true;
  return false;
}

}  // namespace

TEST_CASE("probes --list: every probe with family, op, devices, direction and documented status") {
  const auto r = run_cli({"probes", "--list", "--json"});
  REQUIRE(r.code == 0);
  const auto list = nlohmann::json::parse(r.out);
  CHECK(list.size() >= 60);
  std::set<std::string> families, documented;
  for (const auto& p : list) {
    families.insert(p["family"].get<std::string>());
    documented.insert(p["documented"].get<std::string>());
    CHECK(!p["op"].get<std::string>().empty());
    CHECK(!p["devices"].empty());
  }
  for (const char* f : {"convolution", "scatter-index", "pooling", "resampling", "losses", "recurrent", "embedding",
                        "reductions", "linear-algebra", "attention", "memory"})
    CHECK_MESSAGE(families.count(f), f);
  CHECK(documented == std::set<std::string>{"made-deterministic", "raises", "undocumented", "not-listed"});

  const auto text = run_cli({"probes", "--list", "--only", "conv*d.backward"});
  CHECK(text.code == 0);
  CHECK(text.out.find("conv2d.backward") != std::string::npos);
  CHECK(text.out.find("index_add") == std::string::npos);
  CHECK(text.out.find("6 probes") != std::string::npos);
}

TEST_CASE("probes: the positive control diverges in every repeat (exit 1), its neighbour does not") {
  ra::test::TempDir dir;
  const auto r =
      run_cli({"probes", "--load-library", ra::test::test_ops_library(), "--only", "test.nondet-sum,test.stable",
               "--configs", "default", "--repeats", "3", "--report", dir.file("r.json"), "--quiet"});
  CHECK(r.code == 1);
  const auto j = ra::test::read_json(dir.file("r.json"));
  CHECK(j["targets"].size() == 2);
  const auto& nd = target(j, "test.nondet-sum")["configs"][0];
  CHECK(nd["verdict"] == "diverged");
  CHECK(nd["divergence"]["rate"] == 1.0);
  REQUIRE(nd["diverged_tensors"].size() == 1);
  CHECK(nd["diverged_tensors"][0]["stats"]["differing"].get<int>() > 0);
  CHECK(target(j, "test.stable")["configs"][0]["verdict"] == "reproducible");
  CHECK(contains(j["census"]["silent_diverged"], "test.nondet-sum"));
  CHECK(contains(j["census"]["stable"], "test.stable"));
  CHECK(target(j, "test.nondet-sum")["probe"]["census"] == "silent-diverged");
  CHECK(r.out.find("== test (") != std::string::npos);
  CHECK(r.out.find("suite wall time: ") != std::string::npos);
}

TEST_CASE("probes --repeats auto: a racy CPU probe is settled, and its deterministic configuration is bounded") {
  // index_put.accumulate races two threads' atomic adds on the CPU: it once read `diverged 1/2` in
  // one suite run and `reproducible` in the next. Auto keeps adding repeats until it is decided.
  // At 25% it gives the race 13 runs before ruling it out: with 50% (5 runs) a fresh-clone CI whose
  // other tests kept both cores busy once saw no race at all.
  ra::test::TempDir dir;
  const auto r = run_cli({"probes", "--only", "index_put.accumulate", "--configs", "default,det", "--repeats", "auto",
                          "--detect-rate", "25%", "--no-census", "--report", dir.file("r.json"), "--quiet"});
  CHECK(r.code == 1);
  const auto j = ra::test::read_json(dir.file("r.json"));
  const auto& configs = target(j, "index_put.accumulate")["configs"];
  CHECK(configs[0]["verdict"] == "diverged");
  CHECK(configs[0]["stopped_by"] == "divergence");
  CHECK(configs[0]["repeats"].get<int>() < 17);    // stopped by the divergence, not by the bound
  CHECK(configs[1]["verdict"] == "reproducible");  // det: the serial path
  CHECK(configs[1]["stopped_by"] == "confidence");
  CHECK(configs[1]["repeats"] == 13);
  CHECK(r.out.find("repeats: auto, 3 to 20 runs per configuration") != std::string::npos);
}

TEST_CASE("probes: a determinism alert raises under det and is counted by the census") {
  ra::test::TempDir dir;
  const auto r = run_cli({"probes", "--load-library", ra::test::test_ops_library(), "--only", "test.alert", "--configs",
                          "default,det", "--repeats", "2", "--report", dir.file("r.json"), "--quiet"});
  CHECK(r.code == 1);
  const auto j = ra::test::read_json(dir.file("r.json"));
  const auto& t = target(j, "test.alert");
  CHECK(t["configs"][0]["verdict"] == "reproducible");
  CHECK(t["configs"][1]["verdict"] == "raised");
  CHECK(t["configs"][1]["message"].get<std::string>().find("ra_test_alert does not have a deterministic") !=
        std::string::npos);
  CHECK(t["probe"]["census"] == "alerted-stable");
  REQUIRE(t["probe"]["alerts"].size() == 1);
  CHECK(t["probe"]["alerts"][0].get<std::string>().find("warn_only=True") != std::string::npos);
  // Not in the knowledge base: raising and alerting are both disagreements with the documentation.
  CHECK(t["probe"]["disagreements"].size() == 2);
}

TEST_CASE("probes: a crash or a hang costs one probe; the probes after it run in a new child") {
  ra::test::TempDir dir;
  const auto r = run_cli({"probes", "--load-library", ra::test::test_ops_library(), "--only", "test.fault,test.stable",
                          "--configs", "threads-1,threads=3,threads=2", "--repeats", "2", "--timeout", "5",
                          "--no-census", "--report", dir.file("r.json"), "--quiet"});
  CHECK(r.code == 4);
  const auto j = ra::test::read_json(dir.file("r.json"));
  const auto& fault = target(j, "test.fault")["configs"];
  CHECK(fault[0]["verdict"] == "crashed");
  CHECK(fault[0]["trials"][0]["message"].get<std::string>().find("SIGSEGV") != std::string::npos);
  CHECK(fault[1]["verdict"] == "timeout");
  CHECK(fault[2]["verdict"] == "reproducible");
  for (const auto& c : target(j, "test.stable")["configs"]) {
    CHECK(c["verdict"] == "reproducible");
    CHECK(c["completed"] == 2);
  }
  CHECK(!j.contains("census"));
}

TEST_CASE("probes: after a sticky device error, the probes left run in a fresh process") {
  // test.device-error-sticky raises c10::AcceleratorError and poisons its process (as an illegal
  // address poisons a CUDA context); test.device-error-then fails in a poisoned process. The child
  // files the first, says so and exits; the second must run, in a fresh process, and be reproducible,
  // and no crash is charged to it.
  ra::test::TempDir dir;
  const auto r = run_cli({"probes", "--load-library", ra::test::test_ops_library(), "--only",
                          "test.device-error-sticky,test.device-error-then", "--configs", "default", "--repeats", "2",
                          "--no-census", "--report", dir.file("r.json"), "--quiet"});
  const auto j = ra::test::read_json(dir.file("r.json"));
  const auto& sticky = target(j, "test.device-error-sticky")["configs"][0];
  CHECK(sticky["verdict"] != "reproducible");
  CHECK(sticky["trials"][0]["message"].get<std::string>().find("illegal memory access") != std::string::npos);
  const auto& then = target(j, "test.device-error-then")["configs"][0];
  CHECK(then["verdict"] == "reproducible");
  CHECK(then["completed"] == 2);
  CHECK(r.code != 0);
}

TEST_CASE("probes: an isolated probe runs in a process of its own, in every configuration and the census") {
  // test.isolated fails when another probe ran in its process; the probes around it share theirs.
  ra::test::TempDir dir;
  const auto r = run_cli({"probes", "--load-library", ra::test::test_ops_library(), "--only",
                          "test.stable,test.isolated,test.nondet-sum", "--configs", "default,threads-1", "--repeats",
                          "2", "--report", dir.file("r.json"), "--quiet"});
  const auto j = ra::test::read_json(dir.file("r.json"));
  for (const auto& c : target(j, "test.isolated")["configs"]) {
    CHECK(c["verdict"] == "reproducible");
    CHECK(c["completed"] == 2);
  }
  CHECK(target(j, "test.stable")["configs"][0]["verdict"] == "reproducible");
  CHECK(contains(j["census"]["stable"], "test.isolated"));
  CHECK(r.code == 1);  // test.nondet-sum diverges, in the shared child
}

TEST_CASE("probes: CPU probes measure thread dependence and documented raises on this machine") {
  ra::test::TempDir dir;
  const auto r = run_cli({"probes", "--only", "sum.threads,sum.dim.threads-control,put,conv2d.tf32", "--configs",
                          "threads-1,threads=2,det", "--repeats", "2", "--report", dir.file("r.json"), "--quiet"});
  const auto j = ra::test::read_json(dir.file("r.json"));
  // A 16M-element float32 sum is reduced in a different order with one thread than with two.
  const auto& sum = target(j, "sum.threads");
  CHECK(sum["configuration_dependent"] == true);
  for (const auto& c : sum["configs"]) CHECK(c["verdict"] == "reproducible");
  CHECK(target(j, "sum.dim.threads-control")["configuration_dependent"] == false);
  // put_ without accumulate is documented to raise on every device.
  const auto& put = target(j, "put");
  CHECK(put["configs"][2]["verdict"] == "raised");
  CHECK(put["probe"]["documented"] == "raises");
  CHECK(put["probe"]["census"].get<std::string>().rfind("alerted", 0) == 0);
  // A CUDA-only probe is skipped on the CPU, with the reason.
  const auto& tf32 = target(j, "conv2d.tf32");
  CHECK(tf32["verdict"] == "skipped");
  CHECK(tf32["configs"][0]["message"].get<std::string>().find("does not run on cpu") != std::string::npos);
  CHECK((r.code == 0 || r.code == 1));
  CHECK(j["exit_code"] == r.code);
}

TEST_CASE("probes: bad input gives one line on stderr, the documented exit code and no report") {
  ra::test::TempDir dir;
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string message;
  };
  std::ofstream(dir.file("bad.json")) << "{\"schema\": \"repro-audit/knowledge\", \"schema_version\": 1, \"torch\": ";
  const std::vector<Case> cases = {
      {{"--only", "no-such-probe*"}, 2, "--only 'no-such-probe*' matches no probe or family"},
      {{"--device", "tpu"}, 2, "unknown device 'tpu'"},
      {{"--configs", "fastest"}, 2, "unknown configuration"},
      {{"--knowledge", dir.file("bad.json")}, 3, "knowledge base"},
      {{"--load-library", dir.file("missing.so")}, 3, "does not exist"},
      {{"--report", "/dev/null/folder/r.json"}, 2, "cannot create folder"},
      {{"--repeats", "0"}, 2, "--repeats"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"probes", "--only", "put"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    ra::test::expect_error(dir, args, c.code, c.message);
  }
}

TEST_CASE("completion: probes --only <TAB> offers probe names and families, not file names") {
  const auto bash = run_cli({"__completion", "bash"});
  REQUIRE(bash.code == 0);
  const size_t at = bash.out.find("    --only) COMPREPLY=($(compgen -W \"");
  REQUIRE(at != std::string::npos);
  const std::string words = bash.out.substr(at, bash.out.find('\n', at) - at);
  for (const char* w :
       {"\"adaptive_avg_pool2d.backward ", " index_put.accumulate ", " index_add ", " scatter-index ", " sum.threads"})
    CHECK(words.find(w) != std::string::npos);
  const auto zsh = run_cli({"__completion", "zsh"});
  REQUIRE(zsh.code == 0);
  CHECK(zsh.out.find("'--only[") != std::string::npos);
  CHECK(zsh.out.find(":value:(") != std::string::npos);
  CHECK(zsh.out.find("index_put.accumulate") != std::string::npos);
}

TEST_CASE(
    "probes batch-invariance: the classes of mm (variant) and layer_norm (invariant) are those Python measures here") {
  ra::test::TempDir dir;
  const auto r = run_cli({"probes", "--only", "batch.mm,batch.layer_norm,batch.linear,batch.detect-control",
                          "--configs", "default", "--repeats", "2", "--report", dir.file("r.json"), "--quiet"});
  INFO(r.out, r.err);
  REQUIRE(r.code == 0);
  const auto j = ra::test::read_json(dir.file("r.json"));
  const nlohmann::json expected = ra::test::python_batch_classes({"mm", "layer_norm", "linear", "detect-control"});
  for (const char* op : {"mm", "layer_norm", "linear", "detect-control"}) {
    const auto& t = target(j, std::string("batch.") + op);
    CAPTURE(op);
    CHECK(t["probe"]["family"] == "batch-invariance");
    REQUIRE(t["probe"]["batch_classes"].size() == 1);
    CHECK(t["probe"]["batch_classes"][0]["config"] == "default");
    CHECK(t["probe"]["batch_classes"][0]["classes"] == expected[op]);
    // Run to run, each recorded row is as reproducible as any probe's output.
    CHECK(t["configs"][0]["verdict"] == "reproducible");
  }
  // The negative control for the comparison: one ulp is seen.
  CHECK(expected["detect-control"].size() == 2);
  // The text names the classes per configuration, variant or invariant.
  const bool mm_variant = expected["mm"].size() > 1;
  CHECK(r.out.find(mm_variant ? "batch classes under default: {1"
                              : "batch classes under default: {1…257}: invariant") != std::string::npos);
  CHECK(r.out.find("batch classes under default: {1…257}: invariant") != std::string::npos);      // layer_norm
  CHECK(r.out.find("batch classes under default: {1} | {2…257}: variant") != std::string::npos);  // detect-control
  // `report` re-renders it from the JSON as it was printed.
  const auto again = run_cli({"report", dir.file("r.json")});
  CHECK(again.out == r.out);
  // The Markdown and JUnit reports carry the same classes (a CI summary page shows them).
  const auto other =
      run_cli({"report", dir.file("r.json"), "--markdown", dir.file("r.md"), "--junit", dir.file("r.xml")});
  REQUIRE(other.code == 0);
  const std::string md = ra::test::read_file(dir.file("r.md")), xml = ra::test::read_file(dir.file("r.xml"));
  CHECK(md.find("| batch.layer\\_norm | default | {1…257} | invariant |") != std::string::npos);
  CHECK(md.find("| batch.detect-control | default | {1} \\| {2…257} | **variant** |") != std::string::npos);
  CHECK(xml.find("<property name=\"batch-classes default\" value=\"{1…257}\"/>") != std::string::npos);
  CHECK(xml.find("<property name=\"batch-classes default\" value=\"{1} | {2…257}\"/>") != std::string::npos);
}
