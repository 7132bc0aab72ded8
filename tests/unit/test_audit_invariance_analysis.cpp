// SPDX-License-Identifier: Apache-2.0
// The invariance analysis on hand-made cells (audit/invariance/invariance_analysis.h), and the
// report's JSON round trip (reports/invariance_json.cpp), and the worker's progress file.
#include "audit/invariance/invariance_analysis.h"
#include "audit/invariance/invariance_protocol.h"
#include "reports/json_read.h"
#include "reports/render.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

namespace {

using ra::report::InvarianceCell;
using ra::report::InvarianceConfig;

// A cell whose two anchors got digests `d0` and `d1`; equal when they are the reference's ("a", "b").
InvarianceCell cell(int64_t size, const char* placement, const std::string& d0, const std::string& d1) {
  InvarianceCell c{size, placement, {}};
  c.rows.push_back({0, "output", 0, d0, d0 == "a", d0 == "a" ? 0.0 : 1e-6, d0 == "a" ? 0.0 : 2.0});
  c.rows.push_back({1, "output", 1, d1, d1 == "b", 0, 0});
  return c;
}

InvarianceConfig sweep(const std::vector<std::pair<int64_t, std::string>>& start) {
  InvarianceConfig c;
  c.config = "default";
  for (const auto& [size, d] : start) {
    c.cells.push_back(cell(size, "start", d, size == 1 ? "b" : d + "'"));
    c.cells.push_back(cell(size, "second-call", d, size == 1 ? "b" : d + "'"));
    for (auto& r : c.cells.back().rows) r.equal = true;  // the second call is compared with the first
  }
  return c;
}

}  // namespace

TEST_CASE("analyse: one class is invariant") {
  InvarianceConfig c;
  c.config = "default";
  for (int64_t m : {1, 2, 3})
    c.cells.push_back(cell(m, "start", "a", "b")), c.cells.push_back(cell(m, "middle", "a", "b"));
  ra::invariance::analyse(c);
  CHECK(c.verdict == "invariant");
  REQUIRE(c.classes.size() == 1);
  CHECK(c.classes[0].reference);
  CHECK(c.classes[0].sizes == std::vector<int64_t>{1, 2, 3});
  CHECK(c.advice.front().find("batch freely") != std::string::npos);
}

TEST_CASE("analyse: classes by their smallest size, and the advice that follows") {
  InvarianceConfig c = sweep({{1, "a"}, {2, "x"}, {3, "x"}, {4, "x"}, {8, "x"}});
  ra::invariance::analyse(c);
  CHECK(c.verdict == "variant");
  REQUIRE(c.classes.size() == 2);
  CHECK(c.classes[0].sizes == std::vector<int64_t>{1});
  CHECK(c.classes[1].sizes == std::vector<int64_t>{2, 3, 4, 8});
  CHECK(ra::report::classes_text(c.classes) == "{1} | {2…4,8}");  // 5, 6 and 7 were not tried
  CHECK(c.advice.front().find("batch 1 is the odd one") != std::string::npos);
  CHECK(c.position_dependent.empty());
  CHECK(c.warmup_dependent.empty());
}

TEST_CASE("analyse: position and warm-up dependence apart from size dependence") {
  InvarianceConfig c = sweep({{1, "a"}, {2, "a"}, {3, "a"}});
  c.cells.push_back(cell(3, "end", "z", "b"));
  c.cells[3].rows[0].equal = false;  // size 2's second call differs from its first
  ra::invariance::analyse(c);
  CHECK(c.classes.size() == 2);  // size 1's anchor 1 is "b", the others "a'"
  CHECK(c.position_dependent == std::vector<int64_t>{3});
  CHECK(c.warmup_dependent == std::vector<int64_t>{2});
  CHECK(ra::report::invariance_summary(c).find("position-dependent at 1 size") != std::string::npos);
}

