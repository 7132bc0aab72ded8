// SPDX-License-Identifier: Apache-2.0
#include "audit/baseline/allowlist.h"

#include "audit/common/errors.h"
#include "reports/render.h"

#include <doctest/doctest.h>

#include <cstdlib>

namespace {

using ra::report::Verdict;

std::string doc(const std::string& entries) { return R"({"allowlist": 1, "entries": [)" + entries + "]}"; }

std::string error_of(const std::string& text) {
  try {
    ra::parse_allowlist(text, "a.json");
  } catch (const ra::InputError& e) {
    return e.what();
  }
  return "";
}

ra::report::ConfigResult config(const std::string& name, Verdict v) {
  ra::report::ConfigResult c;
  c.name = name;
  c.verdict = v;
  return c;
}

ra::report::Report model_report(Verdict v) {
  ra::report::Report r;
  ra::report::Target t;
  t.name = "nd.pt";
  t.configs.push_back(config("default", v));
  r.body = ra::report::RunBody{{{t, {}}}};
  ra::report::finalize(r);
  return r;
}

}  // namespace

TEST_CASE("valid_date") {
  CHECK(ra::valid_date("2027-03-31"));
  CHECK(ra::valid_date("2028-02-29"));
  CHECK(ra::valid_date("2000-02-29"));
  CHECK_FALSE(ra::valid_date("1900-02-29"));
  CHECK_FALSE(ra::valid_date("2027-02-29"));
  CHECK_FALSE(ra::valid_date("2027-04-31"));
  CHECK_FALSE(ra::valid_date("2027-13-01"));
  CHECK_FALSE(ra::valid_date("2027-00-10"));
  CHECK_FALSE(ra::valid_date("2027-1-10"));
  CHECK_FALSE(ra::valid_date("2027/01/10"));
  CHECK_FALSE(ra::valid_date("tomorrow!!"));
  CHECK_FALSE(ra::valid_date(""));
}

TEST_CASE("parse_allowlist: good entries") {
  const auto list = ra::parse_allowlist(doc(R"({"op": "aten::index_add", "reason": "known", "expires": "2027-03-31"},
             {"target": "nd.pt", "reason": "r", "config": "default"})"),
                                        "a.json");
  REQUIRE(list.entries.size() == 2);
  CHECK(list.entries[0].index == 0);
  CHECK(list.entries[0].op == "aten::index_add");
  CHECK(list.entries[0].expires == "2027-03-31");
  CHECK(list.entries[1].target == "nd.pt");
  CHECK(list.entries[1].config == "default");
  CHECK(list.entries[1].expires.empty());
  CHECK(ra::parse_allowlist(doc(""), "a.json").entries.empty());
}

TEST_CASE("parse_allowlist: every malformed case names the file and the entry") {
  CHECK(error_of("{").find("allowlist 'a.json': not valid JSON") == 0);
  CHECK(error_of("[]").find("must be an object") != std::string::npos);
  CHECK(error_of(R"({"entries": []})").find("\"allowlist\" must be 1") != std::string::npos);
  CHECK(error_of(R"({"allowlist": 2, "entries": []})").find("\"allowlist\" must be 1") != std::string::npos);
  CHECK(error_of(R"({"allowlist": 1})").find("\"entries\" must be an array") != std::string::npos);
  CHECK(error_of(R"({"allowlist": 1, "entries": [], "x": 1})").find("unknown key 'x'") != std::string::npos);
  CHECK(error_of(doc("1")) == "allowlist 'a.json': entry 0: must be an object");
  CHECK(error_of(doc(R"({"op": "a", "reason": "r", "why": 1})")) == "allowlist 'a.json': entry 0: unknown key 'why'");
  CHECK(error_of(doc(R"({"op": "a", "reason": "r"}, {"reason": "r"})")) ==
        "allowlist 'a.json': entry 1: needs exactly one of 'op' and 'target'");
  CHECK(error_of(doc(R"({"op": "a", "target": "t", "reason": "r"})")).find("exactly one") != std::string::npos);
  CHECK(error_of(doc(R"({"op": "a"})")) == "allowlist 'a.json': entry 0: needs a non-empty 'reason'");
  CHECK(error_of(doc(R"({"op": "a", "reason": ""})")) == "allowlist 'a.json': entry 0: 'reason' must not be empty");
  CHECK(error_of(doc(R"({"op": 3, "reason": "r"})")) == "allowlist 'a.json': entry 0: 'op' must be a string");
  CHECK(error_of(doc(R"({"op": "a", "reason": "r", "expires": "2027-02-30"})")) ==
        "allowlist 'a.json': entry 0: 'expires' must be a date YYYY-MM-DD, not '2027-02-30'");
  CHECK(error_of(doc(R"({"op": "a", "reason": "r", "config": 1})")).find("'config' must be a string") !=
        std::string::npos);
}

