// SPDX-License-Identifier: Apache-2.0
#include "audit/baseline/baseline.h"
#include "audit/baseline/identity.h"

#include "audit/common/errors.h"
#include "reports/baseline_file.h"
#include "reports/json_read.h"
#include "reports/render.h"

#include <doctest/doctest.h>

#include <map>
#include <string>

namespace {

using json = nlohmann::ordered_json;
using ra::report::BaselineStatus;
using ra::report::Verdict;

// A fingerprint shaped like `repro-audit env --json` (one GPU, so device keys exist).
json environment() {
  return json::parse(R"({
    "tool": {"version": "0.1.0", "share_dir": "/opt/a/share"},
    "torch": {"version": "2.11.0", "git_version": "70d99e", "library_dir": "/venv-a/torch/lib", "cuda_compiled": true},
    "cuda": {"available": true, "compiled_cuda": "13.0", "compiled_cudnn": "9.19.0", "runtime": "13.0",
             "driver": "13.0", "cudnn": "9.19.0", "cublas": "13.1.0", "reason": "",
             "devices": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-aaaa", "sm_count": 132,
                          "compute_capability": "9.0", "memory_bytes": 85000000000},
                         {"index": 1, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-bbbb", "sm_count": 132,
                          "compute_capability": "9.0", "memory_bytes": 85000000000}]},
    "cpu": {"model": "AMD EPYC", "logical_cpus": 2, "aten_capability": "AVX512", "machine": "x86_64", "kernel": "Linux 6.1"},
    "threads": {"intra_op": 2, "inter_op": 2, "openmp": true, "mkl": true, "mkldnn": true},
    "env_vars": {"CUBLAS_WORKSPACE_CONFIG": null, "MKL_CBWR": null},
    "switches": {"cudnn.benchmark": "off", "threads": "2"}
  })");
}

std::string hex(char c) { return std::string(32, c); }

ra::report::ConfigResult config(const std::string& name, Verdict v, char output = 'b',
                                const std::string& threads = "2") {
  ra::report::ConfigResult c;
  c.name = name;
  c.verdict = v;
  c.repeats = 3;
  c.completed = v == Verdict::Reproducible || v == Verdict::Diverged ? 3 : 0;
  c.switches = {{"cudnn.benchmark", "", "off"}, {"threads", "", threads}};
  if (c.completed > 0)
    c.reference = {{"param/w", "float32", {16, 8}, hex('a')}, {"output", "float32", {4, 8}, hex(output)}};
  c.tensor_count = c.reference.size();
  return c;
}

// Sets a configuration's repeats: `completed` runs, `diverging` of them, the rate's Wilson interval.
void repeats(ra::report::ConfigResult& c, int completed, int diverging, double low, double high) {
  c.repeats = c.completed = completed;
  c.diverging_repeats = diverging;
  c.divergence_rate = completed > 1 ? static_cast<double>(diverging) / (completed - 1) : 0;
  c.rate_ci_low = low, c.rate_ci_high = high;
}

ra::report::Report report(const std::string& device = "cpu") {
  ra::report::Report r;
  r.tool_version = "0.1.0";
  r.environment = environment();
  ra::report::Target t;
  t.name = "m.pt";
  t.model_digest = hex('1');
  t.device = device;
  t.mode = "infer";
  t.inputs = {"float32[4x16]"};
  t.configs = {config("default", Verdict::Reproducible), config("threads-1", Verdict::Reproducible, 'b', "1")};
  r.body = ra::report::RunBody{{{t, {}}}};
  ra::report::finalize(r);
  return r;
}

ra::Baseline baseline_of(const ra::report::Report& r) { return {"golden.json", "repro-audit/baseline", r}; }

const ra::report::BaselineResult& result(const ra::report::Report& r, const std::string& config) {
  const ra::report::BaselineResult* found = nullptr;
  for (const auto& res : r.baseline->results)
    if (res.config == config && !found) found = &res;
  REQUIRE_MESSAGE(found != nullptr, "no result for " << config);
  return *found;
}

// The first target of a body, to change.
ra::report::Target& first(ra::report::Body& body) { return ra::report::common_targets(body)[0]; }