TEST_CASE("classes_text: a range spans only sizes that were measured") {
  // Issue 54: {2…5} for a class over the sizes 2, 4, 5 read as if 3 had been measured.
  using ra::report::SizeClass;
  CHECK(ra::report::classes_text({SizeClass{{1}, true, {}, {}}, SizeClass{{2, 4, 5}, false, {}, {}}}) ==
        "{1} | {2,4,5}");
  CHECK(ra::report::classes_text(
            {SizeClass{{1, 2, 3}, true, {}, {}}, SizeClass{{4, 5, 6, 7, 8, 9, 15, 16, 17, 257}, false, {}, {}}}) ==
        "{1…3} | {4…9,15…17,257}");
  CHECK(ra::report::sizes_text({5, 6, 7, 9, 10, 11}) == "5…7,9…11");
  CHECK(ra::report::sizes_text({}).empty());
}

TEST_CASE("analyse: sparse sizes: the padding advice names no size between two measured ones") {
  // Issue 54: sizes 1,2,3,4,8 with classes {1} | {2,3} | {4,8} advised {4…8}, and a row placed last
  // got other bits at 5, 6 and 7.
  InvarianceConfig c = sweep({{1, "a"}, {2, "x"}, {3, "x"}, {4, "y"}, {8, "y"}});
  ra::invariance::analyse(c);
  REQUIRE(c.classes.size() == 3);
  std::string all;
  for (const auto& a : c.advice) all += a + "\n";
  CHECK(all.find("pad every batch to a size in {4,8} (sizes between them that were not tried are not advised") !=
        std::string::npos);
  CHECK(all.find("4…8") == std::string::npos);
  CHECK(all.find("inferred") == std::string::npos);
  CHECK(ra::invariance::padding_advice(c).find("pad every batch to a size in {4,8} (") == 0);
  // Every size between measured: nothing to say about gaps.
  InvarianceConfig dense = sweep({{1, "a"}, {2, "x"}, {3, "x"}, {4, "y"}, {5, "y"}, {6, "y"}});
  ra::invariance::analyse(dense);
  CHECK(ra::invariance::padding_advice(dense).find("pad every batch to a size in {4…6} and never") == 0);
}

TEST_CASE("analyse: padding advice names only sizes measured free of position dependence, none inferred") {
  // Issue 43: classes {1} | {4…13}, but a row at the end of a batch of 10 or 11 gets other bits.
  InvarianceConfig c = sweep({{1, "a"}, {4, "x"}, {8, "x"}, {10, "x"}, {11, "x"}, {12, "x"}, {13, "x"}, {20, "x"}});
  c.cells.push_back(cell(10, "end", "z", "x'"));
  c.cells.push_back(cell(11, "end", "z", "x'"));
  ra::invariance::analyse(c);
  REQUIRE(c.classes.size() == 2);
  CHECK(c.position_dependent == std::vector<int64_t>{10, 11});
  std::string all;
  for (const auto& a : c.advice) all += a + "\n";
  CHECK(all.find("{4…13}") == std::string::npos);
  CHECK(all.find("gives a row the same bits") == std::string::npos);  // never beside the position finding
  CHECK(all.find("pad every batch to a size in {4,8,12,13,20} (sizes between them that were not tried are not "
                 "advised: measure them with --sizes)") != std::string::npos);
  CHECK(all.find("inferred") == std::string::npos);
  CHECK(all.find("depend on its place in the batch at sizes 10,11") != std::string::npos);
  CHECK(ra::invariance::padding_advice(c).find("{4,8,12,13,20}") != std::string::npos);
}

TEST_CASE("analyse: one class with a row's place mattering at every batched size gets no padding advice") {
  InvarianceConfig c = sweep({{1, "a"}, {2, "a"}, {3, "a"}});
  for (auto& k : c.cells) k.rows.pop_back();  // one anchor: a single class
  c.cells.push_back(cell(2, "end", "z", "b"));
  c.cells.push_back(cell(3, "end", "z", "b"));
  c.cells[c.cells.size() - 1].rows.pop_back(), c.cells[c.cells.size() - 2].rows.pop_back();
  ra::invariance::analyse(c);
  REQUIRE(c.classes.size() == 1);
  CHECK(c.verdict == "variant");
  CHECK(c.advice.front().find("padding alone is no fix") != std::string::npos);
  CHECK(c.advice.front().find("batch freely") == std::string::npos);
}

