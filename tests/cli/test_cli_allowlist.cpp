// SPDX-License-Identifier: Apache-2.0
// `--allowlist` end to end on `run`, `probes` and `lint` (CPU): allowed findings exit 0, expired
// entries exit 1 naming the entry, malformed files exit 3 before any work. The date comes from
// REPRO_AUDIT_TODAY, so nothing here depends on the clock.
#include "tests/cli/harness.h"

// torch before doctest: c10 defines a CHECK macro that doctest must override.
#include <torch/script.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

using nlohmann::json;
using ra::test::run_cli;

namespace {

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Sets REPRO_AUDIT_TODAY for the binaries a test case runs.
struct Today {
  explicit Today(const char* date) { ::setenv("REPRO_AUDIT_TODAY", date, 1); }
  ~Today() { ::unsetenv("REPRO_AUDIT_TODAY"); }
};

std::vector<std::string> nondet_run(const ra::test::TempDir& dir) {
  ra::test::save_model(dir.file("nd.pt"), ra::test::kNondetSumModel, {{"w", {64, 4096}}});
  return {"run",      dir.file("nd.pt"),  "--shape", "8x64",           "--configs",
          "default",  "--repeats",        "3",       "--load-library", ra::test::test_ops_library(),
          "--report", dir.file("r.json"), "--quiet", "--allowlist",    dir.file("allow.json")};
}

}  // namespace

TEST_CASE("run --allowlist: a target entry allows the diverged model (exit 0), and the report says so") {
  const Today today("2026-06-01");
  ra::test::TempDir dir;
  write(dir.file("allow.json"), R"({"allowlist": 1, "entries": [
    {"op": "aten::unrelated", "reason": "not this one"},
    {"target": "nd.pt", "reason": "test op sums in a random order", "expires": "2026-06-01"}]})");
  const auto r = run_cli(nondet_run(dir));
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("allowed: test op sums in a random order (allowlist entry 1)") != std::string::npos);
  // The verdict line does not hide the divergence behind "reproducible".
  CHECK(r.out.find("verdict: diverged (allowed: test op sums in a random order) (exit 0)\n") != std::string::npos);
  // The op entry cannot match a model without --trace: a note (and a warning without --quiet), not a failure.
  const std::string note =
      "allowlist entry 0 names op aten::unrelated, which only a trace can match in a model: run with --trace";
  CHECK(r.out.find("note: " + note + "\n") != std::string::npos);
  const auto j = ra::test::read_json(dir.file("r.json"));
  CHECK(j["exit_code"] == 0);
  CHECK(j["allowlist_notes"] == json::array({note}));
  const auto& c = j["targets"][0]["configs"][0];
  CHECK(c["verdict"] == "diverged");
  CHECK(c["allowed_by"]["entry"] == 1);
  CHECK(c["allowed_by"]["reason"] == "test op sums in a random order");
  CHECK(c["allowed_by"]["expires"] == "2026-06-01");
  CHECK(j["allowlist_expired"].empty());
}

TEST_CASE("run --allowlist: an expired entry allows nothing and is named (exit 1)") {
  const Today today("2026-10-02");
  ra::test::TempDir dir;
  write(dir.file("allow.json"), R"({"allowlist": 1, "entries": [
    {"target": "nd.pt", "reason": "known", "expires": "2026-10-01"}]})");
  const auto r = run_cli(nondet_run(dir));
  CHECK(r.code == 1);
  CHECK(r.out.find("allowlist entry 0 for nd.pt expired on 2026-10-01") != std::string::npos);
  const auto j = ra::test::read_json(dir.file("r.json"));
  CHECK(j["targets"][0]["configs"][0]["allowed_by"].is_null());
  REQUIRE(j["allowlist_expired"].size() == 1);
  CHECK(j["allowlist_expired"][0] == "allowlist entry 0 for nd.pt expired on 2026-10-01");
}