std::string check_error(const ra::Baseline& base, const ra::report::Body& targets,
                        const std::vector<std::string>& configs = {"default"}) {
  try {
    ra::check_baseline_targets(base, targets, configs);
  } catch (const ra::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("diff_environments: identical fingerprints give nothing; changes are keyed, ordered and classified") {
  CHECK(ra::diff_environments(environment(), environment()).changes.empty());
  CHECK(ra::diff_environments(environment(), environment()).ignored.empty());

  json after = environment();
  after["torch"]["version"] = "2.12.0";
  after["torch"]["library_dir"] = "/venv-b/torch/lib";
  after["cuda"]["cudnn"] = "9.20.0";
  after["cuda"]["devices"][0]["sm_count"] = 114;
  after["cuda"]["devices"][0]["uuid"] = "GPU-cccc";
  after["env_vars"]["MKL_CBWR"] = "COMPATIBLE";
  after["switches"]["threads"] = "4";
  after["cpu"].erase("kernel");
  after["cpu"]["numa_nodes"] = 2;  // a key this version does not know
  const auto d = ra::diff_environments(environment(), after);
  REQUIRE(d.changes.size() == 5);
  CHECK(d.changes[0].key == "torch.version");
  CHECK(d.changes[0].baseline == "2.11.0");
  CHECK(d.changes[0].current == "2.12.0");
  CHECK(d.changes[0].affects == "any");
  CHECK(d.changes[1].key == "cuda.cudnn");
  CHECK(d.changes[1].affects == "cuda");
  CHECK(d.changes[2].key == "cuda.devices[0].sm_count");
  CHECK(d.changes[2].baseline == "132");
  CHECK(d.changes[2].affects == "cuda:0");
  CHECK(d.changes[3].key == "cpu.numa_nodes");
  CHECK(d.changes[3].baseline == "(absent)");
  CHECK(d.changes[3].affects == "any");
  CHECK(d.changes[4].key == "env_vars.MKL_CBWR");
  CHECK(d.changes[4].baseline == "(unset)");
  CHECK(d.changes[4].affects == "cpu");
  REQUIRE(d.ignored.size() == 4);
  CHECK(d.ignored[0].key == "torch.library_dir");
  CHECK(d.ignored[1].key == "cuda.devices[0].uuid");
  CHECK(d.ignored[2].key == "switches.threads");
  CHECK(d.ignored[3].key == "cpu.kernel");  // the baseline's own keys come last
  CHECK(d.ignored[3].current == "(absent)");

  json no_gpu = environment();
  no_gpu["cuda"]["devices"] = json::array();
  const auto gone = ra::diff_environments(environment(), no_gpu);
  bool name_gone = false;
  for (const auto& c : gone.changes)
    name_gone |= c.key == "cuda.devices[1].name" && c.current == "(absent)" && c.affects == "cuda:1";
  CHECK(name_gone);
}

TEST_CASE("key_affects, switch_affects, affects_device") {
  CHECK(ra::key_affects("torch.git_version") == "any");
  CHECK(ra::key_affects("tool.share_dir").empty());
  CHECK(ra::key_affects("cuda.driver") == "cuda");
  CHECK(ra::key_affects("cuda.cublas") == "cuda");
  CHECK(ra::key_affects("cuda.devices[3].name") == "cuda:3");
  CHECK(ra::key_affects("cuda.devices[3].index").empty());
  CHECK(ra::key_affects("cpu.model") == "cpu");
  CHECK(ra::key_affects("cpu.aten_capability") == "any");  // synthetic inputs are drawn on the CPU
  CHECK(ra::key_affects("threads.intra_op").empty());      // compared per configuration
  CHECK(ra::key_affects("env_vars.CUBLAS_WORKSPACE_CONFIG") == "cuda");
  CHECK(ra::key_affects("env_vars.SOMETHING_NEW") == "any");
  CHECK(ra::switch_affects("cudnn.benchmark") == "cuda");
  CHECK(ra::switch_affects("tf32.cublas") == "cuda");
  CHECK(ra::switch_affects("threads") == "cpu");
  CHECK(ra::switch_affects("mkl_cbwr") == "cpu");
  CHECK(ra::switch_affects("deterministic") == "any");
  CHECK(ra::affects_device("any", "cpu"));
  CHECK(ra::affects_device("cpu", "cpu"));
  CHECK_FALSE(ra::affects_device("cuda", "cpu"));
  CHECK_FALSE(ra::affects_device("cpu", "cuda:0"));
  CHECK(ra::affects_device("cuda", "cuda:1"));
  CHECK(ra::affects_device("cuda:0", "cuda"));
  CHECK_FALSE(ra::affects_device("cuda:1", "cuda"));
  CHECK(ra::affects_device("cuda:1", "cuda:1"));
}

TEST_CASE("apply_baseline: the same environment and digests match (exit 0)") {
  auto r = report();
  ra::apply_baseline(r, baseline_of(report()));
  REQUIRE(r.baseline.has_value());
  CHECK(r.baseline->source == "golden.json");
  CHECK(r.baseline->changes.empty());
  REQUIRE(r.baseline->results.size() == 2);
  for (const auto& res : r.baseline->results) {
    CHECK(res.status == BaselineStatus::Match);
    CHECK(res.tensors == 2);
    CHECK(res.differing == 0);
  }
  CHECK(r.exit_code == 0);
}

TEST_CASE("apply_baseline: a torch change explains a CPU target's difference (exit 0), listing the change") {
  auto r = report();
  r.environment["torch"]["version"] = "2.12.0";
  r.targets()[0].configs[0].reference[1].digest = hex('c');
  ra::apply_baseline(r, baseline_of(report()));
  const auto& res = result(r, "default");
  CHECK(res.status == BaselineStatus::Explained);
  CHECK(res.explained_by == std::vector<std::string>{"torch.version"});
  CHECK(res.reason ==
        "1 of 2 tensors differ; explained by changes that can affect cpu: torch.version 2.11.0 -> 2.12.0");
  REQUIRE(res.differing_tensors.size() == 1);
  CHECK(res.differing_tensors[0].name == "output");
  CHECK(res.differing_tensors[0].baseline->digest == hex('b'));
  CHECK(res.differing_tensors[0].current->digest == hex('c'));
  CHECK(result(r, "threads-1").status == BaselineStatus::Match);
  CHECK(r.exit_code == 0);
  const std::string text = ra::report::render_text(r);
  CHECK(text.find("m.pt / default: explained: 1 of 2 tensors differ") != std::string::npos);
  CHECK(text.find("save the baseline again (rerun the audit with --save-baseline golden.json)") != std::string::npos);
}

TEST_CASE("resave_advice: a report taken as the baseline (compare A.json B.json) is never to be saved over") {
  // compare has no --save-baseline, and saving a baseline over report A would lose it: the advice
  // for an explained difference names the newer report instead, in every format.
  auto r = report();
  r.environment["torch"]["version"] = "2.12.0";
  r.targets()[0].configs[0].reference[1].digest = hex('c');
  ra::apply_baseline(r, ra::Baseline{"previous.json", "repro-audit/report", report()});
  REQUIRE(result(r, "default").status == BaselineStatus::Explained);
  for (const std::string& out : {ra::report::render_text(r), ra::report::render_markdown(r),
                                 ra::report::render_junit(r), ra::report::render_html(r)}) {
    CHECK(out.find("--save-baseline") == std::string::npos);
    CHECK(out.find("compare with the newer report from now on, in place of ") != std::string::npos);
    CHECK(out.find("previous.json") != std::string::npos);
  }
}

TEST_CASE("apply_baseline: a cuDNN change does not explain a CPU target's difference (regression, exit 1)") {
  auto r = report();
  r.environment["cuda"]["cudnn"] = "9.20.0";
  r.targets()[0].configs[0].reference[1].digest = hex('c');
  ra::apply_baseline(r, baseline_of(report()));
  const auto& res = result(r, "default");
  CHECK(res.status == BaselineStatus::Regression);
  CHECK(res.explained_by.empty());
  CHECK(res.reason ==
        "1 of 2 tensors differ and nothing that can affect cpu changed (changed, but cannot affect cpu: cuda.cudnn "
        "9.19.0 -> 9.20.0)");
  REQUIRE(r.baseline->changes.size() == 1);
  CHECK(r.baseline->changes[0].affects == "cuda");
  CHECK(r.verdict == Verdict::Reproducible);
  CHECK(r.exit_code == 1);
  CHECK(ra::report::render_text(r).find("verdict: reproducible, 1 baseline regression (exit 1)") != std::string::npos);

  // The same cuDNN change explains a CUDA target's difference.
  auto gpu = report("cuda");
  gpu.environment["cuda"]["cudnn"] = "9.20.0";
  gpu.targets()[0].configs[0].reference[1].digest = hex('c');
  ra::apply_baseline(gpu, baseline_of(report("cuda")));
  CHECK(result(gpu, "default").status == BaselineStatus::Explained);
  CHECK(gpu.exit_code == 0);
}

TEST_CASE("apply_baseline: a GPU's SKU or SM count explains a difference on that device only") {
  const auto run = [](const std::string& device, const std::string& key, const json& value) {
    auto r = report(device);
    r.environment["cuda"]["devices"][1][key] = value;
    r.targets()[0].configs[0].reference[1].digest = hex('c');
    ra::apply_baseline(r, baseline_of(report(device)));
    return result(r, "default");
  };
  const auto sm = run("cuda:1", "sm_count", 114);
  CHECK(sm.status == BaselineStatus::Explained);
  CHECK(sm.explained_by == std::vector<std::string>{"cuda.devices[1].sm_count"});
  CHECK(run("cuda:1", "name", "NVIDIA H100 NVL").status == BaselineStatus::Explained);
  const auto other = run("cuda", "sm_count", 114);  // device 0 did not change
  CHECK(other.status == BaselineStatus::Regression);
  CHECK(other.reason ==
        "1 of 2 tensors differ and nothing that can affect cuda:0 changed (changed, but cannot affect cuda:0: "
        "cuda.devices[1].sm_count 132 -> 114)");
  CHECK(run("cpu", "name", "NVIDIA H100 NVL").status == BaselineStatus::Regression);
}

TEST_CASE("apply_baseline: a configuration's effective switch change explains only where it can act") {
  auto r = report();
  r.targets()[0].configs[0].switches[1].effective = "4";  // default: threads 2 -> 4 (more CPUs)
  r.targets()[0].configs[0].reference[1].digest = hex('c');
  r.targets()[0].configs[1].switches[0].effective = "on";  // threads-1: cudnn.benchmark, cannot act on cpu
  r.targets()[0].configs[1].reference[1].digest = hex('d');
  ra::apply_baseline(r, baseline_of(report()));
  const auto& def = result(r, "default");
  CHECK(def.status == BaselineStatus::Explained);
  CHECK(def.explained_by == std::vector<std::string>{"config.threads"});
  REQUIRE(def.switch_changes.size() == 1);
  CHECK(def.switch_changes[0].baseline == "2");
  CHECK(def.switch_changes[0].current == "4");
  CHECK(def.switch_changes[0].affects == "cpu");
  const auto& one = result(r, "threads-1");
  CHECK(one.status == BaselineStatus::Regression);
  REQUIRE(one.switch_changes.size() == 1);
  CHECK(one.switch_changes[0].key == "config.cudnn.benchmark");
  CHECK(r.exit_code == 1);
}

TEST_CASE("apply_baseline: ignored keys explain nothing") {
  auto r = report();
  r.environment["torch"]["library_dir"] = "/elsewhere";
  r.environment["tool"]["share_dir"] = "/elsewhere/share";
  r.environment["switches"]["threads"] = "8";
  r.targets()[0].configs[0].reference[1].digest = hex('c');
  ra::apply_baseline(r, baseline_of(report()));
  CHECK(r.baseline->changes.empty());
  CHECK(r.baseline->ignored.size() == 3);
  CHECK(result(r, "default").status == BaselineStatus::Regression);
  CHECK(result(r, "default").reason == "1 of 2 tensors differ and nothing that can affect cpu changed");
}

TEST_CASE("apply_baseline: a configuration that diverged on either side is nondeterministic (exit 1 unless allowed)") {
  auto base = report();
  base.targets()[0].configs[0] = config("default", Verdict::Diverged);
  auto r = report();
  r.environment["torch"]["version"] = "2.12.0";  // even with a change that could explain it
  r.targets()[0].configs[0].reference[1].digest = hex('c');
  ra::apply_baseline(r, baseline_of(base));
  const auto& res = result(r, "default");
  CHECK(res.status == BaselineStatus::Nondeterministic);
  CHECK(res.reason.find("diverged within the baseline") != std::string::npos);
  CHECK(r.exit_code == 1);

  // Diverged here, and accepted by an allowlist entry: does not fail.
  auto allowed = report();
  allowed.targets()[0].configs[0] = config("default", Verdict::Diverged, 'c');
  allowed.targets()[0].configs[0].allowed_by = ra::report::AllowedBy{0, "known", ""};
  ra::apply_baseline(allowed, baseline_of(report()));
  CHECK(result(allowed, "default").status == BaselineStatus::Nondeterministic);
  CHECK_FALSE(ra::report::baseline_failure(allowed, result(allowed, "default")));
  CHECK(allowed.exit_code == 0);

  // Digests that still match are a match, whatever the verdicts.
  auto same = report();
  same.targets()[0].configs[0] = config("default", Verdict::Diverged);
  ra::apply_baseline(same, baseline_of(report()));
  CHECK(result(same, "default").status == BaselineStatus::Match);
}

TEST_CASE("apply_baseline: configurations on one side only are missing or added; no reference is incomparable") {
  auto base = report();
  base.targets()[0].configs.push_back(config("mkl-cbwr", Verdict::Reproducible));
  base.targets()[0].configs.push_back(config("det", Verdict::Raised));
  auto r = report();
  r.targets()[0].configs.push_back(config("det", Verdict::Reproducible));
  r.targets()[0].configs.push_back(config("threads-N", Verdict::Reproducible));
  ra::report::finalize(r);
  ra::apply_baseline(r, baseline_of(base));
  const auto& results = r.baseline->results;
  REQUIRE(results.size() == 5);
  CHECK(results[0].config == "default");
  CHECK(results[2].config == "det");
  CHECK(results[2].status == BaselineStatus::Incomparable);
  CHECK(results[2].reason == "nothing to compare: no repeat completed in the baseline (raised)");
  CHECK(results[3].config == "threads-N");
  CHECK(results[3].status == BaselineStatus::Added);
  CHECK_FALSE(results[3].baseline_verdict.has_value());
  CHECK(results[4].config == "mkl-cbwr");
  CHECK(results[4].status == BaselineStatus::Missing);
  CHECK_FALSE(results[4].current_verdict.has_value());
  CHECK(r.exit_code == 0);
  CHECK(ra::report::baseline_counts(*r.baseline) == "1 incomparable, 1 missing, 1 added, 2 match");
}

TEST_CASE("apply_baseline: differing tensors are listed in execution order, the first 20, with a count") {
  auto base = report();
  auto r = report();
  auto& ref = r.targets()[0].configs[0].reference;
  auto& old = base.targets()[0].configs[0].reference;
  for (int i = 0; i < 30; ++i) {
    old.push_back({"step1/grad/p" + std::to_string(i), "float32", {4}, hex('e')});
    ref.push_back({"step1/grad/p" + std::to_string(i), "float32", {4}, hex('f')});
  }
  ref[0].shape = {8, 16};                              // param/w: shape differs
  ref.push_back({"extra", "float32", {1}, hex('a')});  // only here
  old.push_back({"gone", "float32", {1}, hex('a')});   // only in the baseline
  r.environment["torch"]["version"] = "2.12.0";
  ra::apply_baseline(r, baseline_of(base));
  const auto& res = result(r, "default");
  CHECK(res.tensors == 34);
  CHECK(res.differing == 33);
  REQUIRE(res.differing_tensors.size() == ra::report::kBaselineTensorsListed);
  CHECK(res.differing_tensors[0].name == "param/w");
  CHECK(ra::report::baseline_tensor_text(res.differing_tensors[0]) == "param/w: float32[16x8] -> float32[8x16]");
  CHECK(res.differing_tensors[1].name == "step1/grad/p0");
  CHECK(ra::report::render_text(r).find("... and 28 more tensors") != std::string::npos);
}

TEST_CASE("check_baseline_targets: another model, device, mode, seed or inputs is an input error naming it") {
  const auto base = baseline_of(report());
  CHECK(check_error(base, report().body).empty());

  auto renamed = report().body;
  first(renamed).name = "renamed.pt";  // same bytes under another name: the same model
  CHECK(check_error(base, renamed).empty());

  auto other = report().body;
  first(other).name = "b.pt";
  first(other).model_digest = hex('9');
  CHECK(check_error(base, other) ==
        "baseline golden.json was made from model m.pt (digest 111111111111...), not b.pt (digest 999999999999...)");
  first(other).name = "m.pt";
  CHECK(check_error(base, other) ==
        "baseline golden.json was made from another version of model m.pt (digest 111111111111...; this one's is "
        "999999999999...)");

  auto t = report().body;
  first(t).device = "cuda";
  CHECK(check_error(base, t) == "baseline golden.json was made for m.pt on cpu, not on cuda");
  t = report().body;
  first(t).mode = "train";
  CHECK(check_error(base, t) == "baseline golden.json was made for m.pt in infer mode, not train mode");
  t = report().body;
  first(t).seed = 7;
  CHECK(check_error(base, t) == "baseline golden.json was made for m.pt with seed 0, not 7");
  t = report().body;
  first(t).inputs = {"float32[8x16]"};
  CHECK(check_error(base, t) == "baseline golden.json was made for m.pt with inputs float32[4x16], not float32[8x16]");
  t = report().body;
  first(t).input_digest = hex('7');
  CHECK(check_error(base, t) == "baseline golden.json was made for m.pt with synthetic inputs, not an input file");

  // A baseline from a report written before targets carried digests: the rest is still checked.
  auto old = report();
  first(old.body).model_digest.clear();
  t = report().body;
  first(t).input_digest = hex('7');
  first(t).model_digest = hex('9');
  CHECK(check_error(baseline_of(old), t).empty());
  first(t).seed = 3;
  CHECK(check_error(baseline_of(old), t) == "baseline golden.json was made for m.pt with seed 0, not 3");

  auto model = report().body;
  const ra::report::Body probe = ra::report::ProbesBody{{{first(model), {}}}, std::nullopt};
  CHECK(check_error(base, probe) ==
        "baseline golden.json has no target of this run: it holds model m.pt, this run has probe m.pt");
  CHECK(check_error(base, report().body, {"det", "strict"}) ==
        "baseline golden.json has no configuration of this run: it holds default, threads-1, this run has det, strict");
}

TEST_CASE("parse_baseline: a baseline file or a report; anything else is an input error naming the file") {
  auto r = report();
  r.targets()[0].configs[0].allowed_by = ra::report::AllowedBy{0, "known", ""};
  const auto from_baseline = ra::parse_baseline(ra::report::render_baseline(r), "g.json");
  CHECK(from_baseline.schema == "repro-audit/baseline");
  // Path-free: the installation's folders are left out of the fingerprint, nothing else.
  auto expected = r.environment;
  expected["tool"].erase("share_dir");
  expected["torch"].erase("library_dir");
  CHECK(from_baseline.results.environment == expected);
  CHECK(r.environment["tool"].contains("share_dir"));
  REQUIRE(from_baseline.results.targets().size() == 1);
  const auto& t = from_baseline.results.targets()[0];
  CHECK(t.model_digest == hex('1'));
  CHECK(t.inputs == r.targets()[0].inputs);
  REQUIRE(t.configs.size() == 2);
  CHECK(t.configs[1].reference.size() == 2);
  CHECK(t.configs[1].switches[1].effective == "1");
  // What a baseline keeps writes back to the same bytes.
  CHECK(ra::report::render_baseline(from_baseline.results) == ra::report::render_baseline(r));

  const auto from_report = ra::parse_baseline(ra::report::render_json(r), "r.json");
  CHECK(from_report.schema == "repro-audit/report");
  CHECK(from_report.results.targets()[0].configs[0].reference == r.targets()[0].configs[0].reference);

  const auto error = [](const std::string& text) {
    try {
      ra::parse_baseline(text, "g.json");
    } catch (const ra::InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error("{\"schema\": ").rfind("baseline g.json is not valid JSON: ", 0) == 0);
  CHECK(error(R"({"schema": "repro-audit/lint", "schema_version": 1})") ==
        "baseline g.json: not a repro-audit baseline or report (its schema is 'repro-audit/lint')");
  CHECK(error(R"({"schema": "repro-audit/baseline", "schema_version": 2})") ==
        "baseline g.json: baseline schema version 2 is not supported by this repro-audit (it reads version 1)");
  CHECK(error("[]") == "baseline g.json: not a repro-audit baseline or report (no \"schema\")");
  json bad = json::parse(ra::report::render_baseline(r));
  bad["targets"][0]["configs"][0].erase("reference_digests");
  CHECK(error(bad.dump()) == "baseline g.json: targets[0].configs[0].reference_digests: missing");
}

namespace {

// The report's model with an identity by content.
ra::report::Report with_identity(char bytes, char weights, char graph) {
  auto r = report();
  r.targets()[0].model_digest = hex(bytes);
  r.targets()[0].weights_digest = hex(weights);
  r.targets()[0].graph_digest = hex(graph);
  return r;
}

}  // namespace

TEST_CASE("identity: a re-saved model (other bytes, same graph and weights) compares as the same model") {
  auto r = with_identity('2', 'w', 'g');
  CHECK(check_error(baseline_of(with_identity('1', 'w', 'g')), r.body).empty());
  ra::apply_baseline(r, baseline_of(with_identity('1', 'w', 'g')));
  for (const auto& res : r.baseline->results) CHECK(res.status == BaselineStatus::Match);
  REQUIRE(r.baseline->models.size() == 1);
  CHECK(r.baseline->models[0].relation == "resaved");
  CHECK(r.baseline->models[0].reason ==
        "model m.pt was saved or exported again: its file's bytes differ (digest 222222222222...; the baseline's is "
        "111111111111...), "
        "its graph and weights do not");
  CHECK(r.exit_code == 0);
  // The same bytes say nothing.
  auto same = with_identity('1', 'w', 'g');
  ra::apply_baseline(same, baseline_of(with_identity('1', 'w', 'g')));
  CHECK(same.baseline->models.empty());
}

TEST_CASE("identity: same graph, other weights is compared, said, and explains the differences (exit 0)") {
  auto r = with_identity('2', 'v', 'g');
  r.targets()[0].configs[0].reference[0].digest = hex('d');  // param/w
  r.targets()[0].configs[1].reference[0].digest = hex('d');
  ra::apply_baseline(r, baseline_of(with_identity('1', 'w', 'g')));
  REQUIRE(r.baseline->models.size() == 1);
  CHECK(r.baseline->models[0].relation == "other_weights");
  CHECK(r.baseline->models[0].reason.find("model m.pt: same graph, other weights (weights vvvvvvvvvvvv...; the "
                                          "baseline's are wwwwwwwwwwww...)") == 0);
  const auto& res = result(r, "default");
  CHECK(res.status == BaselineStatus::Explained);
  CHECK(res.explained_by == std::vector<std::string>{"model.weights"});
  CHECK(r.baseline->changes.empty());  // the environment did not change: the model did
  CHECK(r.exit_code == 0);
  const std::string text = ra::report::render_text(r);
  CHECK(text.find("model: model m.pt: same graph, other weights") != std::string::npos);
  CHECK(text.find("changed with the model's weights since the baseline") != std::string::npos);
  CHECK(text.find("the results changed together with the model's weights") != std::string::npos);
  // Written and read back.
  const auto back = ra::parse_baseline(ra::report::render_json(r), "r.json", "report");
  CHECK(back.results.targets()[0].weights_digest == hex('v'));
  CHECK(back.results.targets()[0].graph_digest == hex('g'));
  REQUIRE(back.results.baseline.has_value());
  REQUIRE(back.results.baseline->models.size() == 1);
  CHECK(back.results.baseline->models[0].relation == "other_weights");
}

TEST_CASE("identity: another graph is another model; an older baseline matches by bytes and says how to upgrade") {
  CHECK(check_error(baseline_of(with_identity('1', 'w', 'g')), with_identity('2', 'w', 'h').body) ==
        "baseline golden.json was made from another version of model m.pt, which computes another graph (graph "
        "gggggggggggg...; this one's is hhhhhhhhhhhh...)");
  // Written before identities by content: the bytes decide, and the message says what to do.
  auto old = report();
  CHECK(check_error(baseline_of(old), with_identity('1', 'w', 'g').body).empty());
  CHECK(check_error(baseline_of(old), with_identity('2', 'w', 'g').body) ==
        "baseline golden.json was made from another version of model m.pt (digest 111111111111...; this one's is "
        "222222222222...): this baseline predates identities by content, so it matches by the file's bytes; save it "
        "again to match a re-saved model by its graph and weights");
  // A baseline file keeps the identity, and reads back.
  const auto file = ra::parse_baseline(ra::report::render_baseline(with_identity('1', 'w', 'g')), "g.json");
  CHECK(file.results.targets()[0].weights_digest == hex('w'));
  CHECK(file.results.targets()[0].graph_digest == hex('g'));
}

TEST_CASE("identity: canonical forms") {
  CHECK(ra::normalise_torchscript(
            "%self : __torch__.___torch_mangle_12.Net, %x : __torch__.___torch_mangle_3.sub.Block") ==
        "%self : __torch__.Net, %x : __torch__.sub.Block");
  CHECK(ra::normalise_torchscript("___torch_mangle_ alone, ___torch_mangle_7x, end ___torch_mangle_9") ==
        "___torch_mangle_ alone, ___torch_mangle_7x, end ___torch_mangle_9");
  const std::string a = R"({"graph_module": {"graph": {"nodes": [{"target": "torch.ops.aten.add.Tensor",
      "metadata": {"stack_trace": "File \"/home/a/m.py\", line 3", "nn_module_stack": "L__self__,,m.Net"}}]}},
      "torch_version": "2.11.0"})";
  const std::string b = R"({"torch_version": "2.11.1", "graph_module": {"graph": {"nodes": [{"metadata":
      {"nn_module_stack": "L__self__,,m.Net", "stack_trace": "File \"/other/place/m.py\", line 9"},
      "target": "torch.ops.aten.add.Tensor"}]}}})";
  CHECK(ra::canonical_export_graph(nlohmann::json::parse(a)) == ra::canonical_export_graph(nlohmann::json::parse(b)));
  std::string c = b;
  c.replace(c.find("add.Tensor"), 10, "mul.Tensor");
  CHECK(ra::canonical_export_graph(nlohmann::json::parse(a)) != ra::canonical_export_graph(nlohmann::json::parse(c)));
  // Compiled C++: comments and blank lines out, code kept.
  const std::string cpp =
      "// Triton kernels are embedded as comments in /tmp/torchinductor_a/x.cpp\n"
      "extern \"C\" void k(float* out) {\n  auto t = static_cast<float>(0.5);\n}\n";
  CHECK(ra::canonical_compiled_source(cpp) ==
        ra::canonical_compiled_source(cpp + "\n   // Compile cmd\n// g++ /tmp/torchinductor_b/x.cpp\n\n"));
  CHECK(ra::canonical_compiled_source(cpp) !=
        ra::canonical_compiled_source("extern \"C\" void k(float* out) {\n  auto t = static_cast<float>(0.25);\n}\n"));
  CHECK(ra::canonical_compiled_source(cpp).find("torchinductor") == std::string::npos);
  // Weights: by name, whatever order they came in; a bit, a shape or a name changes them.
  const std::vector<ra::WeightLine> w = {{"param/b", "float32", {2}, hex('1')},
                                         {"param/a", "float32", {2, 3}, hex('2')}};
  const std::vector<ra::WeightLine> reversed = {w[1], w[0]};
  CHECK(ra::weights_digest(w) == ra::weights_digest(reversed));
  auto changed = w;
  changed[0].digest = hex('3');
  CHECK(ra::weights_digest(w) != ra::weights_digest(changed));
  changed = w;
  changed[1].shape = {3, 2};
  CHECK(ra::weights_digest(w) != ra::weights_digest(changed));
  changed = w;
  changed[0].name = "param/c";
  CHECK(ra::weights_digest(w) != ra::weights_digest(changed));
}

