// SPDX-License-Identifier: Apache-2.0
// `repro-audit diff A B` end to end: torch.save files written from C++ IValues (no Python),
// compared through the binary; exit codes, the text table and the JSON document.
#include "tests/cli/harness.h"

// torch before doctest: c10 defines a CHECK macro that doctest must override.
#include <torch/torch.h>

#include <doctest/doctest.h>

#include <fstream>

using nlohmann::json;
using ra::test::run_cli;

namespace {

at::Tensor ramp(int64_t n, at::ScalarType type = at::kFloat) { return at::arange(n, at::TensorOptions(type)).mul(0.1); }

// A small state_dict: "fc/bias", "fc/weight", "layers/0", "layers/1" (a nested dict and a list).
c10::IValue state_dict(const at::Tensor& weight) {
  c10::impl::GenericDict fc(c10::StringType::get(), c10::TensorType::get());
  fc.insert("weight", weight);
  fc.insert("bias", ramp(3));
  c10::List<at::Tensor> layers;
  layers.push_back(ramp(4).reshape({2, 2}));
  layers.push_back(ramp(5, at::kDouble));
  c10::impl::GenericDict top(c10::StringType::get(), c10::AnyType::get());
  top.insert("fc", fc);
  top.insert("layers", layers);
  return top;
}

at::Tensor weight() { return ramp(6).reshape({2, 3}); }

const json* entry(const json& doc, const std::string& name) {
  for (const auto& e : doc["entries"])
    if (e["name"] == name) return &e;
  return nullptr;
}

}  // namespace

TEST_CASE("diff: identical state dicts exit 0") {
  ra::test::TempDir dir;
  ra::test::save_value(dir.file("a.pt"), state_dict(weight()));
  ra::test::save_value(dir.file("b.pt"), state_dict(weight()));
  const auto r = run_cli({"diff", dir.file("a.pt"), dir.file("b.pt"), "--report", dir.file("r.json")});
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("0 of 4 entries differ: the files are bitwise identical") != std::string::npos);
  CHECK(r.out.find("identical      fc/weight  float32[2x3]") != std::string::npos);
  const json doc = ra::test::read_json(dir.file("r.json"));
  CHECK(doc["schema"] == "repro-audit/diff");
  CHECK(doc["schema_version"] == 1);
  CHECK(doc["exit_code"] == 0);
  CHECK(doc["summary"]["entries"] == 4);
  CHECK(doc["summary"]["identical"] == 4);
  CHECK(doc["summary"]["bitwise_identical"] == true);
  std::vector<std::string> names;
  for (const auto& e : doc["entries"]) names.push_back(e["name"].get<std::string>());
  CHECK(names == std::vector<std::string>{"fc/bias", "fc/weight", "layers/0", "layers/1"});
  const json* w = entry(doc, "fc/weight");
  REQUIRE(w != nullptr);
  CHECK((*w)["digest_a"] == (*w)["digest_b"]);
  CHECK((*w)["stats"].is_null());
}

TEST_CASE("diff: one changed element exits 1 with its statistics") {
  ra::test::TempDir dir;
  at::Tensor changed = weight();
  changed.view(at::kInt).view({-1})[5].add_(1);  // one ULP at [1,2]
  ra::test::save_value(dir.file("a.pt"), state_dict(weight()));
  ra::test::save_value(dir.file("b.pt"), state_dict(changed));
  const auto r = run_cli({"diff", dir.file("a.pt"), dir.file("b.pt")});
  CAPTURE(r.out);
  CHECK(r.code == 1);
  CHECK(r.out.find("differs        fc/weight  float32[2x3]  1/6 elements differ, first at [1,2]") != std::string::npos);
  CHECK(r.out.find("max 1 ULP") != std::string::npos);
  CHECK(r.out.find("1 of 4 entries differ, all within tolerance\n") != std::string::npos);

  const auto j = run_cli({"diff", dir.file("a.pt"), dir.file("b.pt"), "--json"});
  CHECK(j.code == 1);
  const json doc = json::parse(j.out);
  const json* w = entry(doc, "fc/weight");
  REQUIRE(w != nullptr);
  CHECK((*w)["status"] == "differs");
  CHECK((*w)["dtype"] == "float32");
  CHECK((*w)["shape"] == json::array({2, 3}));
  CHECK((*w)["digest_a"] != (*w)["digest_b"]);
  CHECK((*w)["stats"]["differing"] == 1);
  CHECK((*w)["stats"]["max_ulp"] == 1.0);
  CHECK((*w)["stats"]["first_index"] == 5);
  CHECK((*w)["stats"]["first_index_nd"] == json::array({1, 2}));
  CHECK((*entry(doc, "fc/bias"))["status"] == "identical");
  CHECK(doc["summary"]["differ"] == 1);
  CHECK(doc["summary"]["bitwise_identical"] == false);
}

