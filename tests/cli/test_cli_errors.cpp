// SPDX-License-Identifier: Apache-2.0
// Bad input: one clear line on stderr, the documented exit code, and no report written.
#include "tests/cli/harness.h"

// torch before doctest: c10 defines a CHECK macro that doctest must override.
#include <caffe2/serialize/inline_container.h>
#include <torch/script.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <optional>

using ra::test::run_cli;

namespace {

const char* kLinear = R"JIT(
def forward(self, x):
    return torch.matmul(x, self.w)
)JIT";

// tests/data/exported_linear.pt2 copied to `out` with each record passed through `change`, which
// may rewrite it or drop it (nullopt). The writer adds its own version, byte order and id records.
void rewrite_export(const std::string& out,
                    const std::function<std::optional<std::string>(const std::string&, std::string)>& change) {
  caffe2::serialize::PyTorchStreamReader reader(std::string(RA_TEST_DATA) + "/exported_linear.pt2");
  caffe2::serialize::PyTorchStreamWriter writer(out);
  for (const auto& name : reader.getAllRecords()) {
    if (name == ".data/version" || name == "version" || name == "byteorder" || name == ".data/serialization_id")
      continue;
    auto [data, size] = reader.getRecord(name);
    const auto kept = change(name, std::string(static_cast<const char*>(data.get()), size));
    if (kept) writer.writeRecord(name, kept->data(), kept->size());
  }
  writer.writeEndOfFile();
}

}  // namespace