TEST_CASE(
    "apply_baseline: across a torch upgrade the comparison names the stack on both sides and what changed "
    "behaviour") {
  // Issue 40: compare of a 2.11 report with a 2.15 one re-rendered the second; it now says what was
  // upgraded (torch, CUDA, cuDNN, cuBLAS, NCCL, changed or not) and which configurations changed
  // determinism behaviour.
  auto before = report();
  before.environment["cuda"]["wheels"] = {{"nvidia-cublas", "13.1.0.3"}, {"nvidia-nccl-cu13", "2.28.9"}};
  before.targets()[0].configs.push_back(config("det", Verdict::Reproducible));
  before.targets()[0].configs.push_back(config("deterministic", Verdict::Diverged));
  repeats(before.targets()[0].configs.back(), 20, 12, 0.41, 0.81);  // a race seen in 12 of 19 comparisons
  ra::report::finalize(before);
  auto now = report();
  now.environment["torch"]["version"] = "2.15.0";
  now.environment["cuda"]["wheels"] = {{"nvidia-cublas", "13.2.1.1"}, {"nvidia-nccl-cu13", "2.28.9"}};
  now.targets()[0].configs[1].verdict = Verdict::Diverged;                             // threads-1: newly divergent
  now.targets()[0].configs.push_back(config("det", Verdict::Raised));                  // newly raising
  now.targets()[0].configs.push_back(config("deterministic", Verdict::Reproducible));  // newly fixed
  repeats(now.targets()[0].configs.back(), 20, 0, 0, 0.17);    // none in 19: a rate above 17% would have shown
  now.targets()[0].configs[0].reference[1].digest = hex('c');  // default: changed bits, explained
  ra::report::finalize(now);
  ra::apply_baseline(now, baseline_of(before));
  const auto& stack = now.baseline->stack;
  REQUIRE(stack.size() == 5);
  CHECK(stack[0].name == "torch");
  CHECK(stack[0].baseline == "2.11.0");
  CHECK(stack[0].current == "2.15.0");
  CHECK(stack[3].name == "cuBLAS");
  CHECK(stack[3].baseline == "13.1.0.3");  // the wheel's patch level, not cuBLASLt's 13.1.0
  CHECK(stack[3].current == "13.2.1.1");
  CHECK_FALSE(stack[4].changed());  // NCCL
  CHECK(result(now, "default").status == BaselineStatus::Explained);
  const auto changes = ra::report::behaviour_changes(*now.baseline);
  CHECK(changes.newly_divergent == std::vector<std::string>{"m.pt / threads-1"});
  CHECK(changes.newly_raising == std::vector<std::string>{"m.pt / det"});
  CHECK(changes.newly_fixed == std::vector<std::string>{"m.pt / deterministic"});
  CHECK(changes.kept_bits == 2);     // threads-1 and deterministic: other verdicts, the same bits
  CHECK(changes.changed_bits == 1);  // default
  const std::string text = ra::report::render_text(now);
  CHECK(text.find("upgrade: torch 2.11.0 -> 2.15.0, CUDA 13.0, cuDNN 9.19.0, cuBLAS 13.1.0.3 -> 13.2.1.1, "
                  "NCCL 2.28.9\n") != std::string::npos);
  CHECK(text.find("  newly divergent (1): m.pt / threads-1\n") != std::string::npos);
  CHECK(text.find("  newly raising (1): m.pt / det\n") != std::string::npos);
  CHECK(text.find("  newly fixed (1): m.pt / deterministic (no divergence in 19 comparisons (20 runs); a divergence "
                  "rate above 17% would have shown (95% confidence); before, 12 of 19 comparisons diverged)\n") !=
        std::string::npos);
  CHECK(text.find("determinism behaviour unchanged") == std::string::npos);
  // The stack travels in the JSON and back.
  const auto back = ra::report::report_from_json(ra::report::to_json(now));
  REQUIRE(back.baseline);
  REQUIRE(back.baseline->stack.size() == 5);
  CHECK(back.baseline->stack[3].current == "13.2.1.1");
}