TEST_CASE("load_allowlist: a missing file is an input error") {
  CHECK_THROWS_AS(ra::load_allowlist("/nonexistent/allow.json"), ra::InputError);
  CHECK_THROWS_AS(ra::load_allowlist("/tmp"), ra::InputError);
}

TEST_CASE("expired: an entry holds through its expiry day") {
  ra::AllowEntry e;
  CHECK_FALSE(ra::expired(e, "2099-01-01"));
  e.expires = "2026-10-01";
  CHECK_FALSE(ra::expired(e, "2026-09-30"));
  CHECK_FALSE(ra::expired(e, "2026-10-01"));
  CHECK(ra::expired(e, "2026-10-02"));
}

TEST_CASE("today_date: REPRO_AUDIT_TODAY overrides the clock and is validated") {
  ::setenv("REPRO_AUDIT_TODAY", "2030-01-02", 1);
  CHECK(ra::today_date() == "2030-01-02");
  ::setenv("REPRO_AUDIT_TODAY", "2030-13-02", 1);
  CHECK_THROWS_AS(ra::today_date(), ra::UsageError);
  ::unsetenv("REPRO_AUDIT_TODAY");
  CHECK(ra::valid_date(ra::today_date()));
}

TEST_CASE("apply_allowlist: a target entry allows a diverged model; expiry relative to today") {
  const auto list = ra::parse_allowlist(doc(R"({"target": "nd.pt", "reason": "known", "expires": "2026-10-01"})"), "a");
  auto r = model_report(Verdict::Diverged);
  CHECK(r.exit_code == 1);
  ra::apply_allowlist(r, list, "2026-10-01");
  REQUIRE(r.targets()[0].configs[0].allowed_by);
  CHECK(r.targets()[0].configs[0].allowed_by->entry == 0);
  CHECK(r.targets()[0].configs[0].allowed_by->reason == "known");
  CHECK(r.targets()[0].configs[0].verdict == Verdict::Diverged);
  CHECK(r.exit_code == 0);
  CHECK(r.allowlist_expired.empty());

  ra::apply_allowlist(r, list, "2026-10-02");
  CHECK_FALSE(r.targets()[0].configs[0].allowed_by);
  CHECK(r.exit_code == 1);
  REQUIRE(r.allowlist_expired.size() == 1);
  CHECK(r.allowlist_expired[0] == "allowlist entry 0 for nd.pt expired on 2026-10-01");
}

TEST_CASE("apply_allowlist: an expired entry fails even when another entry allows") {
  const auto list = ra::parse_allowlist(doc(R"({"target": "nd.pt", "reason": "old", "expires": "2020-01-01"},
                                             {"target": "nd.pt", "reason": "new"})"),
                                        "a");
  auto r = model_report(Verdict::Diverged);
  ra::apply_allowlist(r, list, "2026-01-01");
  REQUIRE(r.targets()[0].configs[0].allowed_by);
  CHECK(r.targets()[0].configs[0].allowed_by->entry == 1);
  CHECK(r.exit_code == 1);
}

TEST_CASE("apply_allowlist: config restricts, crashes are never allowed, unmatched entries are ignored") {
  const auto other_config = ra::parse_allowlist(doc(R"({"target": "nd.pt", "reason": "r", "config": "det"})"), "a");
  auto r = model_report(Verdict::Diverged);
  ra::apply_allowlist(r, other_config, "2026-01-01");
  CHECK_FALSE(r.targets()[0].configs[0].allowed_by);
  CHECK(r.exit_code == 1);

  const auto target = ra::parse_allowlist(doc(R"({"target": "nd.pt", "reason": "r"},
                                                 {"op": "x", "reason": "r", "expires": "2000-01-01"})"),
                                          "a");
  auto crashed = model_report(Verdict::Crashed);
  ra::apply_allowlist(crashed, target, "2026-01-01");
  CHECK_FALSE(crashed.targets()[0].configs[0].allowed_by);
  CHECK(crashed.exit_code == 4);
  CHECK(crashed.allowlist_expired.empty());  // the expired entry matches nothing

  auto raised = model_report(Verdict::Raised);
  ra::apply_allowlist(raised, target, "2026-01-01");
  CHECK(raised.targets()[0].configs[0].allowed_by);
  CHECK(raised.exit_code == 0);
}

