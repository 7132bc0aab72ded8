// SPDX-License-Identifier: Apache-2.0
// audit/exec/compile_switches.h: the environment of compile, Inductor and NCCL switches, their
// read-back, and the checklist lines for compiled code and collectives, on hand-made hook reports.
#include "audit/common/errors.h"
#include "audit/exec/compile_switches.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

ra::exec::HookRun process(json report, int rank = -1) {
  report["torch"] = true;
  ra::exec::HookRun run;
  run.processes.push_back({std::move(report), rank});
  return run;
}

const ra::report::ChecklistItem* find(const std::vector<ra::report::ChecklistItem>& items, const std::string& id) {
  for (const auto& i : items)
    if (i.id == id) return &i;
  return nullptr;
}

std::vector<ra::report::SwitchValue> read_back(std::initializer_list<std::pair<const char*, const char*>> values) {
  std::vector<ra::report::SwitchValue> out;
  for (const auto& [k, v] : values) out.push_back({k, "", v});
  return out;
}

}  // namespace

TEST_CASE("compile_environment") {
  const ra::Config eager = ra::parse_config("eager", 2);
  CHECK(ra::exec::compile_environment(eager, "").at("TORCH_COMPILE_DISABLE") == "1");
  const ra::Config det = ra::parse_config("compiled-det+inductor.cache=cold+nccl.nvls=off", 2);
  const auto env = ra::exec::compile_environment(det, "/s/t1/inductor-cache");
  CHECK_FALSE(env.at("TORCH_COMPILE_DISABLE").has_value());
  CHECK(env.at("TORCHINDUCTOR_DETERMINISTIC") == "1");
  CHECK(env.at("TORCHINDUCTOR_MAX_AUTOTUNE") == "0");
  CHECK(env.at("TORCHINDUCTOR_COORDINATE_DESCENT_TUNING") == "0");
  CHECK(env.at("TORCHINDUCTOR_CACHE_DIR") == "/s/t1/inductor-cache");
  CHECK(env.at("TRITON_CACHE_DIR") == "/s/t1/inductor-cache/triton");
  CHECK(env.at("NCCL_NVLS_ENABLE") == "0");
  CHECK(ra::exec::compile_environment(ra::parse_config("default", 2), "").empty());
  const auto other = ra::exec::compile_environment(
      ra::parse_config("inductor.deterministic=off+nccl.nvls=unset+inductor.cache=warm+inductor.autotune=unset", 2),
      "");
  CHECK(other.size() == 2);  // a warm cache without its folder sets nothing, nor autotune=unset
  CHECK(other.at("TORCHINDUCTOR_DETERMINISTIC") == "0");
  CHECK_FALSE(other.at("NCCL_NVLS_ENABLE").has_value());
  CHECK_THROWS_AS(ra::parse_config("compile=maybe", 2), ra::UsageError);
  CHECK_THROWS_AS(ra::parse_config("inductor.cache=lukewarm", 2), ra::UsageError);
}

TEST_CASE("make_cache_folder") {
  const std::string tmp = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  const std::string file = tmp + "/ra-compile-unit-file";
  std::ofstream(file) << "x";
  CHECK_THROWS_AS(ra::exec::make_cache_folder(file + "/cache"), ra::InputError);
  try {
    ra::exec::make_cache_folder(file + "/cache");
  } catch (const ra::InputError& e) {
    CHECK(std::string(e.what()).find("cannot create the Inductor cache folder") != std::string::npos);
  }
  std::remove(file.c_str());
}

TEST_CASE("compile_checklist") {
  const ra::Config on = ra::parse_config("default+compile=on", 2), off = ra::parse_config("eager", 2);
  const json call = {{"mode", "max-autotune"}, {"backend", "inductor"}, {"dynamic", ""},
                     {"where", "train.py:7"},  {"autotune", true},      {"deterministic", "off"}};
  const auto compiled = process({{"compiles", {call}}, {"random_ops", 2}, {"random_at", {{"where", "train.py:12"}}}});
  const auto eager = process({{"compiles", {call}}});
  const auto items = ra::exec::compile_checklist(
      {{&on, &compiled, read_back({{"compile", "on"}, {"inductor.fallback_random", "off"}})},
       {&off, &eager, read_back({{"compile", "off"}})}},
      1);
  REQUIRE(find(items, "compile"));
  CHECK(find(items, "compile")->status == "note");
  CHECK(find(items, "compile")->text == "torch.compile(mode=max-autotune, backend=inductor, dynamic=None)");
  CHECK(find(items, "compile")->where == "train.py:7");
  REQUIRE(find(items, "compile.autotune"));
  CHECK(find(items, "compile.autotune")->status == "missing");
  REQUIRE(find(items, "compile.random"));
  CHECK(find(items, "compile.random")->where == "train.py:12");
  CHECK_FALSE(find(items, "compile.cache"));  // one run at a time

  // fallback_random on, deterministic mode on, runs side by side on one cache.
  json det_call = call;
  det_call["deterministic"] = "on";
  const auto fixed = process({{"compiles", {det_call}}, {"random_ops", 0}});
  const auto more =
      ra::exec::compile_checklist({{&on, &fixed, read_back({{"compile", "on"}, {"inductor.fallback_random", "on"}})},
                                   {&off, &eager, read_back({{"compile", "off"}})}},
                                  2);
  CHECK_FALSE(find(more, "compile.autotune"));
  CHECK_FALSE(find(more, "compile.random"));
  REQUIRE(find(more, "compile.cache"));
  CHECK(find(more, "compile.cache")->text.find("--jobs 2") != std::string::npos);

  // compile=off on a program that never calls torch.compile: a note.
  const auto plain = process(json::object());
  const auto never = ra::exec::compile_checklist({{&off, &plain, read_back({{"compile", "off"}})}}, 1);
  REQUIRE(never.size() == 1);
  CHECK(never[0].status == "note");
  CHECK(never[0].text.find("never called torch.compile") != std::string::npos);
}