TEST_CASE("behaviour_changes: a race the current repeats cannot exclude is not called fixed") {
  // Issue 54: compare of two probe reports said "newly fixed (4)" for races that did not show in the
  // new release's 3 repeats; 2 comparisons bound a rate only below 66%, and the races ran at 50%.
  auto before = report();
  before.targets()[0].configs[1].verdict = Verdict::Diverged;  // threads-1: 1 of 2 comparisons diverged
  repeats(before.targets()[0].configs[1], 3, 1, 0.09, 0.91);
  ra::report::finalize(before);
  auto now = report();
  now.environment["torch"]["version"] = "2.15.0";
  repeats(now.targets()[0].configs[1], 3, 0, 0, 0.66);
  ra::report::finalize(now);
  ra::apply_baseline(now, baseline_of(before));
  const auto changes = ra::report::behaviour_changes(*now.baseline);
  CHECK(changes.newly_fixed.empty());
  CHECK(changes.not_seen == std::vector<std::string>{"m.pt / threads-1"});
  const std::string line =
      "no divergence seen, too few repeats to call it fixed (1): m.pt / threads-1 (no divergence in 2 comparisons "
      "(3 runs); a divergence rate above 66% would have shown (95% confidence); before, 1 of 2 comparisons diverged)";
  for (const std::string& out :
       {ra::report::render_text(now), ra::report::render_markdown(now), ra::report::render_html(now)}) {
    CHECK(out.find(line) != std::string::npos);
    CHECK(out.find("newly fixed (") == std::string::npos);
  }
  // The repeats travel in the JSON and back, so a re-rendered report says the same.
  const auto back = ra::report::report_from_json(ra::report::to_json(now));
  CHECK(ra::report::render_text(back) == ra::report::render_text(now));
}

