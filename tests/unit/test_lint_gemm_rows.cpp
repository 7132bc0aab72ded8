// SPDX-License-Identifier: Apache-2.0
// worker/lint/gemm_rows.h: a GEMM's rows (M) from an exported graph's shapes, and their rank
// against the measured batch classes.
#include "worker/lint/gemm_rows.h"

#include <doctest/doctest.h>

namespace {

using nlohmann::json;
using ra::lint::assess_rows;
using ra::lint::gemm_rows;
using ra::lint::parse_batch_classes;
using ra::lint::Risk;
using ra::lint::size_product;

json sym(const std::string& expr) { return {{"as_expr", {{"expr_str", expr}, {"hint", {{"as_int", 2}}}}}}; }
const std::string kS77 = "Symbol('s77', positive=True, integer=True)";

}  // namespace

TEST_CASE("gemm rows: sizes that are products of integers and symbols, nothing else") {
  CHECK(size_product(json{{"as_int", 5}})->factor == 5);
  const auto s = size_product(sym(kS77));
  REQUIRE(s);
  CHECK(s->factor == 1);
  CHECK(s->symbols == std::vector<std::string>{"s77"});
  const auto m = size_product(sym("Mul(Integer(5), " + kS77 + ")"));
  REQUIRE(m);
  CHECK(m->factor == 5);
  CHECK(m->symbols == std::vector<std::string>{"s77"});
  CHECK_FALSE(size_product(sym("Add(Integer(1), " + kS77 + ")")));  // a sum is not a product
  CHECK_FALSE(size_product(sym("FloorDiv(" + kS77 + ", Integer(2))")));
  CHECK_FALSE(size_product(json{{"as_int", -1}}));
  CHECK_FALSE(size_product(json::array()));
}

TEST_CASE("gemm rows: M of linear (all but the last dimension), addmm (mat1's first) and conv2d (the batch)") {
  json values = json::object();
  values["x"]["sizes"] = json::array({sym(kS77), json{{"as_int", 16}}, json{{"as_int", 32}}});
  values["a"]["sizes"] = json::array({json{{"as_int", 7}}, json{{"as_int", 32}}});
  const auto tensor = [](const std::string& name) {
    json arg;
    arg["as_tensor"]["name"] = name;
    return arg;
  };
  const auto linear = gemm_rows("aten::linear", {{"input", tensor("x")}}, values);
  REQUIRE(linear);
  CHECK(linear->factor == 16);
  CHECK(linear->symbols == std::vector<std::string>{"s77"});
  const auto addmm = gemm_rows("aten::addmm", {{"mat1", tensor("a")}}, values);
  REQUIRE(addmm);
  CHECK(addmm->factor == 7);
  CHECK(addmm->symbols.empty());
  const auto conv = gemm_rows("aten::conv2d", {{"input", tensor("x")}}, values);
  REQUIRE(conv);
  CHECK(conv->factor == 1);
  CHECK_FALSE(gemm_rows("aten::relu", {{"self", tensor("x")}}, values));
  CHECK_FALSE(gemm_rows("aten::linear", {{"input", tensor("missing")}}, values));
}

TEST_CASE("gemm rows: ranked against the measured classes") {
  const auto classes = parse_batch_classes("batch classes {1,2,3} | {4…257}");
  REQUIRE(classes.size() == 2);
  CHECK(classes[0].size() == 3);
  CHECK(classes[1] == std::vector<std::pair<int64_t, int64_t>>{{4, 257}});
  const std::map<std::string, ra::lint::SymbolInfo> symbols = {{"s77", {"x.size(0)", 1}}};
  const auto tokens = assess_rows(ra::lint::GemmRows{16, {"s77"}}, symbols, classes);
  CHECK(tokens.risk == Risk::Low);
  CHECK(tokens.sentence ==
        "M = 16 × x.size(0) ≥ 16: every batch size puts M in the measured class {4…257} (measured up to 257)");
  const auto batch = assess_rows(ra::lint::GemmRows{1, {"s77"}}, symbols, classes);
  CHECK(batch.risk == Risk::High);
  CHECK(batch.sentence == "M = x.size(0): M = 1 and M = 4 fall in different measured classes ({1,2,3} | {4…257})");
  // A batch that is at least 4 (its exported lower bound) stays in one class.
  const auto bounded = assess_rows(ra::lint::GemmRows{1, {"s77"}}, {{"s77", {"x.size(0)", 4}}}, classes);
  CHECK(bounded.risk == Risk::Low);
  CHECK(assess_rows(ra::lint::GemmRows{197, {}}, symbols, classes).risk == Risk::None);
  CHECK(assess_rows(std::nullopt, symbols, classes).risk == Risk::Unknown);
  CHECK(assess_rows(ra::lint::GemmRows{300, {"s77"}}, symbols, classes).risk == Risk::Unknown);  // beyond 257
  CHECK(assess_rows(ra::lint::GemmRows{16, {"s77"}}, symbols, {}).risk == Risk::Unknown);        // nothing measured
  CHECK(parse_batch_classes("reproducible").empty());
}