TEST_CASE("compare_configs: an invariant configuration is named as a fix") {
  std::vector<InvarianceConfig> configs{sweep({{1, "a"}, {4, "x"}}), sweep({{1, "a"}})};
  configs[1].config = "threads-1";
  for (auto& c : configs) ra::invariance::analyse(c);
  ra::invariance::compare_configs(configs);
  CHECK(configs[0].advice.back().find("threads-1 is invariant") != std::string::npos);
}

TEST_CASE("auto_sizes: 1..9, powers of two and their neighbours up to the budget") {
  CHECK(ra::auto_sizes(64) == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64});
  CHECK(ra::auto_sizes(3) == std::vector<int64_t>{1, 2, 3});
}

TEST_CASE("invariance_to_json: read back as written, and finalize's exit code") {
  ra::report::Report r;
  r.tool_version = "0.1.0";
  r.command = {"repro-audit", "invariance", "m.pt"};
  ra::report::Invariance inv;
  inv.model = "m.pt", inv.kind = "torchscript", inv.device = "cpu", inv.input = "rows.pt";
  inv.outputs = {"output"};
  inv.control = {true, "passed"};
  InvarianceConfig c = sweep({{1, "a"}, {4, "x"}});
  ra::invariance::analyse(c);
  inv.configs = {c};
  r.body = inv;
  ra::report::finalize(r);
  CHECK(r.exit_code == 1);
  const auto back = ra::report::report_from_json(ra::report::to_json(r));
  REQUIRE(std::holds_alternative<ra::report::Invariance>(back.body));
  CHECK(ra::report::render_text(back) == ra::report::render_text(r));
  CHECK(std::get<ra::report::Invariance>(back.body).configs[0].classes.size() == 2);
  CHECK(std::get<ra::report::Invariance>(back.body).configs[0].cells[2].rows[0].max_ulp == 2.0);
}

// A verify sweep of blocks 1…4 at every place among tokens 5…10 (from 0; the decode step at token 5
// alone): block b starting at token s holds tokens s…s+b-1, each equal to its decode step unless
// `differs` names (b, s, its place in the block).
InvarianceConfig verify_sweep(const std::vector<std::tuple<int64_t, int64_t, int64_t>>& differs) {
  InvarianceConfig c;
  c.config = "default";
  for (int64_t b = 1; b <= 4; ++b)
    for (int64_t s = 5; s + b <= (b == 1 ? 6 : 11); ++s) {
      InvarianceCell block{b, "block", {}, s};
      for (int64_t j = 0; j < b; ++j) {
        const bool equal = std::find(differs.begin(), differs.end(), std::tuple{b, s, j}) == differs.end();
        block.rows.push_back({0, "output/logits", j, equal ? "d" : "x", equal, equal ? 0.0 : 1e-7, equal ? 0.0 : 3.0});
      }
      c.cells.push_back(std::move(block));
    }
  return c;
}

