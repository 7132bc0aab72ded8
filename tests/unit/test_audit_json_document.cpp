// SPDX-License-Identifier: Apache-2.0
// parse_json_document (audit/common/json_document.h): the documents it builds are nlohmann's own,
// key order and duplicate keys included, and its limits refuse with InputError naming the file.
#include "audit/common/errors.h"
#include "audit/common/json_document.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <string>

namespace {

std::string nested(int levels) { return std::string(levels, '[') + std::string(levels, ']'); }

std::string wide(int keys) {
  std::string s = "{";
  for (int i = 0; i < keys; ++i) s += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
  return s + "}";
}

}  // namespace

TEST_CASE("parse_json_document") {
  SUBCASE("builds what nlohmann builds, in the members' order") {
    const std::string text = R"({"b": [1, 2.5, "x", null, true, {"c": {}}], "a": {"z": 1, "y": [[]]}, "n": -3})";
    CHECK(ra::parse_json_document<nlohmann::ordered_json>(text, "t") == nlohmann::ordered_json::parse(text));
    CHECK(ra::parse_json_document<nlohmann::ordered_json>(text, "t").dump() ==
          nlohmann::ordered_json::parse(text).dump());
    CHECK(ra::parse_json_document<nlohmann::json>(text, "t") == nlohmann::json::parse(text));
    CHECK(ra::parse_json_document<nlohmann::json>("7", "t") == 7);
  }
  SUBCASE("a key given twice keeps its last value at its first place, in small and in indexed objects") {
    const std::string big = wide(20);
    for (const std::string& doc :
         {std::string(R"({"a": 1, "b": 2, "a": 3})"), big.substr(0, big.size() - 1) + R"(,"k3":"last"})"}) {
      CHECK(ra::parse_json_document<nlohmann::ordered_json>(doc, "t").dump() ==
            nlohmann::ordered_json::parse(doc).dump());
      CHECK(ra::parse_json_document<nlohmann::json>(doc, "t") == nlohmann::json::parse(doc));
    }
  }
  SUBCASE("a wide object is read whole") {
    const auto j = ra::parse_json_document<nlohmann::ordered_json>(wide(50000), "t");
    CHECK(j.size() == 50000);
    CHECK(j.begin().key() == "k0");
    CHECK(j["k49999"] == 49999);
  }
  SUBCASE("kMaxJsonDepth levels are read, one more is refused naming the file") {
    CHECK(ra::parse_json_document<nlohmann::json>(nested(ra::kMaxJsonDepth), "t").is_array());
    std::string objects;
    for (int i = 0; i < 50000; ++i) objects += R"({"a": )";
    objects += "1" + std::string(50000, '}');
    for (const std::string& text : {nested(ra::kMaxJsonDepth + 1), nested(100000), objects}) {
      try {
        (void)ra::parse_json_document<nlohmann::ordered_json>(text, "deep.json");
        FAIL("not refused");
      } catch (const ra::InputError& e) {
        CHECK(std::string(e.what()) == "deep.json nests JSON deeper than 256 levels, more than repro-audit reads");
      }
    }
  }
  SUBCASE("nlohmann's own errors come through for the caller's message") {
    CHECK_THROWS_AS(ra::parse_json_document<nlohmann::json>(R"({"a": [1,)", "t"), nlohmann::json::parse_error);
    CHECK_THROWS_AS(ra::parse_json_document<nlohmann::json>("1e999", "t"), nlohmann::json::exception);
  }
}