TEST_CASE("probes --allowlist: the positive control allowed by its op (exit 0)") {
  ra::test::TempDir dir;
  write(dir.file("allow.json"), R"({"allowlist": 1, "entries": [
    {"op": "ra_test::nondet_sum", "reason": "positive control", "config": "default"}]})");
  const auto r = run_cli({"probes", "--load-library", ra::test::test_ops_library(), "--only", "test.nondet-sum",
                          "--configs", "default", "--repeats", "2", "--no-census", "--report", dir.file("r.json"),
                          "--quiet", "--allowlist", dir.file("allow.json")});
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("default: allowed: positive control (allowlist entry 0)") != std::string::npos);
  const auto j = ra::test::read_json(dir.file("r.json"));
  const auto& c = j["targets"][0]["configs"][0];
  CHECK(c["verdict"] == "diverged");
  CHECK(c["allowed_by"]["entry"] == 0);
  CHECK(c["allowed_by"]["expires"].is_null());
}

TEST_CASE("lint --allowlist: a finding allowed by its op (exit 0)") {
  ra::test::TempDir dir;
  write(dir.file("kb.json"), R"KB({"schema": "repro-audit/knowledge", "schema_version": 1, "torch": "2.11",
    "source": "test", "entries": [
    {"id": "index_add.cuda", "title": "index_add on CUDA", "doc_row": "torch.index_add() on CUDA",
     "documented": "made-deterministic", "severity": "error",
     "ops": ["aten::index_add"], "device": "cuda", "direction": "forward", "condition": "always",
     "behaviour": {"deterministic": "made-deterministic"}, "advice": "use_deterministic_algorithms(True)"}]})KB");
  ra::test::save_model(dir.file("m.pt"), R"JIT(
def forward(self, x, idx):
    return torch.index_add(x, 0, idx, self.w)
)JIT",
                       {{"w", {2, 4}}});
  const std::vector<std::string> base = {"lint", dir.file("m.pt"), "--device",
                                         "cuda", "--knowledge",    dir.file("kb.json")};
  CHECK(run_cli(base).code == 1);

  write(dir.file("allow.json"),
        R"({"allowlist": 1, "entries": [{"op": "aten::index_add", "reason": "sorted indices"}]})");
  auto args = base;
  args.insert(args.end(), {"--allowlist", dir.file("allow.json")});
  const auto text = run_cli(args);
  CAPTURE(text.err);
  CHECK(text.code == 0);
  CHECK(text.out.find("allowed: sorted indices (allowlist entry 0)") != std::string::npos);
  args.push_back("--json");
  const auto js = run_cli(args);
  CHECK(js.code == 0);
  const json j = json::parse(js.out);
  REQUIRE(j["findings"].size() == 1);
  CHECK(j["findings"][0]["allowed_by"]["reason"] == "sorted indices");
  CHECK(j["exit_code"] == 0);
}

TEST_CASE("--allowlist: a malformed or missing file exits 3 with one line, before any work") {
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), ra::test::kLinearReluModel, {{"w", {16, 8}}});
  const auto run = [&](const std::string& file) {
    return std::vector<std::string>{"run", dir.file("m.pt"), "--shape", "4x16", "--allowlist", file};
  };
  const std::pair<const char*, const char*> cases[] = {
      {"{", "not valid JSON"},
      {R"({"allowlist": 2, "entries": []})", "\"allowlist\" must be 1"},
      {R"({"allowlist": 1, "entries": [{"reason": "r"}]})", "entry 0: needs exactly one of 'op' and 'target'"},
      {R"({"allowlist": 1, "entries": [{"op": "a", "target": "b", "reason": "r"}]})", "entry 0: needs exactly one"},
      {R"({"allowlist": 1, "entries": [{"op": "a", "reason": "r"}, {"op": "a"}]})",
       "entry 1: needs a non-empty 'reason'"},
      {R"({"allowlist": 1, "entries": [{"op": "a", "reason": "r", "expires": "2026-13-01"}]})",
       "entry 0: 'expires' must be a date"},
      {R"({"allowlist": 1, "entries": [{"op": "a", "reason": "r", "note": "x"}]})", "entry 0: unknown key 'note'"},
  };
  for (const auto& [text, message] : cases) {
    CAPTURE(text);
    write(dir.file("bad.json"), text);
    ra::test::expect_error(dir, run(dir.file("bad.json")), 3, message);
  }
  ra::test::expect_error(dir, run(dir.file("missing.json")), 3, "allowlist");
  write(dir.file("bad.json"), "{");
  ra::test::expect_error(dir, {"probes", "--only", "index_add", "--allowlist", dir.file("bad.json")}, 3, "bad.json");
  ra::test::expect_error(dir, {"lint", dir.file("m.pt"), "--allowlist", dir.file("bad.json")}, 3, "bad.json");
}