TEST_CASE("analyse: verify blocks are classed by whether every token got the decode step's bits") {
  InvarianceConfig same = verify_sweep({});
  ra::invariance::analyse(same);
  CHECK(same.verdict == "invariant");
  REQUIRE(same.classes.size() == 1);
  CHECK(same.classes[0].sizes == std::vector<int64_t>{1, 2, 3, 4});
  CHECK(same.advice.front().find("speculative decoding accepts") != std::string::npos);
  CHECK(same.position_dependent.empty());  // a block's tokens are not places in a batch

  // Blocks of 3 differ at one place only (starting at token 7), blocks of 4 at their first.
  InvarianceConfig late = verify_sweep({{3, 7, 1}, {4, 5, 0}, {4, 5, 2}});
  ra::invariance::analyse(late);
  CHECK(late.verdict == "variant");
  REQUIRE(late.classes.size() == 2);
  CHECK(late.classes[0].sizes == std::vector<int64_t>{1, 2});
  CHECK(late.classes[1].sizes == std::vector<int64_t>{3, 4});
  CHECK(late.advice[0].find("a verify block of 3,4 tokens gives a token other bits than the decode step that ends at "
                            "it (first: blocks of 3 tokens at tokens 8…10, anchor 0's output/logits)") !=
        std::string::npos);
  CHECK(late.advice[1].find("blocks of 2 tokens were measured to give every token the decode step's bits at every "
                            "place among tokens 6…11") != std::string::npos);
  CHECK(ra::invariance::padding_advice(late) ==
        "verify with blocks of 2 tokens (each measured at every place among "
        "tokens 6…11)");
  CHECK(ra::report::invariance_summary(late) == "variant: 2 classes of block lengths");
  // The per-output classes a baseline keeps are the same grouping.
  const auto outputs = ra::report::output_classes(late);
  REQUIRE(outputs.size() == 1);
  CHECK(outputs[0].classes.size() == 2);
  CHECK(outputs[0].classes[1].sizes == std::vector<int64_t>{3, 4});

  InvarianceConfig all = verify_sweep({{2, 9, 0}, {3, 5, 0}, {4, 6, 0}});  // each length at one of its places
  ra::invariance::analyse(all);
  CHECK(all.advice[1].find("no draft length is safe") != std::string::npos);
  CHECK(ra::invariance::padding_advice(all).empty());
}

TEST_CASE("invariance_to_json: the axis, draft, positions and places are read back; without them the batch") {
  ra::report::Report r;
  r.tool_version = "0.1.0";
  r.command = {"repro-audit", "invariance", "m.pt2", "--axis", "verify"};
  ra::report::Invariance inv;
  inv.model = "m.pt2", inv.kind = "a torch.export archive", inv.device = "cpu", inv.input = "rows.pt";
  inv.outputs = {"output/logits"};
  inv.control = {true, "passed"};
  inv.axis = "verify", inv.draft = 3, inv.positions = 3;
  InvarianceConfig c = verify_sweep({{4, 6, 0}});
  ra::invariance::analyse(c);
  inv.configs = {c};
  r.body = inv;
  ra::report::finalize(r);
  auto j = ra::report::to_json(r);
  const auto back = ra::report::report_from_json(j);
  CHECK(std::get<ra::report::Invariance>(back.body).axis == "verify");
  CHECK(std::get<ra::report::Invariance>(back.body).draft == 3);
  CHECK(std::get<ra::report::Invariance>(back.body).positions == 3);
  CHECK(std::get<ra::report::Invariance>(back.body).configs[0].cells.back().start == 7);  // blocks of 4 from token 7
  CHECK(ra::report::render_text(back) == ra::report::render_text(r));
  CHECK(ra::report::render_text(r).find("(block of 4 tokens at tokens 7…10, its token 0, anchor 0, output/logits)") !=
        std::string::npos);
  CHECK(ra::report::render_text(r).find("block lengths tried: 1,2,3,4") != std::string::npos);
  j["invariance"].erase("positions");  // a verify report before issue 54: one place per block length
  CHECK(std::get<ra::report::Invariance>(ra::report::report_from_json(j).body).positions == 1);
  j["invariance"].erase("axis");
  j["invariance"].erase("draft");
  CHECK(std::get<ra::report::Invariance>(ra::report::report_from_json(j).body).axis == "batch");
  j["invariance"]["axis"] = "sideways";
  CHECK_THROWS(ra::report::report_from_json(j));
}

