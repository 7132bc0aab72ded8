// SPDX-License-Identifier: Apache-2.0
#include "audit/knowledge/knowledge.h"

#include "audit/common/errors.h"

#include <doctest/doctest.h>

namespace {

std::string with_entry(const std::string& entry) {
  return R"({"schema": "repro-audit/knowledge", "schema_version": 1, "torch": "2.11", "source": "test",
             "entries": [)" +
         entry + "]}";
}

const char* kGood = R"({"id": "index_add.cuda", "title": "index_add on CUDA", "doc_row": "torch.index_add on CUDA",
  "documented": "made-deterministic", "severity": "error", "ops": ["aten::index_add"], "args": {"alpha": 1}, "device": "cuda",
  "direction": "forward", "condition": "duplicates", "behaviour": {"deterministic": "made-deterministic"},
  "alert": "", "advice": "use det"})";

std::string error_of(const std::string& text) {
  try {
    ra::parse_knowledge(text, "kb.json");
  } catch (const ra::InputError& e) {
    return e.what();
  }
  return "";
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  s.replace(s.find(from), from.size(), to);
  return s;
}

}  // namespace

TEST_CASE("parse_knowledge: a valid entry is read field by field") {
  const ra::KnowledgeBase kb = ra::parse_knowledge(with_entry(kGood), "kb.json");
  REQUIRE(kb.entries.size() == 1);
  const ra::KnowledgeEntry& e = kb.entries[0];
  CHECK(e.id == "index_add.cuda");
  CHECK(e.documented == ra::Documented::MadeDeterministic);
  CHECK(e.args.at("alpha") == "1");
  CHECK(ra::KnowledgeBase::behaviour_under(e, "deterministic") == ra::Behaviour::MadeDeterministic);
  CHECK(ra::KnowledgeBase::behaviour_under(e, "cudnn.benchmark") == ra::Behaviour::Unaffected);
  CHECK(ra::KnowledgeBase::applies_to(e, ra::Device::cuda()));
  CHECK(!ra::KnowledgeBase::applies_to(e, ra::Device::cpu()));
  CHECK(kb.find("index_add.cuda") == &e);
  CHECK(kb.find("nope") == nullptr);
}

TEST_CASE("parse_knowledge: an argument condition may be a list of accepted values") {
  const ra::KnowledgeBase kb = ra::parse_knowledge(
      with_entry(replaced(kGood, "{\"alpha\": 1}", "{\"reduce\": [\"sum\", \"mean\"]}")), "kb.json");
  CHECK(kb.entries.at(0).args.at("reduce") == "[\"sum\",\"mean\"]");
  CHECK(error_of(with_entry(replaced(kGood, "{\"alpha\": 1}", "{\"reduce\": []}"))).find("'args.reduce'") !=
        std::string::npos);
}

TEST_CASE("parse_knowledge: an entry's concern is run-to-run unless it says batch-invariance") {
  CHECK(ra::parse_knowledge(with_entry(kGood), "kb.json").entries.at(0).concern == "run-to-run");
  const std::string batch =
      replaced(kGood, "\"severity\": \"error\"", "\"severity\": \"note\", \"concern\": \"batch-invariance\"");
  CHECK(ra::parse_knowledge(with_entry(batch), "kb.json").entries.at(0).concern == "batch-invariance");
  CHECK(error_of(with_entry(replaced(batch, "\"batch-invariance\"", "\"batches\"")))
            .find("'concern' is 'batches', expected run-to-run or batch-invariance") != std::string::npos);
  // The shipped batch-variant entries are notes, each measured on the CPU by its probe.
  const ra::KnowledgeBase shipped = ra::load_knowledge(RA_SOURCE_KNOWLEDGE);
  int batch_entries = 0;
  for (const auto& e : shipped.entries) {
    if (e.concern != "batch-invariance") continue;
    ++batch_entries;
    CAPTURE(e.id);
    CHECK(e.severity == "note");
    REQUIRE(!e.measured.empty());
    CHECK(e.measured.front().probe.rfind("batch.", 0) == 0);
  }
  CHECK(batch_entries >= 3);
}