TEST_CASE("diff: --atol/--rtol give an informative verdict; only --tolerant changes the exit code") {
  ra::test::TempDir dir;
  at::Tensor changed = weight();
  changed.view({-1})[4] += 1e-3f;  // 0.4 -> 0.401: beyond float32's default, within rtol 1e-2
  changed.view({-1})[5].neg_();    // 0.5 -> -0.5: across zero
  ra::test::save_value(dir.file("a.pt"), state_dict(weight()));
  ra::test::save_value(dir.file("b.pt"), state_dict(changed));
  const auto a = dir.file("a.pt"), b = dir.file("b.pt");

  const auto plain = run_cli({"diff", a, b, "--json"});
  CHECK(plain.code == 1);
  const json plain_doc = json::parse(plain.out);
  const json* w = entry(plain_doc, "fc/weight");
  REQUIRE(w != nullptr);
  CHECK((*w)["stats"]["sign_differs"] == 1);
  CHECK((*w)["stats"]["max_rel_diff"] == 2.0);
  CHECK((*w)["stats"]["beyond_tolerance"] == 2);
  CHECK((*w)["stats"]["tolerance"]["rtol"] == 1.3e-6);

  // 0.5 against -0.5 needs rtol 2 (|a - b| = 2|a|); 1e-3 against 0.4 needs rtol 2.5e-3.
  const auto within = run_cli({"diff", a, b, "--rtol", "2"});
  CAPTURE(within.out);
  CHECK(within.code == 1);  // the bitwise verdict stands
  CHECK(within.out.find("; all within rtol 2, atol 0") != std::string::npos);
  CHECK(within.out.find("1 of 4 entries differ, all within tolerance\n") != std::string::npos);

  const auto tolerant = run_cli({"diff", a, b, "--rtol", "2", "--tolerant", "--report", dir.file("t.json")});
  CHECK(tolerant.code == 0);
  CHECK(tolerant.out.find("all within tolerance: accepted (--tolerant)") != std::string::npos);
  const json doc = ra::test::read_json(dir.file("t.json"));
  CHECK(doc["exit_code"] == 0);
  CHECK(doc["summary"]["bitwise_identical"] == false);
  CHECK(doc["summary"]["within_tolerance"] == 1);
  CHECK(doc["tolerance"]["rtol"] == 2.0);
  CHECK(doc["tolerance"]["atol"] == 0.0);
  CHECK(doc["tolerance"]["tolerant"] == true);

  const auto beyond = run_cli({"diff", a, b, "--rtol", "0.01", "--atol", "1e-6", "--tolerant"});
  CHECK(beyond.code == 1);
  CHECK(beyond.out.find("; 1 beyond rtol 0.01, atol 1e-06") != std::string::npos);

  // --tolerant alone uses each dtype's default tolerance.
  CHECK(run_cli({"diff", a, b, "--tolerant"}).code == 1);

  // What no tolerance can accept: an entry only in one file.
  c10::impl::GenericDict extra(c10::StringType::get(), c10::TensorType::get());
  extra.insert("w", weight());
  extra.insert("v", weight());
  c10::impl::GenericDict one(c10::StringType::get(), c10::TensorType::get());
  one.insert("w", weight());
  ra::test::save_value(dir.file("one.pt"), one);
  ra::test::save_value(dir.file("extra.pt"), extra);
  CHECK(run_cli({"diff", dir.file("one.pt"), dir.file("extra.pt"), "--rtol", "1", "--tolerant"}).code == 1);

  for (const auto& bad : std::vector<std::vector<std::string>>{
           {"--atol", "-1"}, {"--rtol", "abc"}, {"--rtol", "nan"}, {"--atol", "inf"}}) {
    std::vector<std::string> args = {"diff", a, b};
    args.insert(args.end(), bad.begin(), bad.end());
    const auto r = run_cli(args);
    CAPTURE(bad[0]);
    CHECK(r.code == 2);
    CHECK(r.err.find(bad[0] + ": expected a number of at least 0") != std::string::npos);
    CHECK(ra::test::count_lines(r.err) == 1);
  }
}

