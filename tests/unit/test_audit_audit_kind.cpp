// SPDX-License-Identifier: Apache-2.0
// The skeleton every audit runs on (audit/skeleton/audit_kind.h), with a kind that runs nothing:
// the order of the parts, the targets kept, the report tail, and the empty shard.
#include "audit/skeleton/audit_kind.h"
#include "audit/trial/config.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

class FakeKind : public ra::AuditKind {
 public:
  std::vector<std::string> calls;
  ra::AuditPlan plan() override {
    calls.push_back("plan");
    ra::AuditPlan p;
    p.environment = {{"torch", "x"}};
    ra::report::RunBody models;
    for (const char* name : {"a", "b"}) {
      ra::report::Target t;
      t.name = name;
      models.targets.push_back({t, {}});
    }
    p.body = models;
    p.identity = {{"kind", "fake"}};
    return p;
  }
  void run(const ra::Cells& cells) override {
    calls.push_back("run");
    ran = cells.configs;
  }
  void analyse(const ra::Cells& cells, ra::report::Report& rep) override {
    calls.push_back("analyse");
    for (size_t t = 0; t < cells.configs.size(); ++t)
      for (const size_t c : cells.configs[t]) {
        ra::report::ConfigResult r;
        r.name = "c" + std::to_string(c);
        r.verdict = ra::report::Verdict::Reproducible;
        rep.targets()[t].configs.push_back(r);
      }
  }
  void summarise(ra::report::Report&) override { calls.push_back("summarise"); }
  std::vector<std::vector<size_t>> ran;
};

ra::SessionOptions session() {
  ra::SessionOptions o;
  o.configs = ra::parse_configs({"default", "det"}, 2);
  o.command = {"repro-audit", "fake"};
  o.tolerant = true;
  return o;
}

}  // namespace

TEST_CASE("run_kind: plan, run, analyse and summarise in order, every cell unsharded, the report tail set") {
  FakeKind kind;
  ra::SessionOptions o = session();
  std::vector<std::string> checked;
  o.check_targets = [&](const ra::report::Body& body, const std::vector<std::string>& configs) {
    for (const auto& t : ra::report::common_targets(body)) checked.push_back(t.name);
    CHECK(configs == std::vector<std::string>{"default", "det"});
  };
  const ra::report::Report rep = ra::run_kind(kind, o, std::nullopt);
  CHECK(kind.calls == std::vector<std::string>{"plan", "run", "analyse", "summarise"});
  CHECK(checked == std::vector<std::string>{"a", "b"});
  CHECK(kind.ran == std::vector<std::vector<size_t>>{{0, 1}, {0, 1}});
  REQUIRE(rep.targets().size() == 2);
  CHECK(rep.targets()[1].configs.size() == 2);
  CHECK(rep.command == o.command);
  CHECK(rep.environment["torch"] == "x");
  CHECK(rep.tolerant);
  CHECK_FALSE(rep.shard);
  CHECK(rep.exit_code == 0);
}

TEST_CASE("run_kind: an empty shard runs and analyses nothing, keeps no target and records the shard") {
  FakeKind kind;
  ra::fleet::ShardOptions shard;
  shard.request.index = 5;
  shard.request.count = 5;  // 4 cells, 5 shards: the fifth has none
  shard.request.source = "--shard";
  shard.report = "/nonexistent/shard.json";
  const ra::report::Report rep = ra::run_kind(kind, session(), shard);
  CHECK(kind.calls == std::vector<std::string>{"plan", "summarise"});
  CHECK(rep.targets().empty());
  REQUIRE(rep.shard);
  CHECK(rep.shard->index == 5);
}