TEST_CASE("parse_knowledge: malformed files name the file, the entry and the field") {
  CHECK(error_of("{").find("kb.json") != std::string::npos);
  CHECK(error_of(with_entry(replaced(kGood, "\"title\"", "\"titel\""))).find("unknown key 'titel'") !=
        std::string::npos);
  CHECK(error_of(with_entry(replaced(kGood, "\"severity\": \"error\"", "\"severity\": \"warning\"")))
            .find("'severity' is 'warning', expected error or note") != std::string::npos);
  CHECK(error_of(with_entry(replaced(kGood, "\"severity\": \"error\", ", ""))).find("severity") != std::string::npos);
  CHECK(error_of(with_entry(replaced(kGood, "\"args\": {\"alpha\": 1}", "\"unless\": {\"output_size\": {}}")))
            .find("'unless.output_size'") != std::string::npos);
  CHECK(error_of(with_entry(replaced(kGood, "\"made-deterministic\", \"severity\"", "\"maybe\", \"severity\"")))
            .find("'documented' is 'maybe'") != std::string::npos);
  CHECK(error_of(with_entry(replaced(kGood, "\"cuda\",\n  \"direction\"", "\"tpu\",\n  \"direction\"")))
            .find("entry 'index_add.cuda': 'device' is 'tpu'") != std::string::npos);
  CHECK(error_of(with_entry(replaced(kGood, "\"aten::index_add\"", "\"index_add\""))).find("qualified op names") !=
        std::string::npos);
  CHECK(error_of(with_entry(replaced(kGood, "\"deterministic\": \"made", "\"no.such.switch\": \"made")))
            .find("unknown switch 'no.such.switch'") != std::string::npos);
  CHECK(error_of(with_entry(
                     replaced(kGood, "{\"deterministic\": \"made-deterministic\"}", "{\"deterministic\": \"raises\"}")))
            .find("needs behaviour.deterministic = made-deterministic") != std::string::npos);
  CHECK(error_of(with_entry(std::string(kGood) + "," + kGood)).find("duplicate id") != std::string::npos);
  CHECK(
      error_of(replaced(with_entry(kGood), "\"schema_version\": 1", "\"schema_version\": 2")).find("schema_version") !=
      std::string::npos);
}

TEST_CASE("load_knowledge: the shipped knowledge base is valid and covers both documented lists") {
  const ra::KnowledgeBase kb = ra::load_knowledge(RA_SOURCE_KNOWLEDGE);
  CHECK(kb.torch_version == "2.11");
  int made = 0, raises = 0, undocumented = 0;
  for (const auto& e : kb.entries) {
    CAPTURE(e.id);
    CHECK(!e.advice.empty());
    CHECK(!e.condition.empty());
    made += e.documented == ra::Documented::MadeDeterministic;
    raises += e.documented == ra::Documented::Raises;
    undocumented += e.documented == ra::Documented::Undocumented;
  }
  // torch 2.11's use_deterministic_algorithms docstring: 22 rows made deterministic, 26 rows that
  // raise (the interpolate row is one entry per mode: 29); plus the sources it does not cover.
  CHECK(made == 22);
  CHECK(raises == 29);
  CHECK(undocumented >= 6);
  CHECK_THROWS_AS(ra::load_knowledge("/nonexistent/ops.json"), ra::InputError);
}

TEST_CASE("parse_knowledge: measured blocks are read, checked, and say what deterministic mode did") {
  const std::string measured =
      R"(, "measured": [{"device": "NVIDIA H200", "device_type": "cuda", "torch": "2.11.0+cu130",
    "cuda": "13.0", "cudnn": "91900", "date": "2026-11-26", "probe": "index_add", "observed": {"default": "diverged",
    "det": "raised"}, "evidence": "docs/evidence/h200-2026-11-26/h200-probes.json", "note": "seen twice"}]})";
  const std::string good = std::string(kGood).substr(0, std::string(kGood).size() - 1) + measured;
  const ra::KnowledgeBase kb = ra::parse_knowledge(with_entry(good), "kb.json");
  const ra::KnowledgeEntry& e = kb.entries.at(0);
  REQUIRE(e.measured.size() == 1);
  CHECK(e.measured[0].observed.at("det") == "raised");
  CHECK(ra::measured_under_det(e.measured[0]) == ra::Behaviour::Raises);
  CHECK(e.measured_on(ra::Device::cuda()) == &e.measured[0]);
  CHECK(e.measured_on(ra::Device::cpu()) == nullptr);
  CHECK(ra::describe(e.measured[0]) ==
        "NVIDIA H200 (torch 2.11.0+cu130, CUDA 13.0, cuDNN 91900), 2026-11-26, probe index_add: default diverged, det "
        "raised; "
        "seen twice");
  // Reproducible both ways says nothing about what deterministic mode fixes.
  ra::Measurement quiet = e.measured[0];
  quiet.observed = {{"default", "reproducible"}, {"det", "reproducible"}};
  CHECK(!ra::measured_under_det(quiet).has_value());
  quiet.observed = {{"default", "diverged"}, {"det", "reproducible"}};
  CHECK(ra::measured_under_det(quiet) == ra::Behaviour::MadeDeterministic);
  quiet.observed = {{"det", "diverged"}};
  CHECK(ra::measured_under_det(quiet) == ra::Behaviour::Unaffected);
  // Malformed: a verdict that is not one, a date that is not one, an unknown key.
  CHECK(error_of(with_entry(replaced(good, "\"det\": \"raised\"", "\"det\": \"flaky\""))).find("'observed.det'") !=
        std::string::npos);
  CHECK(error_of(with_entry(replaced(good, "2026-11-26", "26/11/2026"))).find("expected YYYY-MM-DD") !=
        std::string::npos);
  CHECK(error_of(with_entry(replaced(good, "\"note\"", "\"notes\""))).find("measured[0]: unknown key 'notes'") !=
        std::string::npos);
}
