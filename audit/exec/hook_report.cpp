// SPDX-License-Identifier: Apache-2.0
#include "audit/exec/hook_report.h"

#include "audit/common/json_document.h"
#include "audit/exec/artifacts.h"
#include "audit/exec/compile_switches.h"
#include "audit/exec/hook_json.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <stdexcept>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ra::exec {
namespace {

using nlohmann::json;

using hook_json::flag;
using hook_json::member;
using hook_json::text;

const HookProcess* main_process(const HookRun& run) {
  for (const auto& p : run.processes)
    if (flag(p.report, "torch")) return &p;  // rank 0 first: processes are sorted by rank
  return run.processes.empty() ? nullptr : &run.processes.front();
}

using Items = std::vector<report::ChecklistItem>;

void add(Items& out, const char* id, const char* status, std::string sentence, std::string where,
         std::string path = "") {
  report::ChecklistItem item;
  item.id = id;
  item.status = status;
  item.text = std::move(sentence);
  item.where = std::move(where);
  item.artifact = std::move(path);  // a checkpoint's path; exec_audit replaces it by the artifact it names
  out.push_back(std::move(item));
}

std::string call_rng(const char* rng) {
  const std::string r = rng;
  if (r == "torch") return "torch's global RNG";
  if (r == "python") return "Python's random module";
  return "NumPy's global RNG";
}

// One RNG: seeded before its first draw, seeded late, reseeded from entropy, or drawn unseeded.
void seed_item(Items& out, const json& r, const char* id, const char* rng, const char* call, bool drawn) {
  const json& s = member(member(r, "seeds"), rng);
  if (s.is_null()) {
    if (drawn)
      add(out, id, "missing",
          fmt::format("{} was drawn from but never seeded ({} was not called)", call_rng(rng), call), "");
    else
      add(out, id, "not-applicable", fmt::format("{} was never drawn from in this process", call_rng(rng)), "");
    return;
  }
  const std::string where = text(s, "where");
  if (member(s, "value").is_null())
    add(out, id, "missing",
        fmt::format("{} was seeded without a value, which takes a fresh seed from the system every run", call_rng(rng)),
        where);
  else if (flag(s, "drawn_before"))
    add(out, id, "missing",
        fmt::format("{}({}) came after the first draw from {}", call, text(s, "value"), call_rng(rng)), where);
  else
    add(out, id, "ok", fmt::format("{}({}) before the first draw", call, text(s, "value")), where);
}

// A hook file is written by the user's program into the run's tree, so it may be anything: it is
// read only if it is a regular file (never through a symlink, never blocking on a FIFO or a
// device), and only up to kMaxHookReport bytes (a real one holds a few KB). A run's tree may hold
// any number of them, so at most kMaxHookReports are read, kMaxHookBytes in all (16 files of 15 MB
// once took 2.7 GB): one per process of a distributed run of a few hundred ranks fits.
constexpr off_t kMaxHookReport = off_t{4} << 20;
constexpr size_t kMaxHookReports = 512;
constexpr off_t kMaxHookBytes = off_t{64} << 20;

std::string read_report(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(std::string("cannot be opened: ") + std::strerror(errno));
  struct stat st {};
  std::string text;
  try {
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) throw std::runtime_error("not a regular file");
    if (st.st_size > kMaxHookReport)
      throw std::runtime_error(
          fmt::format("{} bytes, more than the {} MiB a hook report may hold", st.st_size, kMaxHookReport >> 20));
    text.resize(static_cast<size_t>(st.st_size));
    size_t have = 0;
    while (have < text.size()) {
      const ssize_t n = ::read(fd, text.data() + have, text.size() - have);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      have += static_cast<size_t>(n);
    }
    text.resize(have);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return text;
}

// An ordering number of the hook's ("seq"), 0 when it is not a number an int64 holds.
int64_t seq_of(const json& j) {
  const json& s = member(j, "seq");
  if (s.is_number_integer()) return s.get<int64_t>();
  if (!s.is_number_float()) return 0;
  const double d = s.get<double>();
  return d >= -9.0e18 && d <= 9.0e18 ? static_cast<int64_t>(d) : 0;
}

// A DataLoader the program iterated (`l`): where its shuffle order and its workers' seeds come from,
// and the RNGs its dataset holds, which each worker copies.
void loader_items(Items& items, const json& l) {
  const int workers = member(l, "num_workers").is_number_integer() ? member(l, "num_workers").get<int>() : 0;
  const std::string what = fmt::format("DataLoader over {} (num_workers={}{})", text(l, "dataset"), workers,
                                       flag(l, "shuffle") ? ", shuffle" : "");
  const std::string uses =
      workers > 0 ? (flag(l, "shuffle") ? "its shuffle order and its workers' seeds come" : "its workers' seeds come")
                  : (flag(l, "shuffle") ? "its shuffle order comes" : "its base seed comes");
  if (flag(l, "generator"))
    add(items, "dataloader", "ok", fmt::format("{}: {} from its own generator", what, uses), text(l, "where"));
  else if (flag(l, "torch_seeded"))
    add(items, "dataloader", "ok",
        fmt::format("{}: {} from torch's global RNG, seeded before it was first iterated", what, uses),
        text(l, "where"));
  else if (workers == 0 && !flag(l, "shuffle"))
    add(items, "dataloader", "not-applicable",
        fmt::format("{}: draws nothing from torch's RNG that reaches the data (no workers, no shuffle)", what),
        text(l, "where"));
  else
    add(items, "dataloader", "missing",
        fmt::format("{}: {} from torch's global RNG, which was not seeded before it was first iterated (at {}); "
                    "in each worker, random, torch and NumPy are reseeded from that base seed",
                    what, uses, text(l, "iterated_at")),
        text(l, "where"));
  for (const auto& g : member(l, "dataset_rngs")) {
    const json& seeded = member(g, "seeded");
    const std::string attr =
        fmt::format("dataset {} holds {} ({})", text(l, "dataset"), text(g, "attribute"), text(g, "type"));
    if (workers > 0)
      add(items, "dataloader.rng", "missing",
          fmt::format("{}: each of the {} workers gets a copy that nothing reseeds, so every worker draws the same "
                      "numbers{}",
                      attr, workers,
                      seeded.is_boolean() && !seeded.get<bool>() ? ", and it was built without a seed" : ""),
          text(l, "where"));
    else if (seeded.is_boolean() && !seeded.get<bool>())
      add(items, "dataloader.rng", "missing", fmt::format("{}, built without a seed", attr), text(l, "where"));
    else
      add(items, "dataloader.rng", "ok", fmt::format("{}, seeded, in one process", attr), text(l, "where"));
  }
}

// The switches in effect at the first convolution or matmul, and any the program set after the
// model was built.
void switch_items(Items& items, const json& r) {
  const json& first = member(r, "first_op");
  const json& built = member(r, "model_built");
  if (first.is_null()) {
    add(items, "switches", "not-applicable", "no convolution or matmul ran through torch's Python API", "");
  } else {
    std::vector<std::string> values;
    for (const auto& [k, v] : member(first, "switches").items())
      if (v.is_string()) values.push_back(k + "=" + v.get<std::string>());
    std::vector<std::string> late;
    std::string late_where;
    bool after_first = false;
    const int64_t built_at = built.is_null() ? seq_of(first) : seq_of(built);
    for (const auto& set : member(r, "sets"))
      if (seq_of(set) > built_at) {
        late.push_back(fmt::format("{}={}", text(set, "key"), text(set, "value")));
        if (late_where.empty()) late_where = text(set, "where");
        after_first = after_first || seq_of(set) > seq_of(first);
      }
    if (late.empty())
      add(items, "switches", "ok",
          fmt::format("at the first convolution or matmul ({}): {}; none changed after the model was built",
                      text(first, "op"), fmt::join(values, ", ")),
          text(first, "where"));
    else
      add(items, "switches", "missing",
          fmt::format("the program set {} after the model was built{}", fmt::join(late, ", "),
                      after_first ? " and after the first convolution or matmul ran"
                                  : ", before its first convolution or matmul"),
          late_where);
  }
}

// Each checkpoint the program saved: whether it holds every RNG state the program uses.
void checkpoint_items(Items& items, const json& r) {
  for (const auto& s : member(r, "saves")) {
    const std::string kind = text(s, "kind");
    const std::string path = text(s, "path");
    if (kind != "checkpoint") continue;
    std::vector<std::string> lacking;
    std::set<std::string> holds;
    for (const auto& h : member(s, "holds"))
      if (h.is_string()) holds.insert(h.get<std::string>());
    static const std::map<std::string, std::string> names = {{"cpu", "CPU (torch.get_rng_state())"},
                                                             {"cuda", "CUDA (torch.cuda.get_rng_state_all())"},
                                                             {"python", "Python (random.getstate())"},
                                                             {"numpy", "NumPy (numpy.random.get_state())"}};
    for (const auto& n : member(s, "needed"))
      if (n.is_string() && !holds.count(n.get<std::string>()))
        lacking.push_back(names.count(n.get<std::string>()) ? names.at(n.get<std::string>()) : n.get<std::string>());
    const std::string file = path.empty() ? "a checkpoint" : "checkpoint " + path;
    if (lacking.empty())
      add(items, "checkpoint", "ok", fmt::format("{} holds every RNG state this program uses", file), text(s, "where"),
          path);
    else
      // A note about resuming from it: it says nothing about why this run's results differ.
      add(items, "checkpoint", "note",
          fmt::format("{} lacks the RNG state a resumed run needs: {}", file, fmt::join(lacking, ", ")),
          text(s, "where"), path);
  }
}

}  // namespace