TEST_CASE("nondeterministic: no classes and no padding advice; finalize exits 1") {
  InvarianceConfig c = sweep({{1, "a"}});
  ra::invariance::nondeterministic(c, "anchor 0's output alone gets other bits on every call");
  ra::invariance::analyse(c);  // leaves it as it is
  CHECK(c.verdict == "nondeterministic");
  CHECK(c.classes.empty());
  CHECK(ra::invariance::padding_advice(c).empty());
  REQUIRE(c.advice.size() == 1);
  CHECK(c.advice[0].find("pad every batch") == std::string::npos);
  std::vector<InvarianceConfig> configs{c};
  ra::invariance::compare_configs(configs);
  CHECK(configs[0].advice.size() == 1);  // no "padding or bucketing is the fix"
  ra::report::Report r;
  r.tool_version = "0.1.0";
  r.command = {"repro-audit", "invariance", "m.pt"};
  auto& inv = r.body.emplace<ra::report::Invariance>();
  inv.model = "m.pt", inv.kind = "torchscript", inv.device = "cpu";
  inv.control = {true, "passed"};
  inv.configs = {c};
  ra::report::finalize(r);
  CHECK(r.exit_code == 1);
  CHECK(ra::report::invariance_summary(c).rfind("nondeterministic: anchor 0", 0) == 0);
  const auto back = ra::report::report_from_json(ra::report::to_json(r));
  REQUIRE(std::holds_alternative<ra::report::Invariance>(back.body));
  CHECK(std::get<ra::report::Invariance>(back.body).configs[0].verdict == "nondeterministic");
}

TEST_CASE("finalize_invariance: a model that failed at one size exits 3, its sizes before kept") {
  InvarianceConfig c = sweep({{1, "a"}, {2, "x"}});
  c.message = "the model fails on a batch of 3: RuntimeError: no";
  ra::invariance::analyse(c);
  CHECK(c.verdict == "variant");  // the sizes measured before it
  ra::report::Report r;
  auto& inv = r.body.emplace<ra::report::Invariance>();
  inv.control = {true, "passed"};
  inv.configs = {c};
  ra::report::finalize(r);
  CHECK(r.exit_code == 3);
  CHECK(ra::report::invariance_summary(c).find("stopped where the model fails on a batch of 3") != std::string::npos);
}

// The worker's progress file (SweepProgress) as the front reads it: what the worker wrote, or
// nothing for a file that is missing, garbled, cut short or out of range (the line then has no detail).
TEST_CASE("sweep progress: read back as written; anything else reads as nothing") {
  // Plain POSIX calls: std::filesystem::remove_all resolves into libtorch's copy here and crashes.
  std::string dir = "/tmp/ra-sweep-progress-XXXXXX";
  REQUIRE(::mkdtemp(dir.data()) != nullptr);
  const std::string path = ra::sweep_progress_path(dir + "/invariance-0.result.json");
  CHECK(path == dir + "/invariance-0.result.json.progress");
  CHECK_FALSE(ra::read_sweep_progress(path));  // not written yet
  const auto write = [&](const std::string& text) { std::ofstream(path, std::ios::trunc) << text; };
  write(ra::to_text({3, 9, 8, 12.5}));
  const auto p = ra::read_sweep_progress(path);
  REQUIRE(p);
  CHECK(p->done == 3);
  CHECK(p->planned == 9);
  CHECK(p->current == 8);
  CHECK(p->eta_s == doctest::Approx(12.5));
  const std::vector<std::string> garbled = {"",
                                            "{",
                                            "{\"done\": 3, \"planned\"",
                                            "[1,2,3]",
                                            "{\"done\": 3, \"planned\": 9}",
                                            "{\"done\": 10, \"planned\": 9, \"current\": 0}",
                                            "{\"done\": -1, \"planned\": 9, \"current\": 0}",
                                            "{\"done\": \"3\", \"planned\": 9, \"current\": 0}",
                                            std::string(5000, ' ')};
  for (const std::string& bad : garbled) {
    write(bad);
    CHECK_MESSAGE(!ra::read_sweep_progress(path), bad.substr(0, 60));
  }
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}