TEST_CASE("upgrade_label: the direction of every changed version, compared as numbers") {
  auto before = report();
  before.environment["torch"]["version"] = "2.15.0";
  ra::report::finalize(before);
  auto now = report();  // torch 2.11.0
  ra::report::finalize(now);
  ra::apply_baseline(now, baseline_of(before));
  CHECK(ra::report::upgrade_label(*now.baseline) == "downgrade");  // 2.15 -> 2.11: 15 > 11, not "1" < "5"
  CHECK(ra::report::render_text(now).find("  downgrade: torch 2.15.0 -> 2.11.0") != std::string::npos);
  CHECK(ra::report::render_text(now).find("upgrade:") == std::string::npos);
  CHECK(ra::report::render_markdown(now).find("**Downgrade:** torch 2.15.0 -\\> 2.11.0") != std::string::npos);
  CHECK(ra::report::render_html(now).find("<strong>Downgrade:</strong> torch 2.15.0 -&gt; 2.11.0") !=
        std::string::npos);
  ra::report::BaselineComparison b;
  b.stack = {{"torch", "2.9.1", "2.11.0"}, {"CUDA", "13.0", "13.0"}};
  CHECK(ra::report::upgrade_label(b) == "upgrade");
  b.stack[1].current = "12.8";  // one up, one down
  CHECK(ra::report::upgrade_label(b) == "version change");
  b.stack = {{"torch", "2.11.0+cpu", "2.11.0+cu130"}};  // the same release, another build
  CHECK(ra::report::upgrade_label(b) == "version change");
  b.stack = {{"NCCL", "(absent)", "2.28.9"}};
  CHECK(ra::report::upgrade_label(b) == "version change");
}

