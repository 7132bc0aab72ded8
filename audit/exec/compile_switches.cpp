// SPDX-License-Identifier: Apache-2.0
// See audit/exec/compile_switches.h for the design.
#include "audit/exec/compile_switches.h"

#include "audit/common/errors.h"
#include "audit/exec/hook_json.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>

namespace ra::exec {
namespace {

using nlohmann::json;

using hook_json::flag;
using hook_json::member;
using hook_json::text;

std::string value_of(const Config& c, const std::string& key) {
  const auto it = c.values.find(key);
  return it == c.values.end() ? "" : it->second;
}

// The variable as the run's main process saw it (the hook's record), else as it was given.
std::optional<std::string> seen_variable(const HookRun& run,
                                         const std::map<std::string, std::optional<std::string>>& environment,
                                         const char* var) {
  for (const auto& p : run.processes) {
    const json& env = member(p.report, "env");
    if (env.is_object() && env.contains(var))
      return env.at(var).is_string() ? std::optional<std::string>(env.at(var).get<std::string>()) : std::nullopt;
  }
  if (const auto e = environment.find(var); e != environment.end()) return e->second;
  if (const char* v = std::getenv(var)) return std::string(v);
  return std::nullopt;
}

const HookProcess* torch_process(const HookRun& run) {
  for (const auto& p : run.processes)
    if (flag(p.report, "torch")) return &p;
  return nullptr;
}

std::string switch_value(const std::vector<report::SwitchValue>& switches, const std::string& key) {
  for (const auto& s : switches)
    if (s.key == key) return s.effective;
  return "";
}

std::string call_text(const json& c) {
  std::vector<std::string> parts;
  const std::string mode = text(c, "mode");
  parts.push_back("mode=" + (mode.empty() ? std::string("default") : mode));
  parts.push_back("backend=" + text(c, "backend"));
  parts.push_back("dynamic=" + (text(c, "dynamic").empty() ? std::string("None") : text(c, "dynamic")));
  if (flag(c, "fullgraph")) parts.push_back("fullgraph=True");
  std::vector<std::string> options;
  for (const auto& o : member(c, "options"))
    if (o.is_string()) options.push_back(o.get<std::string>());
  if (!options.empty()) parts.push_back(fmt::format("options={{{}}}", fmt::join(options, ", ")));
  return fmt::format("torch.compile({})", fmt::join(parts, ", "));
}

void add_or_merge(std::vector<report::ChecklistItem>& out, const char* id, const char* status, std::string sentence,
                  std::string where, int rank = -1) {
  for (auto& m : out)
    if (m.id == id && m.status == status && m.text == sentence && m.where == where) {
      if (rank >= 0 && std::find(m.ranks.begin(), m.ranks.end(), rank) == m.ranks.end()) m.ranks.push_back(rank);
      return;
    }
  report::ChecklistItem item;
  item.id = id;
  item.status = status;
  item.text = std::move(sentence);
  item.where = std::move(where);
  if (rank >= 0) item.ranks.push_back(rank);
  out.push_back(std::move(item));
}

using Environment = std::map<std::string, std::optional<std::string>>;
using SeenVar = std::function<std::optional<std::string>(const char* name)>;

// The parent's half of each compile row of switch_table (audit/trial/config.cpp, Applied::Compile),
// by key: the variables a value sets in the run's environment (null: the start-up hook alone applies
// it), and the switch as the environment shows it when no Python process importing torch reported
// (null: unknown). The hook's half is share/exec/sitecustomize.py's _Hook.COMPILE; unit tests check
// both sets of keys against the table's.
struct CompileSwitch {
  const char* key;
  void (*apply)(Environment& env, const std::string& value, const std::string& cache_dir);
  std::string (*seen)(const SeenVar& var);
};

using Value = const std::string&;

// clang-format off
const CompileSwitch kCompileSwitches[] = {
    {"compile",                  [](Environment& e, Value v, Value) { if (v == "off") e["TORCH_COMPILE_DISABLE"] = "1"; if (v == "on") e["TORCH_COMPILE_DISABLE"] = std::nullopt; }, [](const SeenVar& var) -> std::string { return var("TORCH_COMPILE_DISABLE").value_or("") == "1" ? "off" : "on"; }},
    {"inductor.deterministic",   [](Environment& e, Value v, Value) { e["TORCHINDUCTOR_DETERMINISTIC"] = v == "on" ? "1" : "0"; }, [](const SeenVar& var) -> std::string { return var("TORCHINDUCTOR_DETERMINISTIC").value_or("") == "1" ? "on" : "off"; }},
    {"inductor.fallback_random", nullptr, nullptr},
    {"inductor.autotune",        [](Environment& e, Value v, Value) { if (v == "off") for (const char* var : {"TORCHINDUCTOR_MAX_AUTOTUNE", "TORCHINDUCTOR_MAX_AUTOTUNE_POINTWISE", "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM", "TORCHINDUCTOR_COORDINATE_DESCENT_TUNING"}) e[var] = "0"; }, nullptr},
    {"inductor.cache",           [](Environment& e, Value v, Value dir) { if ((v == "cold" || v == "warm") && !dir.empty()) { e["TORCHINDUCTOR_CACHE_DIR"] = dir; e["TRITON_CACHE_DIR"] = dir + "/triton"; } }, [](const SeenVar& var) -> std::string { return var("TORCHINDUCTOR_CACHE_DIR") ? "set (TORCHINDUCTOR_CACHE_DIR)" : "unset"; }},
    {"nccl.nvls",                [](Environment& e, Value v, Value) { if (v == "off") e["NCCL_NVLS_ENABLE"] = "0"; if (v == "unset") e["NCCL_NVLS_ENABLE"] = std::nullopt; }, [](const SeenVar& var) -> std::string { const auto v = var("NCCL_NVLS_ENABLE"); return !v ? "unset" : *v == "0" ? "off" : "NCCL_NVLS_ENABLE=" + *v; }},
};
// clang-format on
static_assert(std::size(kCompileSwitches) == 6, "the compile rows of switch_table (Applied::Compile)");

const CompileSwitch* compile_switch(const std::string& key) {
  for (const auto& s : kCompileSwitches)
    if (key == s.key) return &s;
  return nullptr;
}

}  // namespace

CacheMode cache_mode(const Config& config) {
  const std::string v = value_of(config, "inductor.cache");
  return v == "cold" ? CacheMode::Cold : v == "warm" ? CacheMode::Warm : CacheMode::Unset;
}

std::map<std::string, std::optional<std::string>> compile_environment(const Config& config,
                                                                      const std::string& cache_dir) {
  Environment env;
  for (const auto& [key, value] : config.values)
    if (const CompileSwitch* s = compile_switch(key); s != nullptr && s->apply != nullptr)
      s->apply(env, value, cache_dir);
  return env;
}

std::vector<std::string> compile_switch_keys() {
  std::vector<std::string> keys;
  for (const auto& s : kCompileSwitches) keys.emplace_back(s.key);
  return keys;
}

void make_cache_folder(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir + "/triton", ec);
  if (ec || !std::filesystem::is_directory(dir + "/triton"))
    throw InputError(fmt::format("cannot create the Inductor cache folder '{}' (inductor.cache): {}", dir,
                                 ec ? ec.message() : "not a folder"));
}

