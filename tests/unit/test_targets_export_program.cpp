// SPDX-License-Identifier: Apache-2.0
// The export interpreter's reading of what a program takes and returns, on a hand-written graph:
// token ids that reach an embedding (input_hints), the output tree's names for a dataclass, the
// graph's outputs checked against the signature, and --shape inputs made from the signature's dtype
// and the embedding's rows (load_inputs).
#include "worker/runtime/child_support.h"
#include "worker/targets/export_program.h"
#include "worker/targets/inputs.h"

#include <ATen/ATen.h>
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <functional>

namespace {

using nlohmann::json;

json tensor_arg(const std::string& name, const std::string& value) {
  return {{"name", name}, {"arg", {{"as_tensor", {{"name", value}}}}}};
}

json sizes(std::vector<int64_t> s) {
  json out = json::array();
  for (const int64_t d : s) out.push_back({{"as_int", d}});
  return out;
}

// ids (int64 [2, 3]) -> view [6] -> embedding of emb.weight (7 rows); a second table of 9 rows reads
// ids as they are; a third of 5 rows reads a constant position tensor, not the input. The output is
// a dataclass of two fields (its serialized context: [present fields, None fields]).
json program() {
  json values = {{"ids", {{"dtype", 5}, {"sizes", sizes({2, 3})}}},
                 {"p_emb", {{"dtype", 7}, {"sizes", sizes({7, 4})}}},
                 {"p_big", {{"dtype", 7}, {"sizes", sizes({9, 4})}}},
                 {"p_pos", {{"dtype", 7}, {"sizes", sizes({5, 4})}}},
                 {"c_pos", {{"dtype", 5}, {"sizes", sizes({3})}}},
                 {"view", {{"dtype", 5}, {"sizes", sizes({6})}}},
                 {"embedding", {{"dtype", 7}, {"sizes", sizes({6, 4})}}},
                 {"embedding_1", {{"dtype", 7}, {"sizes", sizes({2, 3, 4})}}},
                 {"embedding_2", {{"dtype", 7}, {"sizes", sizes({3, 4})}}}};
  json nodes = json::array();
  nodes.push_back({{"target", "torch.ops.aten.view.default"},
                   {"name", "view"},
                   {"inputs", {tensor_arg("self", "ids"), {{"name", "size"}, {"arg", {{"as_ints", {6}}}}}}},
                   {"outputs", {{{"as_tensor", {{"name", "view"}}}}}}});
  const auto embedding = [&](const std::string& out, const std::string& weight, const std::string& indices) {
    nodes.push_back({{"target", "torch.ops.aten.embedding.default"},
                     {"name", out},
                     {"inputs", {tensor_arg("weight", weight), tensor_arg("indices", indices)}},
                     {"outputs", {{{"as_tensor", {{"name", out}}}}}}});
  };
  embedding("embedding", "p_emb", "view");
  embedding("embedding_1", "p_big", "ids");
  embedding("embedding_2", "p_pos", "c_pos");
  const auto param = [](const std::string& arg, const std::string& fqn) {
    return json{{"parameter", {{"arg", {{"name", arg}}}, {"parameter_name", fqn}}}};
  };
  json specs = {param("p_emb", "emb.weight"),
                param("p_big", "big.weight"),
                param("p_pos", "pos.weight"),
                {{"tensor_constant", {{"arg", {{"name", "c_pos"}}}, {"tensor_constant_name", "pos"}}}},
                {{"user_input", {{"arg", {{"as_tensor", {{"name", "ids"}}}}}}}}};
  json outputs = {{{"user_output", {{"arg", {{"as_tensor", {{"name", "embedding"}}}}}}}},
                  {{"user_output", {{"arg", {{"as_tensor", {{"name", "embedding_2"}}}}}}}}};
  const json leaf = {{"type", nullptr}, {"context", nullptr}, {"children_spec", json::array()}};
  const json out_spec = {1,
                         {{"type", "mymodel.Output"},
                          {"context", R"([["hidden", "positions"], ["aux"]])"},
                          {"children_spec", {leaf, leaf}}}};
  return {{"graph_module",
           {{"graph",
             {{"inputs", json::array({1, 2, 3, 4, 5})},
              {"nodes", nodes},
              {"tensor_values", values},
              {"outputs", {{{"as_tensor", {{"name", "embedding"}}}}, {{"as_tensor", {{"name", "embedding_2"}}}}}}}},
            {"signature", {{"input_specs", specs}, {"output_specs", outputs}}},
            {"module_call_graph", {{{"fqn", ""}, {"signature", {{"out_spec", out_spec.dump()}}}}}}}},
          {"range_constraints", json::object()}};
}

std::vector<std::pair<std::string, at::Tensor>> weights() {
  return {{"param/emb.weight", at::randn({7, 4})},
          {"param/big.weight", at::randn({9, 4})},
          {"param/pos.weight", at::randn({5, 4})},
          {"constant/pos", at::arange(3)}};
}

}  // namespace