TEST_CASE("apply_baseline: an upgrade that changed no verdict says so, in text, Markdown and HTML") {
  auto before = report();
  ra::report::finalize(before);
  auto now = report();
  now.environment["torch"]["version"] = "2.15.0";
  ra::report::finalize(now);
  ra::apply_baseline(now, baseline_of(before));
  REQUIRE(ra::report::behaviour_changes(*now.baseline).empty());
  const std::string line =
      "determinism behaviour unchanged: nothing newly divergent, newly fixed, newly raising or no longer raising";
  CHECK(ra::report::render_text(now).find(line) != std::string::npos);
  CHECK(ra::report::render_markdown(now).find(line) != std::string::npos);
  const std::string html = ra::report::render_html(now);
  CHECK(html.find("<li>" + line + "</li>") != std::string::npos);
  CHECK(html.find("<strong>Upgrade:</strong> torch 2.11.0 -&gt; 2.15.0") != std::string::npos);
}

TEST_CASE("apply_baseline: the same stack on both sides prints no upgrade line") {
  auto r = report();
  ra::apply_baseline(r, baseline_of(report()));
  REQUIRE(r.baseline->stack.size() == 5);
  CHECK(ra::report::upgrade_text(*r.baseline).empty());
  CHECK(ra::report::render_text(r).find("upgrade:") == std::string::npos);
  CHECK(r.baseline->stack[4].baseline == "(absent)");  // no NCCL wheel named
}

TEST_CASE("apply_baseline: where both sides kept reference tensors, a changed tensor gets its distance") {
  auto r = report();
  r.environment["torch"]["version"] = "2.12.0";
  r.targets()[0].configs[0].reference[1].digest = hex('c');  // output: new bits
  r.targets()[0].configs[0].reference[0].shape = {8, 16};    // param/w: reshaped, no distance
  r.targets()[0].configs[0].reference_tensors = "/now/c0.pt";
  auto kept = report();
  kept.targets()[0].configs[0].reference_tensors = "/then/t0-c0.pt";
  std::vector<std::string> asked;
  const ra::DiffFn diff = [&](const std::string& a, const std::string& b, const std::vector<std::string>& names) {
    asked.push_back(a + " " + b);
    std::map<std::string, ra::report::DivergenceStats> out;
    for (const auto& n : names) {
      ra::report::DivergenceStats s;
      s.numel = 32, s.differing = 3, s.first_index = 0, s.first_index_nd = {0, 0};
      s.max_abs_diff = 2.5e-7, s.max_rel_diff = 1e-7, s.max_ulp = 4;
      out[n] = s;
    }
    return out;
  };
  ra::apply_baseline(r, baseline_of(kept), diff);
  CHECK(asked == std::vector<std::string>{"/then/t0-c0.pt /now/c0.pt"});  // only default changed
  const auto& res = result(r, "default");
  REQUIRE(res.differing_tensors.size() == 2);
  CHECK(res.differing_tensors[0].name == "param/w");
  CHECK_FALSE(res.differing_tensors[0].stats);
  REQUIRE(res.differing_tensors[1].stats);
  CHECK(res.differing_tensors[1].stats->max_ulp == 4);
  const std::string text = ra::report::render_text(r);
  CHECK(text.find("output float32[4x8]: bbbbbbbbbbbb -> cccccccccccc; 3/32 elements differ, first at [0,0], max abs "
                  "2.5e-07, max rel 1e-07, max 4 ULP") != std::string::npos);
  CHECK(ra::report::render_markdown(r).find("`output` (3/32 elements differ") != std::string::npos);
  // The distances travel in the JSON report and read back.
  const auto back = ra::report::report_from_json(json::parse(ra::report::render_json(r)));
  CHECK(result(back, "default").differing_tensors[1].stats->max_abs_diff == 2.5e-7);
  CHECK_FALSE(result(back, "default").differing_tensors[0].stats);

  // Without kept tensors on one side, no distance is asked for.
  asked.clear();
  auto plain = r;
  ra::apply_baseline(plain, baseline_of(report()), diff);
  CHECK(asked.empty());
  CHECK_FALSE(result(plain, "default").differing_tensors[1].stats);
}