TEST_CASE("diff: dtype and shape mismatches") {
  ra::test::TempDir dir;
  ra::test::save_value(dir.file("a.pt"), state_dict(weight()));
  ra::test::save_value(dir.file("dtype.pt"), state_dict(weight().to(at::kDouble)));
  ra::test::save_value(dir.file("shape.pt"), state_dict(weight().reshape({3, 2})));
  const auto d = run_cli({"diff", dir.file("a.pt"), dir.file("dtype.pt"), "--json"});
  CHECK(d.code == 1);
  const json dd = json::parse(d.out);
  CHECK((*entry(dd, "fc/weight"))["status"] == "dtype-differs");
  CHECK((*entry(dd, "fc/weight"))["dtype_b"] == "float64");
  CHECK((*entry(dd, "fc/weight"))["stats"].is_null());
  const auto s = run_cli({"diff", dir.file("a.pt"), dir.file("shape.pt")});
  CHECK(s.code == 1);
  CHECK(s.out.find("shape-differs  fc/weight  float32[2x3] vs float32[3x2]") != std::string::npos);
}

TEST_CASE("diff: entries only in one file") {
  ra::test::TempDir dir;
  c10::impl::GenericDict a(c10::StringType::get(), c10::TensorType::get());
  a.insert("shared", ramp(3));
  a.insert("old", ramp(2));
  c10::impl::GenericDict b(c10::StringType::get(), c10::TensorType::get());
  b.insert("shared", ramp(3));
  b.insert("new", ramp(2));
  ra::test::save_value(dir.file("a.pt"), a);
  ra::test::save_value(dir.file("b.pt"), b);
  const auto r = run_cli({"diff", dir.file("a.pt"), dir.file("b.pt")});
  CHECK(r.code == 1);
  CHECK(r.out.find("only-b         new") != std::string::npos);
  CHECK(r.out.find("only-a         old") != std::string::npos);
  CHECK(r.out.find("0 of 3 entries differ, 1 only in A, 1 only in B\n") != std::string::npos);
  const json doc = json::parse(run_cli({"diff", dir.file("a.pt"), dir.file("b.pt"), "--json"}).out);
  CHECK((*entry(doc, "old"))["digest_b"].is_null());
  CHECK((*entry(doc, "new"))["digest_a"].is_null());
  CHECK(doc["summary"]["only_a"] == 1);
  CHECK(doc["summary"]["only_b"] == 1);
}

TEST_CASE("diff: a file holding one tensor") {
  ra::test::TempDir dir;
  ra::test::save_value(dir.file("a.pt"), ramp(8));
  ra::test::save_value(dir.file("b.pt"), ramp(8));
  at::Tensor changed = ramp(8);
  changed[3] = 42;
  ra::test::save_value(dir.file("c.pt"), changed);
  const auto same = run_cli({"diff", dir.file("a.pt"), dir.file("b.pt"), "--json"});
  CHECK(same.code == 0);
  const json doc = json::parse(same.out);
  REQUIRE(doc["entries"].size() == 1);
  CHECK(doc["entries"][0]["name"] == "<tensor>");
  CHECK(doc["a"] == dir.file("a.pt"));
  CHECK(doc["b"] == dir.file("b.pt"));
  const auto other = run_cli({"diff", dir.file("a.pt"), dir.file("c.pt")});
  CHECK(other.code == 1);
  CHECK(other.out.find("differs        <tensor>  float32[8]  1/8 elements differ, first at [3]") != std::string::npos);
}