TEST_CASE("run and lint: a tampered torch.export archive exits 3 with one line, and writes nothing") {
  ra::test::TempDir dir;
  const auto json_of = [](std::string text) { return nlohmann::json::parse(text); };
  rewrite_export(dir.file("same.pt2"), [](const std::string&, std::string d) { return d; });
  rewrite_export(dir.file("future.pt2"), [&](const std::string& name, std::string d) -> std::optional<std::string> {
    if (name != "models/model.json") return d;
    auto j = json_of(d);
    j["schema_version"] = {{"major", 99}, {"minor", 0}};
    return j.dump();
  });
  rewrite_export(dir.file("unknown_op.pt2"), [&](const std::string& name, std::string d) -> std::optional<std::string> {
    if (name != "models/model.json") return d;
    auto j = json_of(d);
    for (auto& node : j["graph_module"]["graph"]["nodes"]) node["target"] = "torch.ops.aten.no_such_op.default";
    return j.dump();
  });
  rewrite_export(dir.file("not_json.pt2"), [](const std::string& name, std::string d) -> std::optional<std::string> {
    return name == "models/model.json" ? std::string("{not json") : d;
  });
  rewrite_export(dir.file("no_weight.pt2"), [](const std::string& name, std::string d) -> std::optional<std::string> {
    if (name.rfind("data/weights/", 0) == 0 && name.find(".json") == std::string::npos) return std::nullopt;
    return d;
  });
  {
    std::ifstream in(dir.file("same.pt2"), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(dir.file("truncated.pt2"), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  // The copy itself is a sound archive: what fails below is each change.
  REQUIRE(run_cli({"run", dir.file("same.pt2"), "--shape", "2x4", "--repeats", "2", "--quiet"}).code == 0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"future.pt2",
       "is a torch.export archive of schema version 99.0, which this build's LibTorch (schema 8.x) does not read"},
      {"unknown_op.pt2", "node linear (torch.ops.aten.no_such_op.default): names an op that this torch does not have"},
      {"not_json.pt2", "is a torch.export archive that cannot be loaded"},
      {"no_weight.pt2", "the archive has no record data/weights/"},
      {"truncated.pt2",
       "is a zip archive that repro-audit cannot read: it has no end of central directory record (damaged, truncated"},
  };
  for (const auto& [file, message] : cases) {
    CAPTURE(file);
    ra::test::expect_error(dir, {"run", dir.file(file), "--shape", "2x4", "--report", dir.file("report.json")}, 3,
                           message);
  }
  // lint checks the archive as run does (the one check, worker/targets/export_program.h): the same
  // archives are refused, in the same words.
  for (const auto& [file, message] : cases) {
    CAPTURE(file);
    ra::test::expect_error(dir, {"lint", dir.file(file)}, 3, message);
  }
}

TEST_CASE("run: unreadable models exit 3") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), kLinear, {{"w", {4, 2}}});
  { std::ofstream(dir.file("text.pt")) << "this is not a TorchScript archive\n"; }
  {
    std::ifstream in(dir.file("m.pt"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(dir.file("truncated.pt"), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  ra::test::expect_error(dir, {"run", dir.file("missing.pt"), "--shape", "2x4"}, 3,
                         "model '" + dir.file("missing.pt") + "' does not exist");
  ra::test::expect_error(dir, {"run", dir.file("text.pt"), "--shape", "2x4"}, 3,
                         "is not a PyTorch file (not a zip archive)");
  ra::test::expect_error(
      dir, {"run", dir.file("truncated.pt"), "--shape", "2x4"}, 3,
      "is a zip archive that repro-audit cannot read: it has no end of central directory record (damaged, "
      "truncated, or not written by PyTorch)");
}

TEST_CASE(
    "run and lint: every file that is not a TorchScript archive gets one line saying what it is, and the next step") {
  const auto data = [](const std::string& name) { return std::string(RA_TEST_DATA) + "/" + name; };
  const std::string next = "save the module with torch.jit.script(module).save(PATH)";
  const std::vector<std::pair<std::string, std::vector<std::string>>> kinds = {
      {"pickled_module.pt", {"holds a pickled __main__.Net (torch.save(model))", "never does", next}},
      {"state_dict_a.pt",
       {"holds tensors saved with torch.save (a state_dict or a checkpoint), not a model", next,
        "repro-audit diff compares two such files"}},
      {"checkpoint_a.pt", {"holds tensors saved with torch.save (a state_dict or a checkpoint)"}},
      {"foreign_class.pt", {"is a torch.save file (a checkpoint holding a datetime.date at 'saved_on'), not a model"}},
      {"legacy_state_dict.pt", {"is a torch.save file in the legacy format", next}},
  };
  for (const auto& [file, parts] : kinds)
    for (const char* command : {"run", "lint"}) {
      CAPTURE(file);
      CAPTURE(command);
      std::vector<std::string> args = {command, data(file)};
      if (std::string(command) == "run") args.insert(args.end(), {"--shape", "2x4"});
      const auto r = run_cli(args);
      CHECK(r.code == 3);
      CHECK(ra::test::count_lines(r.err) == 1);
      CHECK(r.out.empty());
      for (const auto& part : parts) CHECK(r.err.find(part) != std::string::npos);
    }
  // run audits torch.export archives (test_cli_run.cpp) and AOTInductor packages (tests/compiled/);
  // lint reads an export archive's graph, and says why it cannot lint a package.
  const auto r = run_cli({"lint", data("exported.pt2")});
  CHECK(r.code == 0);
  CHECK(r.out.find("forward") != std::string::npos);
  const auto a = run_cli({"lint", data("aoti_package.pt2")});
  CHECK(a.code == 3);
  CHECK(ra::test::count_lines(a.err) == 1);
  CHECK(a.err.find("is an AOTInductor package: its compiled kernels cannot be linted; lint the torch.export archive") !=
        std::string::npos);
}

TEST_CASE("run: no input, and options that do not apply, are usage errors that say what to do (exit 2)") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), kLinear, {{"w", {4, 2}}});
  ra::test::expect_error(dir, {"run", dir.file("m.pt")}, 2,
                         "the model's forward takes 1 input (x), but none was given: pass --input FILE (a torch.save "
                         "file) or --shape SIZES per input (for example --shape 8x3x224x224)");
  ra::test::expect_error(dir, {"run", dir.file("m.pt"), "--shape", "2x4", "--steps", "3"}, 2,
                         "--steps applies to --mode train only");
  ra::test::expect_error(dir, {"run", dir.file("m.pt"), "--shape", "2x4", "--no-fix-search"}, 2,
                         "--no-fix-search applies with --trace only");
  ra::test::expect_error(dir, {"run", dir.file("m.pt"), "--shape", "2x4", "--trace-capacity", "4096"}, 2,
                         "--trace-capacity applies with --trace only");
  ra::test::expect_error(dir,
                         {"run", dir.file("m.pt"), "--shape", "2x4", "--trace", "--no-fix-search", "--timed-runs", "7"},
                         2, "--timed-runs times the fix search, which --no-fix-search turns off");
}