HookRun read_hook_run(const std::string& dir) {
  HookRun run;
  std::error_code ec;
  std::vector<HookProcess> all;
  if (std::filesystem::is_symlink(dir, ec)) {  // the run replaced its hook folder: read nothing through it
    run.notes.push_back("the hook folder was replaced by a symlink: not followed");
    return run;
  }
  std::vector<std::filesystem::path> files;  // sorted, so that which ones a cap leaves out is the same each run
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("hook-", 0) == 0 && e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.size() > kMaxHookReports) {
    run.notes.push_back(fmt::format("{} hook reports, more than the {} read: the first {} by name were read",
                                    files.size(), kMaxHookReports, kMaxHookReports));
    files.resize(kMaxHookReports);
  }
  off_t total = 0;
  for (const auto& path : files) {
    const std::string name = path.filename().string();
    try {
      HookProcess p;
      std::string body = read_report(path.string());
      if (total + static_cast<off_t>(body.size()) > kMaxHookBytes) {
        run.notes.push_back(fmt::format("{}: not read, the hook reports before it hold the {} MiB read in all", name,
                                        kMaxHookBytes >> 20));
        break;
      }
      total += static_cast<off_t>(body.size());
      p.report = parse_json_document<json>(body, "hook report " + name);
      if (!p.report.is_object() || text(p.report, "format") != "repro-audit/exec-hook-1")
        throw std::runtime_error("not a hook report");
      const std::string rank = text(member(p.report, "env"), "RANK");
      p.rank = rank.empty() ? -1 : std::atoi(rank.c_str());
      all.push_back(std::move(p));
    } catch (const Interrupted&) {
      throw;
    } catch (const std::exception& ex) {
      run.notes.push_back(fmt::format("{}: {}", name, ex.what()));
    }
  }
  const bool ranks = std::any_of(all.begin(), all.end(), [](const HookProcess& p) { return p.rank >= 0; });
  for (auto& p : all) {
    if (ranks && p.rank < 0) {
      run.launcher = true;
      continue;
    }
    run.processes.push_back(std::move(p));
  }
  std::sort(run.processes.begin(), run.processes.end(),
            [](const HookProcess& a, const HookProcess& b) { return a.rank < b.rank; });
  return run;
}