TEST_CASE("diff: bad inputs exit 3 with one line and no report") {
  ra::test::TempDir dir;
  ra::test::save_value(dir.file("a.pt"), ramp(3));
  std::ofstream(dir.file("text.pt")) << "not a torch.save file\n";
  c10::impl::GenericDict float_keys(c10::FloatType::get(), c10::TensorType::get());
  float_keys.insert(1.5, ramp(3));
  ra::test::save_value(dir.file("float-keys.pt"), float_keys);
  ra::test::expect_error(dir, {"diff", dir.file("a.pt"), dir.file("missing.pt")}, 3,
                         "file '" + dir.file("missing.pt") + "' does not exist");
  ra::test::expect_error(dir, {"diff", dir.file("text.pt"), dir.file("a.pt")}, 3,
                         "file '" + dir.file("text.pt") + "' is not a torch.save file");
  ra::test::expect_error(dir, {"diff", dir.file("a.pt"), dir.file("float-keys.pt")}, 3,
                         "file '" + dir.file("float-keys.pt") + "' holds a dict with a non-string key");
  ra::test::expect_error(dir, {"diff", dir.file("a.pt"), dir.file("a.pt"), "--key", "model"}, 3,
                         "file '" + dir.file("a.pt") + "' has no entry 'model': it holds a Tensor there");
  ra::test::expect_error(dir, {"diff", dir.file("a.pt")}, 2, "b is required");
  ra::test::expect_error(dir, {"diff", dir.file("a.pt"), dir.file("a.pt"), "--report", "/dev/null/dir/r.json"}, 2,
                         "cannot create folder '/dev/null'");
}

// Files written by Python's torch.save (tests/data/make_state_dicts.py): what users diff most.
std::string data_file(const std::string& name) { return std::string(RA_TEST_DATA) + "/" + name; }

TEST_CASE("diff: Python state_dict() files, OrderedDict and all") {
  const auto same = run_cli({"diff", data_file("state_dict_a.pt"), data_file("state_dict_a.pt"), "--json"});
  REQUIRE_MESSAGE(same.code == 0, same.err);
  const json s = json::parse(same.out);
  std::vector<std::string> names;
  for (const auto& e : s["entries"]) names.push_back(e["name"]);
  CHECK(names == std::vector<std::string>{"0.bias", "0.weight", "1.bias", "1.num_batches_tracked", "1.running_mean",
                                          "1.running_var", "1.weight", "2.bias", "2.weight"});
  CHECK((*entry(s, "0.weight"))["dtype"] == "float32");
  CHECK((*entry(s, "0.weight"))["shape"] == json::array({3, 4}));
  CHECK((*entry(s, "1.num_batches_tracked"))["dtype"] == "int64");
  CHECK((*entry(s, "1.num_batches_tracked"))["shape"] == json::array());
  CHECK((*entry(s, "2.weight"))["dtype"] == "float64");

  const auto d = run_cli({"diff", data_file("state_dict_a.pt"), data_file("state_dict_b.pt"), "--json"});
  CHECK(d.code == 1);
  const json dd = json::parse(d.out);
  const json& w = *entry(dd, "0.weight");
  CHECK(w["status"] == "differs");
  CHECK(w["stats"]["differing"] == 1);
  CHECK(w["stats"]["first_index_nd"] == json::array({1, 2}));
  CHECK(w["stats"]["max_ulp"] == 1.0);
  CHECK((*entry(dd, "2.bias"))["stats"]["differing"] == 2);
  CHECK((*entry(dd, "2.bias"))["stats"]["max_abs_diff"] == doctest::Approx(0.5));
  CHECK((*entry(dd, "1.running_var"))["status"] == "identical");
  CHECK(dd["summary"]["differ"] == 2);
  CHECK(dd["summary"]["identical"] == 7);
}