TEST_CASE("run --trace --allowlist: an op entry matches whichever spelling the reports use, and says when it cannot") {
  const Today today("2026-06-01");
  ra::test::TempDir dir;
  // The root cause is spelled "ra_test::nondet_sum"; the entry uses the in-place form with an
  // overload, as a list copied from another tool might.
  write(dir.file("allow.json"), R"({"allowlist": 1, "entries": [
    {"op": "ra_test::nondet_sum_.default", "reason": "test op sums in a random order"}]})");
  auto args = nondet_run(dir);
  args.insert(args.end(), {"--trace", "--no-fix-search", "--markdown", dir.file("r.md"), "--junit", dir.file("r.xml"),
                           "--html", dir.file("r.html")});
  const auto r = run_cli(args);
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("verdict: diverged (allowed: test op sums in a random order) (exit 0)") != std::string::npos);
  CHECK(ra::test::read_file(dir.file("r.md"))
            .rfind("## repro-audit: diverged (allowed: test op sums in a random order) (exit 0)", 0) == 0);
  CHECK(ra::test::read_file(dir.file("r.xml"))
            .find("<property name=\"verdict\" value=\"diverged (allowed: test op sums in a random order)\"/>") !=
        std::string::npos);
  CHECK(ra::test::read_file(dir.file("r.html"))
            .find("<span class=\"accepted\">diverged (allowed: test op sums in a random order)</span>") !=
        std::string::npos);

  // Without --trace a model's op entry can match nothing: said on stderr and in the report.
  const auto untraced = run_cli(nondet_run(dir));
  CHECK(untraced.code == 1);
  const std::string note =
      "allowlist entry 0 names op ra_test::nondet_sum_.default, which only a trace can match in a model: run with "
      "--trace";
  CHECK(ra::test::read_json(dir.file("r.json"))["allowlist_notes"] == json::array({note}));
  CHECK(untraced.out.find("note: " + note) != std::string::npos);

  // An entry that matched nothing where it could have: warned on stderr (without --quiet).
  write(dir.file("allow.json"), R"({"allowlist": 1, "entries": [
    {"op": "ra_test::nondet_sum", "reason": "covers the root cause"},
    {"target": "other.pt", "reason": "stale"}]})");
  args.erase(std::find(args.begin(), args.end(), "--quiet"));
  const auto stale = run_cli(args);
  CHECK(stale.code == 0);
  CHECK(stale.err.find("allowlist entry 1 (other.pt) matched no finding") != std::string::npos);
}

TEST_CASE("run --allowlist: 100,000 entries that match nothing are one warning line with a count and the first few") {
  const Today today("2026-06-01");
  ra::test::TempDir dir;
  ra::test::save_model(dir.file("m.pt"), ra::test::kLinearReluModel, {{"w", {4, 4}}});
  constexpr int kEntries = 100000;
  std::string entries;
  for (int i = 0; i < kEntries; ++i)
    entries += std::string(i == 0 ? "" : ",") + R"({"target": "x)" + std::to_string(i) + R"(.pt", "reason": "stale"})";
  write(dir.file("allow.json"), R"({"allowlist": 1, "entries": [)" + entries + "]}");
  const auto r = run_cli({"run", dir.file("m.pt"), "--shape", "2x4", "--configs", "default", "--repeats", "2",
                          "--report", dir.file("r.json"), "--allowlist", dir.file("allow.json")});
  CAPTURE(r.err.substr(0, 2000));
  CHECK(r.code == 0);
  const std::string note =
      "allowlist entries 0 (x0.pt), 1 (x1.pt), 2 (x2.pt) and 99997 more (100000 in all) matched "
      "no finding";
  CHECK(ra::test::count_lines(r.err) == 1);
  CHECK(r.err.find(note) != std::string::npos);
  CHECK(r.out.find("note: " + note + "\n") != std::string::npos);
  CHECK(ra::test::read_json(dir.file("r.json"))["allowlist_notes"] == json::array({note}));
}