std::string hook_state(const HookRun& run) {
  if (run.processes.empty()) return "none";
  for (const auto& p : run.processes)
    if (flag(p.report, "torch")) return "python";
  return "python-without-torch";
}

std::vector<report::SwitchValue> run_switches(const HookRun& run, const Config& config,
                                              const std::map<std::string, std::optional<std::string>>& environment) {
  std::vector<report::SwitchValue> out;
  const HookProcess* p = main_process(run);
  const std::string state = hook_state(run);
  for (const auto& s : switch_table()) {
    report::SwitchValue v;
    v.key = s.key;
    const auto it = config.values.find(s.key);
    v.requested = it == config.values.end() ? "" : it->second;
    const bool context = s.applied == Applied::Context;
    if (s.applied == Applied::Compile) {  // the hook reads these back (audit/exec/compile_switches.h)
      v.effective = compile_switch_effective(s.key, run, environment);
      if (p != nullptr)
        for (const auto& set : member(p->report, "sets"))
          if (text(set, "key") == s.key) v.set_at = text(set, "where");
    } else if (context && state == "python") {
      v.effective = text(member(p->report, "effective"), s.key.c_str());
      for (const auto& set : member(p->report, "sets"))
        if (text(set, "key") == s.key) v.set_at = text(set, "where");
    } else if (context && s.env_var.empty()) {  // threads has its variable to read instead
      const char* why =
          state == "none" ? "no Python process importing torch reported: not a Python program, or started with -S or -I"
                          : "the program never imported torch";
      v.effective = fmt::format("{} ({})", v.requested.empty() ? "unknown" : "not applied", why);
    } else if (!s.env_var.empty()) {
      const char* var = s.env_var.c_str();
      // What the program saw: the hook's record of its environment, else what it was given.
      std::string value;
      if (p != nullptr && member(p->report, "env").contains(var) && member(p->report, "env").at(var).is_string())
        value = member(p->report, "env").at(var).get<std::string>();
      else if (p != nullptr && member(p->report, "env").contains(var))
        value = "unset";
      else if (const auto e = environment.find(var); e != environment.end())
        value = e->second ? *e->second : "unset";
      else
        value = std::getenv(var) != nullptr ? std::getenv(var) : "unset";
      v.effective = value;
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<report::ChecklistItem> seeding_checklist(const HookRun& run) {
  std::vector<report::ChecklistItem> merged;
  const bool several = run.processes.size() > 1;
  for (const auto& p : run.processes) {
    const json& r = p.report;
    Items items;
    if (flag(r, "torch")) seed_item(items, r, "seed.torch", "torch", "torch.manual_seed", flag(r, "torch_drawn"));
    seed_item(items, r, "seed.python", "python", "random.seed", flag(r, "python_drawn"));
    if (r.contains("numpy_drawn"))
      seed_item(items, r, "seed.numpy", "numpy", "numpy.random.seed", flag(r, "numpy_drawn"));
    for (const auto& g : member(r, "unseeded_generators"))
      add(items, "generator", "missing",
          fmt::format("{} built without a seed draws different numbers every run", text(g, "what")), text(g, "where"));
    for (const auto& l : member(r, "loaders")) loader_items(items, l);
    if (flag(r, "torch")) {
      switch_items(items, r);
      checkpoint_items(items, r);
    }
    for (auto& item : items) {
      auto same = std::find_if(merged.begin(), merged.end(), [&](const report::ChecklistItem& m) {
        return m.id == item.id && m.status == item.status && m.text == item.text && m.where == item.where;
      });
      if (same == merged.end()) {
        merged.push_back(item);
        same = merged.end() - 1;
      }
      if (several && p.rank >= 0) same->ranks.push_back(p.rank);
    }
  }
  return merged;
}

void distributed_facts(const HookRun& run, const std::map<std::string, std::optional<std::string>>& environment,
                       report::ExecFacts& facts) {
  for (const auto& p : run.processes) {
    if (p.rank < 0) continue;
    const json& env = member(p.report, "env");
    const std::string world = text(env, "WORLD_SIZE");
    if (!world.empty()) facts.world_size = std::atoi(world.c_str());
    if (!text(p.report, "backend").empty()) facts.backend = text(p.report, "backend");
    for (const char* var : {"OMP_NUM_THREADS", "MKL_NUM_THREADS"}) {
      const std::string seen = text(env, var);
      if (seen.empty()) continue;
      std::string given;
      if (const auto e = environment.find(var); e != environment.end())
        given = e->second ? *e->second : "";
      else if (const char* v = std::getenv(var))
        given = v;
      if (seen != given) facts.launcher_set[var] = seen;
    }
  }
}

void hook_facts(report::ExecFacts& facts, const HookRun& run,
                const std::map<std::string, std::optional<std::string>>& environment, const std::string& run_dir,
                const std::map<std::string, std::vector<std::string>>& metrics) {
  facts.hook = hook_state(run);
  if (facts.hook == "none")
    facts.hook_note =
        "no Python process that imports the hook reported: in-process switches were not applied and "
        "there is no seeding checklist (the command is not a Python program, or runs Python with -S or -I)";
  else if (facts.hook == "python-without-torch")
    facts.hook_note = "the program is Python but never imported torch: in-process switches did not apply";
  facts.checklist = seeding_checklist(run);
  // A path below the run's own folder reads as $REPRO_AUDIT_OUT: the same in every run.
  const std::string out_dir = run_dir + "/out";
  for (auto& item : facts.checklist)
    for (std::string* field : {&item.text, &item.artifact})
      for (size_t at = field->find(out_dir); at != std::string::npos; at = field->find(out_dir))
        field->replace(at, out_dir.size(), "$REPRO_AUDIT_OUT");
  distributed_facts(run, environment, facts);
  for (auto& m : facts.metrics) {
    const auto it = metrics.find(m.name);
    m.occurrences = it == metrics.end() ? 0 : static_cast<int>(it->second.size());
  }
}

}  // namespace ra::exec