std::string compile_switch_effective(const std::string& key, const HookRun& run,
                                     const std::map<std::string, std::optional<std::string>>& environment) {
  if (const HookProcess* p = torch_process(run)) {
    const std::string v = text(member(p->report, "effective"), key.c_str());
    if (!v.empty()) return v;
  }
  // No Python process importing torch reported: what the environment says.
  if (const CompileSwitch* s = compile_switch(key); s != nullptr && s->seen != nullptr)
    return s->seen([&](const char* name) { return seen_variable(run, environment, name); });
  return "unknown (no Python process importing torch reported)";
}

std::optional<double> compile_seconds(const HookRun& run) {
  const HookProcess* p = torch_process(run);
  if (p == nullptr) return std::nullopt;
  const json& s = member(p->report, "compile_s");
  if (!s.is_number() || s.get<double>() <= 0) return std::nullopt;
  return s.get<double>();
}

std::string compile_time_line(const Config& config, const std::vector<const HookRun*>& runs) {
  std::vector<double> seconds;
  for (const HookRun* r : runs)
    if (r != nullptr)
      if (const auto s = compile_seconds(*r)) seconds.push_back(*s);
  if (seconds.empty()) return "";
  std::sort(seconds.begin(), seconds.end());
  const CacheMode mode = cache_mode(config);
  return fmt::format("{}: its runs spent a median {:.1f} s compiling{}", config.name, seconds[seconds.size() / 2],
                     mode == CacheMode::Cold   ? " (a cold Inductor cache: every run compiles)"
                     : mode == CacheMode::Warm ? " (a warm Inductor cache: loading what the warm-up compiled)"
                                               : "");
}

bool called_compile(const HookRun& run) {
  for (const auto& p : run.processes)
    if (const json& c = member(p.report, "compiles"); c.is_array() && !c.empty()) return true;
  return false;
}