TEST_CASE("run: inputs of the wrong shape, dtype, count or kind exit 3") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), kLinear, {{"w", {4, 2}}});
  ra::test::expect_error(dir, {"run", dir.file("m.pt"), "--shape", "2x5"}, 3,
                         "the model rejects the inputs (float32[2x5])");
  ra::test::expect_error(dir, {"run", dir.file("m.pt"), "--shape", "2x4:int64"}, 3,
                         "the model rejects the inputs (int64[2x4])");
  ra::test::expect_error(dir, {"run", dir.file("m.pt"), "--shape", "2x4", "--shape", "2x4"}, 3,
                         "forward takes 1 input, but 2 were given");
  ra::test::save_value(dir.file("string.pt"), c10::IValue(std::string("hello")));
  ra::test::expect_error(dir, {"run", dir.file("m.pt"), "--input", dir.file("string.pt")}, 3,
                         "holds a String at 'input', not tensors");
  { std::ofstream(dir.file("garbage.pt")) << "garbage"; }
  ra::test::expect_error(dir, {"run", dir.file("m.pt"), "--input", dir.file("garbage.pt")}, 3,
                         "is not a torch.save file");
  ra::test::expect_error(dir, {"run", dir.file("m.pt"), "--input", dir.file("none.pt")}, 3,
                         "input file '" + dir.file("none.pt") + "' does not exist");
}

// A model that returns something other than tensors has a property the audit cannot compare: exit 3
// from the preflight with one line naming where, not exit 4 with every trial "crashed" (issue 51 item 9).
TEST_CASE("run: a model whose output holds non-tensors exits 3 naming where") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("dict.pt"), R"JIT(
def forward(self, x):
    return {'a': 1, 'b': 'text'}
)JIT",
                       {});
  ra::test::save_model(dir.file("tuple.pt"), R"JIT(
def forward(self, x):
    return (x * 2.0, 'text')
)JIT",
                       {});
  ra::test::expect_error(dir, {"run", dir.file("dict.pt"), "--shape", "2x4", "-q"}, 3,
                         "the model's output holds a Int at 'output/a', not tensors");
  ra::test::expect_error(dir, {"run", dir.file("tuple.pt"), "--shape", "2x4", "-q"}, 3,
                         "the model's output holds a String at 'output/1', not tensors");
}

TEST_CASE("run: usage errors exit 2 and say what is valid") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), kLinear, {{"w", {4, 2}}});
  const std::string m = dir.file("m.pt");
  ra::test::expect_error(dir, {"run", m, "--shape", "2x4", "--configs", "detx"}, 2,
                         "unknown configuration 'detx' (presets: default, benchmark");
  ra::test::expect_error(dir, {"run", m, "--shape", "2x4", "--configs", "det+bogus=1"}, 2, "unknown switch 'bogus'");
  ra::test::expect_error(dir, {"run", m, "--shape", "2x4", "--repeats", "0"}, 2, "--repeats");
  ra::test::expect_error(dir, {"run", m, "--shape", "2x4", "--device", "tpu"}, 2, "unknown device 'tpu'");
  ra::test::expect_error(dir, {"run", m, "--shape", "2x4", "--calls", "0"}, 2,
                         "--calls: expected an integer from 1 to 1000, got '0'");
  ra::test::expect_error(dir, {"run", m, "--shape", "2x4", "--calls", "two"}, 2,
                         "--calls: expected an integer from 1 to 1000, got 'two'");
  ra::test::expect_error(dir, {"run", m, "--shape", "2x4", "--calls", "2", "--mode", "train"}, 2,
                         "--calls applies to --mode infer only");
  ra::test::expect_error(dir, {"run", m, "--shape", "2x4", "--mode", "fly"}, 2, "--mode");
  ra::test::expect_error(dir, {"run", m, "--shape", "2x4", "--repets", "2"}, 2,
                         "unknown option '--repets' for run (did you mean --repeats?)");
  ra::test::expect_error(dir, {"run", m, "--shape", "2x4", "--atl", "1e-3"}, 2,
                         "unknown option '--atl' for run (did you mean --atol?)");
  ra::test::expect_error(dir, {"probes", "--family", "x"}, 2,
                         "unknown option '--family' for probes (see repro-audit probes --help)");
  ra::test::expect_error(dir, {"runn", m}, 2, "did you mean 'run'?");
  // A report's folder is created when missing, unless it cannot be (here: below a regular file).
  ra::test::expect_error(dir, {"run", m, "--shape", "2x4", "--report", m + "/dir/r.json"}, 2,
                         "cannot create folder '" + m + "' (File exists)");
}