TEST_CASE("compile_checklist: collectives per rank") {
  const ra::Config ring = ra::parse_config("default+nccl.algo=Ring+nccl.nvls=off", 2);
  ra::exec::HookRun run;
  for (int rank : {1, 0}) {
    json env = {
        {"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", nullptr}, {"NCCL_NVLS_ENABLE", "0"}, {"RANK", std::to_string(rank)}};
    run.processes.push_back({{{"torch", true}, {"env", env}, {"backend", "gloo"}}, rank});
  }
  const auto items = ra::exec::compile_checklist({{&ring, &run, {}}}, 1);
  REQUIRE(find(items, "collectives"));
  CHECK(find(items, "collectives")->status == "ok");
  CHECK(find(items, "collectives")->ranks == std::vector<int>{0, 1});
  CHECK(find(items, "collectives")->text.find("NCCL_ALGO=Ring, NCCL_PROTO=unset, NCCL_NVLS_ENABLE=0") !=
        std::string::npos);
  CHECK(find(items, "collectives")->text.find("backend gloo") != std::string::npos);
  run.processes[0].report["env"]["NCCL_ALGO"] = "Tree";  // rank 1 did not get it
  const auto lost = ra::exec::compile_checklist({{&ring, &run, {}}}, 1);
  bool rank1_missing = false;
  for (const auto& i : lost) rank1_missing = rank1_missing || (i.status == "missing" && i.ranks == std::vector<int>{1});
  CHECK(rank1_missing);
}

TEST_CASE("compile_switch_effective") {
  const auto run = process({{"effective", {{"inductor.fallback_random", "on"}}}});
  CHECK(ra::exec::compile_switch_effective("inductor.fallback_random", run, {}) == "on");
  const ra::exec::HookRun none;
  CHECK(ra::exec::compile_switch_effective("compile", none, {{"TORCH_COMPILE_DISABLE", "1"}}) == "off");
  CHECK(ra::exec::compile_switch_effective("nccl.nvls", none, {{"NCCL_NVLS_ENABLE", "0"}}) == "off");
  CHECK(ra::exec::compile_switch_effective("nccl.nvls", none, {{"NCCL_NVLS_ENABLE", std::nullopt}}) == "unset");
  CHECK(ra::exec::compile_switch_effective("nccl.nvls", none, {{"NCCL_NVLS_ENABLE", "1"}}) == "NCCL_NVLS_ENABLE=1");
  CHECK(ra::exec::compile_switch_effective("inductor.deterministic", none, {{"TORCHINDUCTOR_DETERMINISTIC", "1"}}) ==
        "on");
  CHECK(ra::exec::compile_switch_effective("inductor.cache", none, {{"TORCHINDUCTOR_CACHE_DIR", "/c"}}) ==
        "set (TORCHINDUCTOR_CACHE_DIR)");
  CHECK(ra::exec::compile_switch_effective("inductor.autotune", none, {}) ==
        "unknown (no Python process importing torch reported)");
}

TEST_CASE("compile_switch_keys: one row of the parent's half for each compile row of switch_table") {
  // A compile switch added to the table without its row here would change nothing in the run's
  // environment and read back as unknown; the hook's half is checked in test_audit_exec.cpp.
  std::vector<std::string> table;
  for (const auto& s : ra::switch_table())
    if (s.applied == ra::Applied::Compile) table.push_back(s.key);
  std::vector<std::string> here = ra::exec::compile_switch_keys();
  std::sort(table.begin(), table.end());
  std::sort(here.begin(), here.end());
  CHECK(here == table);
}