std::vector<report::ChecklistItem> compile_checklist(const std::vector<ConfigRun>& runs, int jobs) {
  std::vector<report::ChecklistItem> out;
  bool any_call = false, asks_off = false, compiled = false, eager = false;
  for (const auto& r : runs) {
    if (r.hook == nullptr) continue;
    any_call = any_call || called_compile(*r.hook);
    asks_off = asks_off || value_of(*r.config, "compile") == "off";
    const std::string c = switch_value(r.switches, "compile");
    compiled = compiled || c == "on";
    eager = eager || c == "off";
  }
  // Each call, once, with the ranks that made it.
  for (const auto& r : runs)
    if (r.hook != nullptr)
      for (const auto& p : r.hook->processes)
        for (const auto& c : member(p.report, "compiles"))
          add_or_merge(out, "compile", "note", call_text(c), text(c, "where"), p.rank);
  if (!any_call && asks_off)
    add_or_merge(out, "compile", "note", "the program never called torch.compile: compile=off changed nothing", "");
  for (const auto& r : runs) {
    if (r.hook == nullptr) continue;
    for (const auto& p : r.hook->processes) {
      for (const auto& c : member(p.report, "compiles")) {
        // Under compile=off torch.compile returns the eager function: nothing is autotuned.
        if (!flag(c, "autotune") || text(c, "deterministic") == "on" || switch_value(r.switches, "compile") == "off")
          continue;
        add_or_merge(
            out, "compile.autotune", "missing",
            fmt::format(
                "{} autotunes without Inductor's deterministic mode: it picks kernels by timing them, so two runs may "
                "compile different kernels (inductor.deterministic=on, or inductor.autotune=off)",
                call_text(c)),
            text(c, "where"), p.rank);
      }
      // Random ops that Inductor compiled into its own generator, where an eager run is compared.
      const json& n = member(p.report, "random_ops");
      if (eager && compiled && n.is_number_integer() && n.get<int64_t>() > 0 &&
          switch_value(r.switches, "inductor.fallback_random") != "on" && switch_value(r.switches, "compile") == "on")
        add_or_merge(
            out, "compile.random", "missing",
            fmt::format(
                "random ops (dropout, rand_like ...) ran in a compiled region with fallback_random off, so compiled "
                "code "
                "draws other numbers than eager from the same seed (inductor.fallback_random=on makes them match; "
                "seen under {})",
                r.config->name),
            text(member(p.report, "random_at"), "where"), p.rank);
    }
  }
  if (jobs > 1 && any_call)
    for (const auto& r : runs)
      if (r.hook != nullptr && called_compile(*r.hook) && cache_mode(*r.config) != CacheMode::Cold)
        add_or_merge(
            out, "compile.cache", "missing",
            fmt::format("--jobs {} runs {} side by side on one Inductor cache folder ({}): a run may load what another "
                        "is still "
                        "writing (inductor.cache=cold gives each run its own)",
                        jobs, r.config->name,
                        cache_mode(*r.config) == CacheMode::Warm ? "the warm-up's"
                                                                 : "TORCHINDUCTOR_CACHE_DIR, or torch's default"),
            "");
  // Collectives: the NCCL variables each rank saw, per configuration.
  for (const auto& r : runs) {
    if (r.hook == nullptr) continue;
    bool asked = false;
    for (const char* key : {"nccl.algo", "nccl.proto", "nccl.nvls"}) asked = asked || !value_of(*r.config, key).empty();
    if (!asked) continue;
    for (const auto& p : r.hook->processes) {
      if (p.rank < 0) continue;
      const json& env = member(p.report, "env");
      std::vector<std::string> seen;
      bool differs = false;
      for (const auto& [key, var] : std::vector<std::pair<std::string, std::string>>{
               {"nccl.algo", "NCCL_ALGO"}, {"nccl.proto", "NCCL_PROTO"}, {"nccl.nvls", "NCCL_NVLS_ENABLE"}}) {
        const std::string v =
            env.is_object() && env.contains(var) && env.at(var).is_string() ? env.at(var).get<std::string>() : "";
        seen.push_back(var + "=" + (v.empty() ? "unset" : v));
        const std::string want = value_of(*r.config, key);
        const std::string want_var = want == "unset" ? "" : key == "nccl.nvls" && want == "off" ? "0" : want;
        if (!want.empty() && want_var != v) differs = true;
      }
      const std::string backend = text(p.report, "backend");
      add_or_merge(
          out, "collectives", differs ? "missing" : "ok",
          fmt::format(
              "under {}: {} in this rank's environment{}{}", r.config->name, fmt::join(seen, ", "),
              differs ? ", not what the configuration asked" : "",
              backend.empty() || backend == "nccl"
                  ? ""
                  : fmt::format(" (backend {}: NCCL's variables change nothing there; they matter on GPUs)", backend)),
          "", p.rank);
    }
  }
  for (auto& item : out) std::sort(item.ranks.begin(), item.ranks.end());
  return out;
}

bool is_seeding_item(const report::ChecklistItem& item) {
  return item.id.rfind("seed.", 0) == 0 || item.id == "generator" || item.id == "dataloader" ||
         item.id == "dataloader.rng";
}

}  // namespace ra::exec