TEST_CASE("apply_allowlist: op entries cover a probe's op, or every root cause of a traced model") {
  const auto list = ra::parse_allowlist(doc(R"({"op": "aten::index_add", "reason": "a"})"), "a");
  ra::report::Report probes;
  ra::report::Target p;
  p.name = "index_add";
  ra::report::ProbeFacts facts;
  facts.op = "aten::index_add";
  p.configs.push_back(config("default", Verdict::Diverged));
  probes.body = ra::report::ProbesBody{{{p, facts}}, std::nullopt};
  ra::apply_allowlist(probes, list, "2026-01-01");
  CHECK(probes.targets()[0].configs[0].allowed_by);
  CHECK(probes.exit_code == 0);

  // Without a trace a model cannot be allowed by op.
  auto untraced = model_report(Verdict::Diverged);
  ra::apply_allowlist(untraced, list, "2026-01-01");
  CHECK(untraced.exit_code == 1);

  auto traced = model_report(Verdict::Diverged);
  traced.targets()[0].configs[0].trace = ra::report::TraceSummary{};
  ra::report::RootCause rc;
  rc.op = "aten::index_add";
  traced.targets()[0].configs[0].trace->root_causes.push_back(rc);
  ra::apply_allowlist(traced, list, "2026-01-01");
  CHECK(traced.targets()[0].configs[0].allowed_by);
  CHECK(traced.exit_code == 0);

  rc.op = "aten::mm";
  traced.targets()[0].configs[0].trace->root_causes.push_back(rc);
  ra::apply_allowlist(traced, list, "2026-01-01");
  CHECK_FALSE(traced.targets()[0].configs[0].allowed_by);
  CHECK(traced.exit_code == 1);
}

TEST_CASE("apply_allowlist: lint findings by op or model file name") {
  ra::report::LintReport r;
  r.model = "/some/where/m.pt";
  ra::report::LintFinding f;
  f.op = "aten::index_add";
  r.findings.push_back(f);
  f.op = "aten::mm";
  r.findings.push_back(f);
  ra::apply_allowlist(r, ra::parse_allowlist(doc(R"({"op": "aten::index_add", "reason": "a"})"), "a"), "2026-01-01");
  CHECK(r.findings[0].allowed_by);
  CHECK_FALSE(r.findings[1].allowed_by);
  CHECK(r.exit_code == 1);
  ra::apply_allowlist(r, ra::parse_allowlist(doc(R"({"target": "m.pt", "reason": "a"})"), "a"), "2026-01-01");
  CHECK(r.findings[1].allowed_by);
  CHECK(r.exit_code == 0);
  ra::apply_allowlist(r,
                      ra::parse_allowlist(doc(R"({"op": "aten::mm", "reason": "a", "expires": "2025-12-31"},
                                                    {"target": "m.pt", "reason": "a"})"),
                                          "a"),
                      "2026-01-01");
  CHECK(r.exit_code == 1);
  REQUIRE(r.allowlist_expired.size() == 1);
  CHECK(r.allowlist_expired[0] == "allowlist entry 0 for aten::mm expired on 2025-12-31");
}

TEST_CASE("apply_allowlist: renderers say what was allowed and what expired") {
  const auto list =
      ra::parse_allowlist(doc(R"({"target": "nd.pt", "reason": "known op", "expires": "2026-10-01"})"), "a");
  auto r = model_report(Verdict::Diverged);
  ra::apply_allowlist(r, list, "2026-01-01");
  CHECK(ra::report::render_text(r).find("allowed: known op (allowlist entry 0)") != std::string::npos);
  CHECK(ra::report::render_text(r).find("(exit 0)") != std::string::npos);
  const std::string junit = ra::report::render_junit(r);
  CHECK(junit.find("<skipped message=\"diverged, allowed: known op (allowlist entry 0)\"") != std::string::npos);
  CHECK(junit.find("<failure") == std::string::npos);
  CHECK(ra::report::render_markdown(r).find("allowed: known op") != std::string::npos);
  const std::string json = ra::report::render_json(r);
  CHECK(json.find("\"expires\": \"2026-10-01\"") != std::string::npos);
  CHECK(json.find("2026-01-01") == std::string::npos);  // today's date never enters the report

  ra::apply_allowlist(r, list, "2027-01-01");
  CHECK(ra::report::render_text(r).find(
            "allowlist entry 0 for nd.pt expired on 2026-10-01\nverdict: diverged (exit 1)") != std::string::npos);
}

TEST_CASE("same_op: one op whatever the spelling, and no two ops confused") {
  CHECK(ra::normalise_op("aten::index_put_") == "aten::index_put");
  CHECK(ra::normalise_op("index_put") == "aten::index_put");
  CHECK(ra::normalise_op("aten::add.Tensor") == "aten::add");
  CHECK(ra::normalise_op("aten::add_.Tensor") == "aten::add");
  CHECK(ra::normalise_op("aten::__and__") == "aten::__and__");
  CHECK(ra::same_op("aten::index_put", "aten::index_put_"));
  CHECK(ra::same_op("ra_test::nondet_sum", "ra_test::nondet_sum"));
  CHECK_FALSE(ra::same_op("aten::index_add", "aten::index_put"));
  CHECK_FALSE(ra::same_op("ra_test::nondet_sum", "aten::nondet_sum"));
}