TEST_CASE("baseline file: kept tensors are named in a folder beside it, as plain names only") {
  auto r = report();
  r.targets()[0].configs[0].reference_tensors = "t0-c0.pt";
  const json j = ra::report::baseline_to_json(r, "g.json.tensors");
  CHECK(j["tensors"] == "g.json.tensors");
  CHECK(j["targets"][0]["configs"][0]["reference_tensors"] == "t0-c0.pt");
  CHECK_FALSE(j["targets"][0]["configs"][1].contains("reference_tensors"));
  const auto back = ra::report::baseline_from_json(j);
  CHECK(back.targets()[0].configs[0].reference_tensors == "g.json.tensors/t0-c0.pt");
  CHECK(back.targets()[0].configs[1].reference_tensors.empty());
  // Without a folder, nothing of it is written: a baseline without kept tensors stays as it was.
  const json plain = ra::report::baseline_to_json(r);
  CHECK_FALSE(plain.contains("tensors"));
  CHECK_FALSE(plain["targets"][0]["configs"][0].contains("reference_tensors"));
  for (const std::string bad : {"../x.pt", "/etc/passwd", "..", ""}) {
    json evil = j;
    evil["targets"][0]["configs"][0]["reference_tensors"] = bad;
    CHECK_THROWS_WITH_AS(ra::report::baseline_from_json(evil), doctest::Contains("is not a plain file name"),
                         ra::report::ReportError);
  }
  json folder = j;
  folder["tensors"] = "../elsewhere";
  CHECK_THROWS_AS(ra::report::baseline_from_json(folder), ra::report::ReportError);
  json orphan = j;
  orphan.erase("tensors");
  CHECK_THROWS_WITH_AS(ra::report::baseline_from_json(orphan), doctest::Contains("names no \"tensors\" folder"),
                       ra::report::ReportError);
}

namespace {

// A referee error of `ulp` in float32's ULP (the other figures scaled alike).
ra::report::ReferenceError error(const std::string& name, double ulp) {
  ra::report::ReferenceError e;
  e.name = name;
  e.dtype = "float32";
  e.numel = 32;
  e.max_ulp = ulp;
  e.max_abs = ulp * 1e-7;
  e.max_rel = ulp * 6e-8;
  return e;
}

// `r` as audited with the float64 referee: each configuration's reference repeat `output_ulp` from
// float64 in its output and 1 ULP in param/w.
ra::report::Report refereed(ra::report::Report r, double output_ulp) {
  for (auto& t : r.targets()) {
    t.referee = ra::report::Referee{"cpu", "cpu", true, ""};
    for (auto& c : t.configs)
      c.referee = ra::report::ConfigReferee{{error("param/w", 1), error("output", output_ulp)}, {}};
  }
  return r;
}

// The current side of an upgrade: torch 2.15.0, the default configuration's output with new bits.
ra::report::Report upgraded(double output_ulp) {
  auto r = refereed(report(), output_ulp);
  r.environment["torch"]["version"] = "2.15.0";
  r.targets()[0].configs[0].reference[1].digest = hex('c');
  return r;
}

}  // namespace

TEST_CASE("baseline file: the referee's line and each configuration's errors, compact; older files read as before") {
  auto r = refereed(report(), 3);
  r.targets()[0].configs[0].referee->errors[1].nan_result = 2;
  r.targets()[0].configs[0].referee->errors[1].note = "";
  const json j = ra::report::baseline_to_json(r);
  const json& target = j["targets"][0];
  CHECK(target["referee"] == json::parse(R"({"mode": "cpu", "device": "cpu", "ran": true, "note": ""})"));
  const json& e = target["configs"][0]["referee"]["errors"];
  REQUIRE(e.size() == 2);
  // Name, dtype and the figures; counts only where not zero.
  CHECK(e[0] == json::parse(R"({"name": "param/w", "dtype": "float32", "max_ulp": 1.0, "max_abs": 1e-7,
                                "max_rel": 6e-8})"));
  CHECK(e[1]["nan_result"] == 2);
  CHECK_FALSE(e[1].contains("numel"));
  const auto back = ra::report::baseline_from_json(j);
  REQUIRE(back.targets()[0].referee);
  CHECK(back.targets()[0].referee->ran);
  REQUIRE(back.targets()[0].configs[0].referee);
  const auto& errors = back.targets()[0].configs[0].referee->errors;
  REQUIRE(errors.size() == 2);
  CHECK(errors[1].name == "output");
  CHECK(errors[1].max_ulp == 3);
  CHECK(errors[1].max_abs == doctest::Approx(3e-7));
  CHECK(errors[1].nan_result == 2);
  CHECK(errors[0].nan_result == 0);
  // A run without the referee writes none of it, and such a file reads back without.
  const json plain = ra::report::baseline_to_json(report());
  CHECK_FALSE(plain["targets"][0].contains("referee"));
  CHECK_FALSE(plain["targets"][0]["configs"][0].contains("referee"));
  CHECK_FALSE(ra::report::baseline_from_json(plain).targets()[0].referee);
  CHECK_FALSE(ra::report::baseline_from_json(plain).targets()[0].configs[0].referee);
}

TEST_CASE("apply_baseline: a changed tensor within one order of float64 on both sides is reordering") {
  auto now = upgraded(5);
  // The model's own state is what it was given, not what it computed: not counted.
  now.targets()[0].configs[0].reference[0].digest = hex('f');
  ra::apply_baseline(now, baseline_of(refereed(report(), 3)));
  const auto& res = result(now, "default");
  REQUIRE(res.direction);
  CHECK(res.direction->note.empty());
  CHECK(res.direction->reordering == 1);
  CHECK(res.direction->baseline_max_ulp == 3);
  CHECK(res.direction->current_max_ulp == 5);
  REQUIRE(res.differing_tensors.size() == 2);
  CHECK_FALSE(res.differing_tensors[0].referee);  // param/w
  const auto& cls = res.differing_tensors[1].referee;
  REQUIRE(cls);
  CHECK(cls->cls == ra::report::DifferenceClass::Reordering);
  CHECK(cls->a_run == "torch 2.11.0");
  CHECK(cls->b_run == "torch 2.15.0");
  CHECK(cls->a->max_ulp == 3);
  CHECK(cls->b->max_ulp == 5);
  CHECK_FALSE(result(now, "threads-1").direction);  // its bits did not change
  const std::string line =
      "direction vs float64: torch 2.15.0 changed 1 tensor, within 5 ULP of float64 under both releases: reordering; "
      "neither is more right";
  CHECK(ra::report::direction_summary(*now.baseline) == line);
  const std::string text = ra::report::render_text(now);
  CHECK(text.find("  " + line + "\n") != std::string::npos);
  CHECK(text.find("output float32[4x8]: bbbbbbbbbbbb -> cccccccccccc; vs float64 3 -> 5 ULP (reordering)") !=
        std::string::npos);
  CHECK(ra::report::render_markdown(now).find(line) != std::string::npos);
  CHECK(ra::report::render_html(now).find("<p class=\"direction\">" + line + "</p>") != std::string::npos);
}

