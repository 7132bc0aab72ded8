// SPDX-License-Identifier: Apache-2.0
// exec's front-side logic (audit/exec/): artifact patterns, metrics and their first diverging
// step, byte statistics, the file-kind sniff, and the seeding checklist and switches built from
// hook reports. Running commands and taking files is covered through the binary (ctest exec).
#include "audit/common/errors.h"
#include "audit/exec/artifacts.h"
#include "audit/exec/hook_report.h"
#include "audit/exec/metrics.h"
#include "tests/unit/switch_values.h"
#include "tests/unit/temp_folder.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

namespace {

using nlohmann::json;

std::string temp_file(const std::string& name, const std::string& bytes) {
  const std::string path =
      std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/ra-exec-unit-" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

ra::exec::HookRun one_process(json report) {
  report["format"] = "repro-audit/exec-hook-1";
  ra::exec::HookRun run;
  run.processes.push_back({report, -1});
  return run;
}

const ra::report::ChecklistItem* item(const std::vector<ra::report::ChecklistItem>& items, const std::string& id) {
  for (const auto& i : items)
    if (i.id == id) return &i;
  return nullptr;
}

}  // namespace

TEST_CASE("artifact patterns: placeholders and their errors") {
  using ra::exec::parse_artifact_pattern;
  const auto p = parse_artifact_pattern("{out}/model-{rank}-{trial}.pt");
  CHECK(p.out);
  CHECK(p.rank);
  CHECK(p.trial);
  CHECK_FALSE(parse_artifact_pattern("ckpt/*.pt").trial);
  CHECK_THROWS_AS(parse_artifact_pattern(""), ra::UsageError);
  CHECK_THROWS_AS(parse_artifact_pattern("a/{out}/x"), ra::UsageError);
  CHECK_THROWS_AS(parse_artifact_pattern("{out}/"), ra::UsageError);
  CHECK_THROWS_AS(parse_artifact_pattern("m-{rank}-{rank}.pt"), ra::UsageError);
  CHECK_THROWS_WITH_AS(parse_artifact_pattern("x-{epoch}.pt"), doctest::Contains("unknown placeholder {epoch}"),
                       ra::UsageError);
}

TEST_CASE(
    "place_artifact_pattern: below the working directory, {out} or an --artifact-root; '..' and the outside refused") {
  using ra::exec::parse_artifact_pattern;
  const auto placed = [](const std::string& text, std::vector<std::string> roots = {}) {
    auto p = parse_artifact_pattern(text);
    ra::exec::place_artifact_pattern(p, "/w/proj", roots, {"/home/u/proj"});
    return p;
  };
  CHECK_THROWS_WITH_AS(parse_artifact_pattern("{out}/../../../*"), doctest::Contains("'..' leaves $REPRO_AUDIT_OUT"),
                       ra::UsageError);
  CHECK(parse_artifact_pattern("{out}/./a//b").below == std::vector<std::string>{"a", "b"});
  CHECK(placed("./ck/*.pt").below == std::vector<std::string>{"ck", "*.pt"});
  CHECK(placed("./ck/*.pt").root == 0);
  CHECK_THROWS_WITH_AS(placed("../x/*"), doctest::Contains("reaches outside the working directory"), ra::UsageError);
  CHECK_THROWS_AS(placed("ck/../../x"), ra::UsageError);
  CHECK_THROWS_AS(placed("/etc/*"), ra::UsageError);
  CHECK_THROWS_AS(placed("/w/proj"), ra::UsageError);             // names the folder itself
  CHECK_THROWS_AS(placed("/w/proj/../other/x"), ra::UsageError);  // '..' only where a root allows it
  const auto inside = placed("/w/proj/ck/x.pt");
  CHECK(inside.root == 0);
  CHECK(inside.below == std::vector<std::string>{"ck", "x.pt"});
  CHECK(placed("/home/u/proj/x.pt").root == 0);  // the working directory by another name
  const auto rooted = placed("../shared/ck/*.pt", {"/w/shared", "/w/shared/ck"});
  CHECK(rooted.root == 2);  // the deepest root
  CHECK(rooted.below == std::vector<std::string>{"*.pt"});
  CHECK(rooted.shown == "/w/shared/ck");
}

TEST_CASE("match_artifact_path: wildcards within one component, {rank} captured, {trial} kept in the name") {
  auto p = ra::exec::parse_artifact_pattern("{out}/ck-{trial}/model-{rank}*.pt");
  const auto m = ra::exec::match_artifact_path(p, "ck-3/model-12b.pt", 3);
  REQUIRE(m);
  CHECK(m->name == "ck-{trial}/model-12b.pt");
  CHECK(m->rank == 12);
  CHECK_FALSE(ra::exec::match_artifact_path(p, "ck-4/model-12b.pt", 3));
  CHECK(ra::exec::match_artifact_path(p, "ck-4/model-1.pt", -1));  // before the first run: any number
  CHECK_FALSE(ra::exec::match_artifact_path(p, "ck-3/model-.pt", 3));
  CHECK_FALSE(ra::exec::match_artifact_path(p, "ck-3/sub/model-1.pt", 3));
  p = ra::exec::parse_artifact_pattern("{out}/*");
  CHECK_FALSE(ra::exec::match_artifact_path(p, "..", 1));
  CHECK_FALSE(ra::exec::match_artifact_path(p, ".hidden", 1));
  CHECK(ra::exec::match_artifact_path(ra::exec::parse_artifact_pattern("{out}/.*"), ".hidden", 1));
  CHECK_FALSE(ra::exec::match_artifact_path(ra::exec::parse_artifact_pattern("{out}/.*"), "..", 1));
  CHECK(ra::exec::match_artifact_path(ra::exec::parse_artifact_pattern("{out}/[!a-c]?.txt"), "dx.txt", 1));
  CHECK_FALSE(ra::exec::match_artifact_path(ra::exec::parse_artifact_pattern("{out}/[!a-c]?.txt"), "bx.txt", 1));
  // Many stars against a long name: a table, not backtracking.
  CHECK_FALSE(ra::exec::match_artifact_path(ra::exec::parse_artifact_pattern("{out}/" + std::string(200, '*') + "b"),
                                            std::string(250, 'a'), 1));
}

TEST_CASE("metrics: capture groups, exact comparison, the first diverging step") {
  using namespace ra::exec;
  const auto loss = parse_metric("loss=loss=([0-9.]+)");
  const auto acc = parse_metric("acc=acc [0-9]+");  // no group: the whole match
  const auto scan = extract_metrics({loss, acc}, "step 1 loss=0.50 acc 7\nnoise\nstep 2 loss=0.25\r\nacc 9\n");
  const auto& values = scan.values;
  CHECK(values.at("loss") == std::vector<std::string>{"0.50", "0.25"});
  CHECK(scan.lines.at("loss") == std::vector<std::string>{"step 1 loss=0.50 acc 7", "step 2 loss=0.25"});
  CHECK(values.at("acc") == std::vector<std::string>{"acc 7", "acc 9"});
  CHECK(metric_entry("loss", {"0.50", "0.25"}).digest == metric_entry("loss", {"0.50", "0.25"}).digest);
  CHECK(metric_entry("loss", {"0.50", "0.25"}).digest != metric_entry("loss", {"0.50", "0.250"}).digest);  // exact text
  CHECK(metric_entry("loss", {"0.50", "0.25"}).name == "metric:loss");

  const auto s = metric_difference({"1.0", "0.5", "0.25"}, {"1.0", "0.5", "0.26"});
  CHECK(s.first_index == 2);
  CHECK(s.differing == 1);
  CHECK(s.max_abs_diff == doctest::Approx(0.01));
  CHECK(s.note == "first differs at occurrence 3 of 3: 0.25 vs 0.26");
  // Named by the line the script printed there, not by a step number of the tool's (issue 43).
  const auto named = metric_difference({"0.9", "0.8"}, {"0.9", "0.7"}, {"step 0 loss 0.9", "step 1 loss 0.8"});
  CHECK(named.note == "first differs at occurrence 2 of 2 (\"step 1 loss 0.8\"): 0.8 vs 0.7");
  // A progress bar redrawn in place shows its last state; a long line is cut at a character.
  const auto bar = extract_metrics({loss}, "10% loss=0.9\r100% loss=0.5 " + std::string(200, 'x') + "\n");
  CHECK(bar.lines.at("loss").front().rfind("100% loss=0.5 x", 0) == 0);
  CHECK(bar.lines.at("loss").front().size() == ra::exec::kShownLine + std::string("…").size());
  const auto shorter = metric_difference({"1", "2"}, {"1"});
  CHECK(shorter.first_index == 1);
  CHECK(shorter.note.find("2 occurrences vs 1") != std::string::npos);
  const auto words = metric_difference({"ok"}, {"nan?"});
  CHECK(std::isnan(words.max_abs_diff));

  CHECK_THROWS_AS(parse_metric("=x"), ra::UsageError);
  CHECK_THROWS_AS(parse_metric("loss"), ra::UsageError);
  CHECK_THROWS_AS(parse_metric("lo ss=x"), ra::UsageError);
  CHECK_THROWS_WITH_AS(parse_metric("loss=([0-9"), doctest::Contains("does not compile"), ra::UsageError);
}

TEST_CASE("extract_metrics: lines over kMaxMetricLine are matched on their first bytes, and counted") {
  using namespace ra::exec;
  const auto all = parse_metric("all=^(.*)$");
  const auto tail = parse_metric("tail=END");
  const std::string at_cap(kMaxMetricLine, 'a');
  const std::string over(kMaxMetricLine + 10, 'b');
  const std::string text =
      "x\n" + at_cap + "\r\n" + over + "END\n" + std::string(3 * kMaxMetricLine, 'c');  // last: no '\n'
  const MetricScan scan = extract_metrics({all, tail}, text);
  REQUIRE(scan.values.at("all").size() == 4);
  CHECK(scan.values.at("all")[1] == at_cap);  // exactly the cap, its '\r' dropped: not cut
  CHECK(scan.values.at("all")[2] == over.substr(0, kMaxMetricLine));
  CHECK(scan.values.at("all")[3] == std::string(kMaxMetricLine, 'c'));
  CHECK(scan.values.at("tail").empty());  // END lies beyond the cap
  CHECK(scan.lines_cut == 2);
  CHECK(scan.first_cut_line == 3);
  CHECK(cut_lines_note(scan).find("longer than 64 KiB") != std::string::npos);
  // Fed in chunks that split lines anywhere, a stream gives the same.
  std::istringstream in(text);
  const MetricScan streamed = extract_metrics({all, tail}, in);
  CHECK(streamed.values == scan.values);
  CHECK(streamed.lines_cut == 2);
  // The issue's reproducer: a 50 KB line (std::regex overflowed its stack) gives its value whole.
  std::string line = "loss=0.5 tensor([";
  for (int i = 0; i < 6250; ++i) line += "0.1234, ";
  line += "])";
  const MetricScan one = extract_metrics({parse_metric("loss=loss=(.*)")}, line + "\n");
  CHECK(one.values.at("loss") == std::vector<std::string>{line.substr(5)});
  CHECK(one.lines_cut == 0);
}

TEST_CASE("parse_metric: what RE2 refuses is named") {
  using namespace ra::exec;
  CHECK_THROWS_WITH_AS(parse_metric("x=(a)\\1"), doctest::Contains("a backreference (\\1)"), ra::UsageError);
  CHECK_THROWS_WITH_AS(parse_metric("x=loss(?=[0-9])"), doctest::Contains("a lookahead"), ra::UsageError);
  CHECK_THROWS_WITH_AS(parse_metric("x=(?<!a)b"), doctest::Contains("a negative lookbehind"), ra::UsageError);
  CHECK_THROWS_WITH_AS(parse_metric("x=(a)\\1"), doctest::Contains("RE2"), ra::UsageError);
  // Byte semantics, as before: any byte matches '.', and a pattern's UTF-8 matches its bytes.
  const auto any = parse_metric("v=v=(.)");
  CHECK(extract_metrics({any}, std::string("v=\xff\n")).values.at("v") == std::vector<std::string>{"\xff"});
  CHECK(extract_metrics({parse_metric("v=λ=([0-9]+)")}, "λ=42\n").values.at("v") == std::vector<std::string>{"42"});
  // An optional group that took no part gives an empty value, as std::regex did.
  CHECK(extract_metrics({parse_metric("v=loss(=[0-9]+)?")}, "loss\n").values.at("v") == std::vector<std::string>{""});
}

TEST_CASE("byte statistics and the file-kind sniff") {
  using namespace ra::exec;
  const auto a = temp_file("a.bin", "abcdefgh");
  const auto b = temp_file("b.bin", "abcXefgY");
  const auto c = temp_file("c.bin", "abcdefghij");
  const auto ab = byte_difference(a, b);
  CHECK(ab.numel == 8);
  CHECK(ab.differing == 2);
  CHECK(ab.first_index == 3);
  const auto ac = byte_difference(a, c);
  CHECK(ac.differing == 2);
  CHECK(ac.first_index == 8);
  CHECK(ac.note.find("sizes differ") != std::string::npos);
  CHECK(sniff_kind(a) == "bytes");
  std::string st = std::string("\x0d\0\0\0\0\0\0\0", 8) + "{\"x\":\"y\"}    ";  // 13 header bytes
  CHECK(sniff_kind(temp_file("s.safetensors", st)) == "safetensors");
  std::string zip = "PK\x03\x04" + std::string(22, '\0') + std::string("\x0d\0\0\0", 4) + "ckpt/data.pkl";
  CHECK(sniff_kind(temp_file("z.pt", zip)) == "torch.save");
  for (const char* f : {"a.bin", "b.bin", "c.bin", "s.safetensors", "z.pt"})
    std::remove((std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/ra-exec-unit-" + f).c_str());
}

TEST_CASE("seeding checklist: a late seed, an unseeded DataLoader with workers, a dataset's RNG, a checkpoint") {
  const json report = {
      {"torch", true},
      {"torch_drawn", true},
      {"python_drawn", false},
      {"seeds", {{"torch", {{"where", "train.py:30"}, {"value", "0"}, {"drawn_before", true}, {"seq", 3}}}}},
      {"loaders",
       {{{"where", "train.py:20"},
         {"iterated_at", "train.py:21"},
         {"num_workers", 2},
         {"shuffle", true},
         {"generator", false},
         {"torch_seeded", false},
         {"dataset", "Noisy"},
         {"dataset_rngs", {{{"attribute", "rng"}, {"type", "random.Random"}, {"seeded", true}}}}}}},
      {"first_op",
       {{"op", "torch.nn.functional.linear"},
        {"where", "train.py:25"},
        {"seq", 5},
        {"switches", {{"deterministic", "off"}}}}},
      {"model_built", {{"where", "train.py:10"}, {"seq", 1}}},
      {"sets", {{{"key", "cudnn.benchmark"}, {"value", "on"}, {"where", "train.py:12"}, {"seq", 2}}}},
      {"saves",
       {{{"path", "ckpt.pt"},
         {"where", "train.py:40"},
         {"kind", "checkpoint"},
         {"holds", {"cpu"}},
         {"needed", {"cpu", "python"}}}}},
  };
  const auto items = ra::exec::seeding_checklist(one_process(report));
  REQUIRE(item(items, "seed.torch"));
  CHECK(item(items, "seed.torch")->status == "missing");
  CHECK(item(items, "seed.torch")->text.find("came after the first draw") != std::string::npos);
  CHECK(item(items, "seed.torch")->where == "train.py:30");
  CHECK(item(items, "seed.python")->status == "not-applicable");
  REQUIRE(item(items, "dataloader"));
  CHECK(item(items, "dataloader")->status == "missing");
  CHECK(item(items, "dataloader")->where == "train.py:20");
  CHECK(item(items, "dataloader")->text.find("worker_init_fn") == std::string::npos);
  REQUIRE(item(items, "dataloader.rng"));
  CHECK(item(items, "dataloader.rng")->text.find("each of the 2 workers gets a copy that nothing reseeds") !=
        std::string::npos);
  CHECK(item(items, "switches")->status == "missing");
  CHECK(item(items, "switches")->where == "train.py:12");
  REQUIRE(item(items, "checkpoint"));
  CHECK(item(items, "checkpoint")->status == "note");  // about resuming, never a divergence's cause
  CHECK(item(items, "checkpoint")->text.find("Python (random.getstate())") != std::string::npos);
  CHECK(item(items, "checkpoint")->artifact == "ckpt.pt");
}

TEST_CASE("seeding checklist: a seeded program, and a loader with its own generator") {
  const json report = {
      {"torch", true},
      {"torch_drawn", true},
      {"python_drawn", true},
      {"seeds",
       {{"torch", {{"where", "t.py:3"}, {"value", "0"}, {"drawn_before", false}}},
        {"python", {{"where", "t.py:4"}, {"value", "0"}, {"drawn_before", false}}}}},
      {"loaders",
       {{{"where", "t.py:9"},
         {"num_workers", 0},
         {"shuffle", true},
         {"generator", true},
         {"dataset", "D"},
         {"dataset_rngs", json::array()}}}},
  };
  const auto items = ra::exec::seeding_checklist(one_process(report));
  for (const auto& i : items)
    if (i.id != "switches") CHECK_MESSAGE(i.status == "ok", i.id << ": " << i.text);
  CHECK(item(items, "switches")->status == "not-applicable");
}

TEST_CASE("switches from a hook report: effective values, the program's own settings, and none without a hook") {
  ra::Config det{"det", {{"deterministic", "on"}, {"cublas_workspace", ":4096:8"}}};
  const json report = {{"torch", true},
                       {"effective", {{"deterministic", "on"}, {"cudnn.benchmark", "on"}, {"threads", "1"}}},
                       {"sets", {{{"key", "cudnn.benchmark"}, {"value", "on"}, {"where", "t.py:9"}}}},
                       {"env", {{"CUBLAS_WORKSPACE_CONFIG", ":4096:8"}, {"PYTHONHASHSEED", nullptr}}}};
  const auto with = ra::exec::run_switches(one_process(report), det, {});
  std::map<std::string, ra::report::SwitchValue> by;
  for (const auto& s : with) by[s.key] = s;
  CHECK(by["cudnn.benchmark"].effective == "on");
  CHECK(by["cudnn.benchmark"].set_at == "t.py:9");
  CHECK(by["deterministic"].requested == "on");
  CHECK(by["cublas_workspace"].effective == ":4096:8");
  CHECK(by["pythonhashseed"].effective == "unset");

  const auto none = ra::exec::run_switches(ra::exec::HookRun{}, det, {{"CUBLAS_WORKSPACE_CONFIG", ":4096:8"}});
  for (const auto& s : none) {
    if (s.key == "deterministic") CHECK(s.effective.rfind("not applied", 0) == 0);
    if (s.key == "cudnn.benchmark") CHECK(s.effective.rfind("unknown", 0) == 0);
    if (s.key == "cublas_workspace") CHECK(s.effective == ":4096:8");
  }
  CHECK(ra::exec::hook_state(ra::exec::HookRun{}) == "none");
}

TEST_CASE("run_switches: the start-up hook sets and reads back every in-process switch of the table, each value") {
  // The hook is Python: tests/exec/check_hook_switches.py loads it and checks its tables against
  // these rows (the in-process and compile switches, and every switch's variable).
  json rows = {{"context", json::object()}, {"compile", json::array()}, {"env", json::array()}};
  for (const auto& s : ra::switch_table()) {
    if (s.applied == ra::Applied::Context) rows["context"][s.key] = ra::test::switch_values(s);
    if (s.applied == ra::Applied::Compile) rows["compile"].push_back(s.key);
    if (!s.env_var.empty()) rows["env"].push_back(s.env_var);
  }
  const ra::test::TempFolder dir("ra-hook-switches");
  const std::string command =
      fmt::format("'{}' '{}/tests/exec/check_hook_switches.py' '{}/share/exec/sitecustomize.py' '{}' 2>&1",
                  RA_TORCH_PYTHON, RA_SOURCE_DIR, RA_SOURCE_DIR, dir.write("rows.json", rows.dump()));
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  const int status = ::pclose(pipe);
  INFO(out);
  CHECK(status == 0);
  CHECK(out.find(fmt::format("{} in-process and {} compile switches checked", rows["context"].size(),
                             rows["compile"].size())) != std::string::npos);
}

TEST_CASE("torchrun: ranks merged, the launcher's variables") {
  ra::exec::HookRun run;
  for (int rank : {0, 1}) {
    json r = {{"format", "repro-audit/exec-hook-1"},
              {"torch", true},
              {"torch_drawn", false},
              {"python_drawn", false},
              {"backend", "gloo"},
              {"env", {{"RANK", std::to_string(rank)}, {"WORLD_SIZE", "2"}, {"OMP_NUM_THREADS", "1"}}}};
    run.processes.push_back({r, rank});
  }
  const auto items = ra::exec::seeding_checklist(run);
  REQUIRE(item(items, "seed.torch"));
  CHECK(item(items, "seed.torch")->ranks == std::vector<int>{0, 1});
  ra::report::ExecFacts facts;
  ra::exec::distributed_facts(run, {{"OMP_NUM_THREADS", std::nullopt}}, facts);
  CHECK(facts.world_size == 2);
  CHECK(facts.backend == "gloo");
  CHECK(facts.launcher_set.at("OMP_NUM_THREADS") == "1");
}

TEST_CASE("read_hook_run: only regular files are read, never through a FIFO or a symlink") {
  // (std::filesystem's remove_all and create_symlink resolve to LibTorch's copies here: plain calls.)
  const std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/ra-exec-unit-hook-" +
                          std::to_string(::getpid());
  const auto file = [&](int n) { return dir + "/hook-" + std::to_string(n) + ".json"; };
  const auto clean = [&] {
    for (int n = 1; n <= 4; ++n) ::unlink(file(n).c_str());
    ::rmdir(dir.c_str());
  };
  clean();
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  const json report = {{"format", "repro-audit/exec-hook-1"}, {"torch", false}, {"env", json::object()}};
  std::ofstream(file(1)) << report.dump();
  REQUIRE(::mkfifo(file(2).c_str(), 0600) == 0);  // a run could leave one: reading it would block
  REQUIRE(::symlink(file(1).c_str(), file(3).c_str()) == 0);
  // A float "seq" beyond int64 (undefined behaviour when converted before).
  std::ofstream(file(4)) << R"({"format": "repro-audit/exec-hook-1", "torch": true, "env": {"RANK": "0"},
      "first_op": {"seq": 1e300, "op": "aten::mm"}, "sets": [{"seq": -1e300, "key": "threads", "value": "1"}]})";
  const auto run = ra::exec::read_hook_run(dir);
  CHECK(run.processes.size() == 1);  // hook-4 (a rank: hook-1 is then the launcher)
  CHECK(run.launcher);
  REQUIRE(run.notes.size() == 2);
  std::string notes = run.notes[0] + run.notes[1];
  CHECK(notes.find("hook-2.json: not a regular file") != std::string::npos);
  CHECK(notes.find("hook-3.json: cannot be opened") != std::string::npos);
  CHECK(!ra::exec::seeding_checklist(run).empty());
  clean();
}