TEST_CASE("input_hints: token ids take the rows of the embedding they reach through views, not a position table's") {
  const auto hints = ra::targets::input_hints(program());
  REQUIRE(hints.size() == 1);
  CHECK(hints[0].name == "ids");
  CHECK((hints[0].dtype == at::kLong));
  CHECK(hints[0].vocab == 7);  // the smaller of the two tables ids index; the 5-row table reads a constant
  CHECK(ra::targets::input_hints(json::object()).empty());  // a malformed program: no hints, no throw
}

TEST_CASE("ExportProgram::run: a dataclass output is named by its fields") {
  ra::targets::ExportProgram p(program(), weights(), "m.pt2", c10::Device(c10::kCPU));
  const c10::IValue out = p.run({at::randint(0, 7, {2, 3})});
  REQUIRE(out.isGenericDict());
  std::vector<std::string> keys;
  for (const auto& kv : out.toGenericDict()) keys.push_back(kv.key().toStringRef());
  CHECK(keys == std::vector<std::string>{"hidden", "positions"});
}

// graph.outputs, which the program does not read, as torch.export.load reads them: each the value its
// output spec names, that value defined (Python raises KeyError on a name no node defines).
TEST_CASE("ExportProgram: the graph's outputs are the signature's, each a value the graph defines") {
  const auto refusal = [](const std::function<void(json&)>& change) {
    json model = program();
    change(model["graph_module"]["graph"]["outputs"]);
    try {
      ra::targets::ExportProgram p(model, weights(), "m.pt2", c10::Device(c10::kCPU));
    } catch (const ra::TrialInputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(refusal([](json&) {}).empty());
  CHECK(refusal([](json& o) { o[1]["as_tensor"]["name"] = "nowhere"; }) ==
        "model 'm.pt2': the graph's outputs: output 2 is value 'nowhere', which no input or node defines");
  CHECK(refusal([](json& o) { o[1]["as_tensor"]["name"] = "view"; }) ==
        "model 'm.pt2': the graph's outputs: output 2 is value 'view', but the signature's output 2 is value "
        "'embedding_2'");
  CHECK(refusal([](json& o) { o.erase(1); }) ==
        "model 'm.pt2': the graph's outputs: are 1, but the signature has 2 output specs");
  CHECK(refusal([](json& o) { o = json::object(); }) ==
        "model 'm.pt2': the graph's outputs: are not a list, but the signature has 2 output specs");
}

TEST_CASE("load_inputs: --shape without a dtype takes the signature's, ids below the embedding's rows or --vocab") {
  ra::TrialSpec spec;
  spec.shapes = {ra::parse_shape("64x8")};
  const auto hints = ra::targets::input_hints(program());
  const auto in = ra::targets::load_inputs(spec, c10::Device(c10::kCPU), hints);
  REQUIRE(in.args.size() == 1);
  const at::Tensor ids = in.args[0].toTensor();
  CHECK((ids.scalar_type() == at::kLong));
  CHECK(ids.max().item<int64_t>() < 7);
  CHECK(ids.max().item<int64_t>() > 2);  // not the old [0, 10) cut to 7 by chance: 512 draws reach past 2
  CHECK(in.descriptions[0] == "int64[64x8] in [0, 7)");

  spec.vocab = 3;
  const auto few = ra::targets::load_inputs(spec, c10::Device(c10::kCPU), hints);
  CHECK(few.args[0].toTensor().max().item<int64_t>() < 3);
  CHECK(few.descriptions[0] == "int64[64x8] in [0, 3)");

  spec.vocab = 8;  // past the embedding's 7 rows: one line, a usage error
  CHECK_THROWS_AS(ra::targets::load_inputs(spec, c10::Device(c10::kCPU), hints), ra::TrialInputError);

  spec.vocab = 0;  // no hint (a TorchScript model): float32
  CHECK((ra::targets::load_inputs(spec, c10::Device(c10::kCPU)).args[0].toTensor().scalar_type() == at::kFloat));
}