TEST_CASE("apply_baseline: a tensor much further from float64 under the new release is beyond reordering") {
  auto now = upgraded(400);
  ra::apply_baseline(now, baseline_of(refereed(report(), 3)));
  const auto& res = result(now, "default");
  REQUIRE(res.direction);
  CHECK(res.direction->further.count == 1);
  CHECK(res.direction->further.tensor == "output");
  CHECK(res.direction->further.baseline_ulp == 3);
  CHECK(res.direction->further.current_ulp == 400);
  CHECK(res.direction->closer.count == 0);
  CHECK(res.differing_tensors[0].referee->cls == ra::report::DifferenceClass::BeyondReordering);
  CHECK(res.differing_tensors[0].name == "output");
  const std::string line =
      "direction vs float64: torch 2.15.0 changed 1 tensor: 1 tensor 133x further from float64 under torch 2.15.0 "
      "(output: 400 ULP where torch 2.11.0 had 3): beyond reordering; investigate as a bug";
  CHECK(ra::report::render_text(now).find(line) != std::string::npos);
  // The JUnit case carries it, and the JSON report reads back with the direction and each tensor's class.
  CHECK(ra::report::render_junit(now).find(line) != std::string::npos);
  const auto back = ra::report::report_from_json(json::parse(ra::report::render_json(now)));
  REQUIRE(result(back, "default").direction);
  CHECK(result(back, "default").direction->further.current_ulp == 400);
  REQUIRE(result(back, "default").differing_tensors[0].referee);
  CHECK(result(back, "default").differing_tensors[0].referee->b->max_ulp == 400);
  CHECK(ra::report::direction_summary(*back.baseline) == ra::report::direction_summary(*now.baseline));

  // The other way: the new release is the closer one.
  auto better = upgraded(3);
  ra::apply_baseline(better, baseline_of(refereed(report(), 400)));
  REQUIRE(result(better, "default").direction);
  CHECK(result(better, "default").direction->closer.count == 1);
  INFO(ra::report::direction_summary(*better.baseline));
  CHECK(ra::report::direction_summary(*better.baseline)
            .find("1 tensor 133x closer to float64 under torch 2.15.0 (output: 3 ULP where torch 2.11.0 had 400): "
                  "beyond reordering") != std::string::npos);
}

TEST_CASE("apply_baseline: without errors on a side, one line says so and no class is claimed") {
  auto now = upgraded(400);
  ra::apply_baseline(now, baseline_of(report()));  // a baseline saved before the referee
  const auto& res = result(now, "default");
  REQUIRE(res.direction);
  CHECK(res.direction->classed() == 0);
  CHECK_FALSE(res.differing_tensors[0].referee);
  CHECK(ra::report::direction_summary(*now.baseline) ==
        "direction vs float64: not known: no errors against float64 for torch 2.11.0 (saved before the referee, or "
        "with --referee off)");

  auto off = report();  // --referee off now
  off.targets()[0].configs[0].reference[1].digest = hex('c');
  ra::apply_baseline(off, baseline_of(refereed(report(), 3)));
  CHECK(ra::report::direction_summary(*off.baseline) ==
        "direction vs float64: not known: no errors against float64 for the current results (run with --referee "
        "off)");

  auto raised = upgraded(3);
  raised.targets()[0].referee = ra::report::Referee{"cpu", "cpu", false, "its float64 run raised: boom"};
  ra::apply_baseline(raised, baseline_of(refereed(report(), 3)));
  CHECK(ra::report::direction_summary(*raised.baseline) ==
        "direction vs float64: not known: the float64 referee did not run for torch 2.15.0 (its float64 run raised: "
        "boom)");
}

TEST_CASE("apply_baseline: a reshaped or one-sided tensor is unclassified, and every changed tensor is counted") {
  const auto with_hidden = [](ra::report::Report r, std::vector<int64_t> shape) {
    r.targets()[0].configs[0].reference.push_back({"hidden", "float32", shape, hex('f')});
    r.targets()[0].configs[0].referee->errors.push_back(error("hidden", 2));
    return r;
  };
  auto now = with_hidden(upgraded(3), {8, 2});  // reshaped
  ra::apply_baseline(now, baseline_of(with_hidden(refereed(report(), 3), {4, 4})));
  const auto& d = *result(now, "default").direction;
  CHECK(d.reordering == 1);
  CHECK(d.unclassified == 1);
  CHECK(d.unclassified_why == "hidden: its dtype or shape changed");
  CHECK(ra::report::direction_summary(*now.baseline) ==
        "direction vs float64: torch 2.15.0 changed 2 tensors: 1 within 3 ULP of float64 under both releases: "
        "reordering; 1 unclassified (hidden: its dtype or shape changed)");

  // More changed tensors than a result lists: the direction counts them all.
  auto many = report();
  auto& ref = many.targets()[0].configs[0].reference;
  for (size_t i = 0; i < ra::report::kBaselineTensorsListed + 5; ++i)
    ref.push_back({"t" + std::to_string(i), "float32", {2}, hex('d')});
  auto base = refereed(many, 3);
  auto cur = refereed(many, 3);
  for (auto& t : cur.targets()[0].configs[0].reference) t.digest = hex('e');
  std::vector<ra::report::ReferenceError> errors;
  for (const auto& t : ref) errors.push_back(error(t.name, 2));
  base.targets()[0].configs[0].referee->errors = errors;
  cur.targets()[0].configs[0].referee->errors = errors;
  ra::apply_baseline(cur, baseline_of(base));
  const auto& res = result(cur, "default");
  CHECK(res.differing_tensors.size() == ra::report::kBaselineTensorsListed);
  CHECK(res.direction->reordering == int(ref.size()) - 1);  // all but param/w
  // Without a torch change, the sides are the baseline and the current results.
  CHECK(ra::report::direction_summary(*cur.baseline) ==
        "direction vs float64: the current results changed 26 tensors, all within 2 ULP of float64 on both sides: "
        "reordering; neither is more right");
}

TEST_CASE("apply_baseline: no direction where only the model's own state changed, or nothing did") {
  auto weights = refereed(report(), 3);
  weights.targets()[0].configs[0].reference[0].digest = hex('f');  // param/w only
  ra::apply_baseline(weights, baseline_of(report()));              // even against a baseline without errors
  CHECK_FALSE(result(weights, "default").direction);
  auto same = refereed(report(), 3);
  ra::apply_baseline(same, baseline_of(report()));
  CHECK_FALSE(result(same, "default").direction);
  CHECK(ra::report::direction_summary(*same.baseline).empty());
  CHECK(ra::report::render_text(same).find("direction vs float64") == std::string::npos);
}