TEST_CASE("diff: nested Python containers and a view into a larger storage") {
  const auto r = run_cli({"diff", data_file("nested.pt"), data_file("nested.pt"), "--json"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const json doc = json::parse(r.out);
  CHECK(doc["entries"].size() == 12);
  REQUIRE(entry(doc, "extra/0") != nullptr);
  CHECK((*entry(doc, "extra/0"))["shape"] == json::array({2, 2}));
  CHECK((*entry(doc, "extra/1/0"))["dtype"] == "int64");
  CHECK((*entry(doc, "extra/1/1"))["dtype"] == "bool");
  CHECK(entry(doc, "model/0.weight") != nullptr);
  // The view's values, not its storage's: the same bits as a C++ tensor holding 2, 3, 4, 5.
  ra::test::TempDir dir;
  c10::impl::GenericDict extra(c10::StringType::get(), c10::AnyType::get());
  extra.insert("0", at::arange(2, 6, at::TensorOptions(at::kFloat)).view({2, 2}));
  ra::test::save_value(dir.file("view.pt"), extra);
  const auto v = run_cli({"diff", data_file("nested.pt"), dir.file("view.pt"), "--json"});
  CHECK(v.code == 1);  // the other entries are only in A
  CHECK((*entry(json::parse(v.out), "extra/0"))["status"] == "only-a");
  c10::impl::GenericDict top(c10::StringType::get(), c10::AnyType::get());
  c10::List<at::Tensor> list;
  list.push_back(extra.at("0").toTensor());
  top.insert("extra", list);
  ra::test::save_value(dir.file("view2.pt"), top);
  const json v2 = json::parse(run_cli({"diff", data_file("nested.pt"), dir.file("view2.pt"), "--json"}).out);
  CHECK((*entry(v2, "extra/0"))["status"] == "identical");
}

TEST_CASE("diff: a Python file holding a class repro-audit does not read") {
  ra::test::TempDir dir;
  ra::test::expect_error(dir, {"diff", data_file("foreign_class.pt"), data_file("foreign_class.pt")}, 3,
                         "file '" + data_file("foreign_class.pt") +
                             "' holds a datetime.date at 'saved_on', which repro-audit cannot read");
}

TEST_CASE("diff: training checkpoints compare their plain values by value, --key picks a subtree") {
  // {"model": state_dict, "optimizer": Adam's state_dict (int keys, betas, None), "epoch": 3} from
  // Python (tests/data/make_state_dicts.py): until now "holds a Int, not tensors".
  const auto d = run_cli({"diff", data_file("checkpoint_a.pt"), data_file("checkpoint_b.pt"), "--json"});
  REQUIRE_MESSAGE(d.code == 1, d.err);
  const json j = json::parse(d.out);
  const json& epoch = *entry(j, "epoch");
  CHECK(epoch["status"] == "differs");
  CHECK(epoch["dtype"] == "int");
  CHECK(epoch["value_a"] == "3");
  CHECK(epoch["value_b"] == "4");
  CHECK((*entry(j, "optimizer/param_groups/0/betas/0"))["value_a"] == "0.9");
  CHECK((*entry(j, "optimizer/param_groups/0/foreach"))["dtype"] == "None");
  CHECK((*entry(j, "optimizer/state/0/exp_avg"))["status"] == "identical");
  CHECK((*entry(j, "model/0.weight"))["status"] == "differs");
  const auto text = run_cli({"diff", data_file("checkpoint_a.pt"), data_file("checkpoint_b.pt")});
  CHECK(text.out.find("differs        epoch") != std::string::npos);
  CHECK(text.out.find("int 3 vs int 4") != std::string::npos);

  const auto model =
      run_cli({"diff", data_file("checkpoint_a.pt"), data_file("checkpoint_b.pt"), "--key", "model", "--json"});
  CHECK(model.code == 1);
  const json m = json::parse(model.out);
  CHECK(m["key"] == "model");
  std::vector<std::string> names;
  for (const auto& e : m["entries"]) names.push_back(e["name"]);
  CHECK(names == std::vector<std::string>{"0.bias", "0.weight", "1.bias", "1.num_batches_tracked", "1.running_mean",
                                          "1.running_var", "1.weight"});
  const auto same = run_cli({"diff", data_file("checkpoint_a.pt"), data_file("checkpoint_b.pt"), "--key", "optimizer"});
  CHECK(same.code == 0);
  ra::test::TempDir dir;
  ra::test::expect_error(
      dir, {"diff", data_file("checkpoint_a.pt"), data_file("checkpoint_b.pt"), "--key", "optimizer/state/9"}, 3,
      "has no entry '9' under 'optimizer/state' (it holds 0, 1, 2, 3)");
}

TEST_CASE("diff: two TorchScript archives are compared by their parameters and buffers") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("a.pt"), ra::test::kLinearReluModel, {{"w", {4, 3}}}, {{"count", {2}}});
  const auto same = run_cli({"diff", dir.file("a.pt"), dir.file("a.pt")});
  CHECK(same.code == 0);
  CHECK(same.out.find("identical      count  float32[2]") != std::string::npos);
  CHECK(same.out.find("identical      w      float32[4x3]") != std::string::npos);
  ra::test::save_model(dir.file("b.pt"), ra::test::kLinearReluModel, {{"w", {4, 4}}}, {{"count", {2}}});
  const auto other = run_cli({"diff", dir.file("a.pt"), dir.file("b.pt")});
  CHECK(other.code == 1);
  CHECK(other.out.find("shape-differs  w      float32[4x3] vs float32[4x4]") != std::string::npos);
  ra::test::expect_error(dir, {"diff", dir.file("a.pt"), dir.file("b.pt"), "--key", "w"}, 3,
                         "--key selects inside torch.save files");
}