TEST_CASE("run: --device cuda on a machine without a GPU exits 2") {
  const auto env = nlohmann::json::parse(run_cli({"env", "--json"}).out);
  if (env["cuda"]["available"].get<bool>()) {
    MESSAGE("a CUDA device is present: nothing to check here");
    return;
  }
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), kLinear, {{"w", {4, 2}}});
  ra::test::expect_error(dir, {"run", dir.file("m.pt"), "--shape", "2x4", "--device", "cuda"}, 2,
                         "--device cuda was asked for, but this machine has no CUDA device");
}

TEST_CASE("exec: options that would do nothing are not offered, and --timed-runs takes what run takes") {
  // exec runs the command as it is: no generator of ours to seed, no process to load a library into.
  const auto help = run_cli({"exec", "--help"});
  CHECK(help.code == 0);
  CHECK(help.out.find("--seed") == std::string::npos);
  CHECK(help.out.find("--load-library") == std::string::npos);
  CHECK(help.out.find("--timed-runs") != std::string::npos);
  CHECK(run_cli({"run", "--help"}).out.find("--seed") != std::string::npos);
  const auto bash = run_cli({"__completion", "bash"});
  const size_t exec_case = bash.out.find("    exec) opts=\"");
  REQUIRE(exec_case != std::string::npos);
  const std::string exec_opts = bash.out.substr(exec_case, bash.out.find('\n', exec_case) - exec_case);
  CHECK(exec_opts.find("--seed") == std::string::npos);
  CHECK(exec_opts.find("--load-library") == std::string::npos);
  ra::test::TempDir dir;
  ra::test::expect_error(dir, {"exec", "--seed", "3", "--", "true"}, 2,
                         "--seed applies to run and probes: exec runs your command as it is");
  ra::test::expect_error(dir, {"exec", "--load-library", "x.so", "--", "true"}, 2,
                         "--load-library applies to run and probes");
  // The fix search times in 5 rounds, in run and exec alike.
  ra::test::expect_error(dir, {"exec", "--timed-runs", "1", "--", "true"}, 2, "--timed-runs");
  ra::test::expect_error(dir, {"run", dir.file("m.pt"), "--trace", "--timed-runs", "1"}, 2, "--timed-runs");
}

// --sizes is a LIST, as the man page says: sizes and ranges A..B; another form of range is named as
// such, and --batch-dim may not name more inputs than the rows hold (issue 51 item 11).
TEST_CASE("invariance: --sizes takes ranges A..B; other ranges and extra --batch-dim values are usage errors") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), ra::test::kDoubleModel, {});
  ra::test::save_value(dir.file("rows.pt"), torch::arange(48, torch::kFloat).reshape({12, 4}));
  const std::vector<std::string> base = {"invariance", dir.file("m.pt"), "--input", dir.file("rows.pt"), "-q"};
  const auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), base.begin(), base.end());
    return more;
  };
  const auto r = run_cli(with({"--sizes", "1..3,8", "--no-fix-search", "--report", dir.file("r.json")}));
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json report = ra::test::read_json(dir.file("r.json"));
  std::vector<int64_t> tried;
  for (const auto& c : report["invariance"]["configs"][0]["classes"])
    for (const auto& s : c["sizes"]) tried.push_back(s.get<int64_t>());
  std::sort(tried.begin(), tried.end());
  CHECK(tried == std::vector<int64_t>{1, 2, 3, 8});
  ra::test::expect_error(dir, with({"--sizes", "1-16"}), 2,
                         "--sizes takes batch sizes of 1 or more, ranges A..B, or auto; '1-16' is not one (write a "
                         "range as A..B, e.g. 1..16)");
  ra::test::expect_error(dir, with({"--sizes", "1..2000"}), 2,
                         "--sizes 2000 exceeds the budget of 1024: give sizes up to 1024, or raise --budget");
  ra::test::expect_error(dir, with({"--sizes", "3..1"}), 2,
                         "--sizes takes ranges A..B with 1 <= A <= B (e.g. 1..16); '3..1' is not one");
  ra::test::expect_error(dir, with({"--sizes", "0..4"}), 2, "'0..4' is not one");
  ra::test::expect_error(dir, with({"--batch-dim", "0,0,0"}), 2,
                         "--batch-dim gives 3 values, but the rows file holds 1 input: give one value per input");
}
