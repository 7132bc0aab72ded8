// SPDX-License-Identifier: Apache-2.0
#include "audit/invariance/invariance_audit.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/common/log.h"
#include "audit/common/paths.h"
#include "audit/common/progress.h"
#include "audit/common/zip_check.h"
#include "audit/invariance/invariance_analysis.h"
#include "audit/invariance/invariance_fix.h"
#include "audit/invariance/invariance_referee.h"
#include "audit/invariance/invariance_shard.h"
#include "audit/skeleton/audit_kind.h"
#include "audit/trial/runner.h"
#include "audit/trial/worker_client.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <unordered_map>

#include <sys/stat.h>

namespace ra::invariance {
namespace {

struct Cell {
  Config config;
  // What the progress line says it runs: "invariance under default", "fix search: candidate threads=1".
  std::string label;
  std::string request_path, result_path;
  std::string dump_path;  // the float64 referee's worker: where it writes the anchors' rows
  ChildJob job;
};

// The float64 referee of the audit (invariance_referee.h): where it ran or why not (none with
// --referee off, in a shard, on the verify axis), and its dump, which every worker measures against.
struct RefereeRun {
  std::optional<report::Referee> referee;
  std::string dump;  // "" when it did not run
};

struct CellResult {
  std::optional<InvarianceMeasurement> measured;
  std::string crash;  // why the configuration's worker failed, when it did
  double worker_ms = 0;
};

// One cell per configuration of `configs` that `parts` runs (parts[i] for configs[i]: the audit's
// own sweep is cut by shard, invariance_shard.h; the fix search's sweeps run all, their own sizes):
// its request written, its worker described. `tag` names the files ("" for the audit's own sweep;
// the fix search's sweeps have their own, and its screens compare only the first `anchors`); the
// first of the audit's own cells reads the fingerprint.
// --trace rides on the audit's own sweep, never on a shard's (a shard holds only some sizes). Each
// worker measures its rows against `referee`'s dump where it has one; with `float64_on`, the cells are
// the referee's own worker instead (InvarianceRequest::referee), on that device, its dump in `dump_path`.
std::vector<Cell> plan_cells(const InvarianceOptions& o, const ScratchDir& scratch, const std::vector<SweepStep>& steps,
                             const std::vector<SweepPart>& parts, const std::string& tag, const RefereeRun& referee,
                             int anchors = 0, const Device* float64_on = nullptr) {
  std::vector<Cell> cells;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!parts[i].runs) continue;
    Cell c;
    c.config = steps[i].config;
    c.label = steps[i].label;
    const bool own = tag.empty();
    InvarianceRequest rq{
        {}, anchors > 0 ? anchors : o.rows, o.filler, parts[i].sizes, o.budget, o.batch_dims, own && cells.empty()};
    rq.bisect = parts[i].bisect;
    rq.trace = o.trace && own && !o.shard;
    rq.axis = o.axis, rq.draft = o.draft, rq.positions = o.positions;
    rq.spec.model = o.model;
    rq.spec.input_file = o.input;
    rq.spec.device = o.session.device;
    rq.spec.seed = o.session.seed;
    rq.spec.config = c.config;
    rq.spec.load_libraries = o.session.load_libraries;
    rq.spec.reference_dump = referee.dump;
    const std::string base = fmt::format("{}/invariance{}-{}", scratch.path(), tag, i);
    if (float64_on != nullptr) {
      rq.referee = true, rq.fingerprint = false, rq.trace = false;
      rq.spec.device = *float64_on;
      rq.spec.precision = "float64";
      rq.spec.dump_path = c.dump_path = base + ".float64.pt";
    }
    c.request_path = base + ".request.json", c.result_path = base + ".result.json";
    write_file_atomic(c.request_path, to_json(rq).dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    c.job.argv = {worker_executable(), "__invariance", c.request_path, c.result_path};
    c.job.env = config_environment(c.config);
    c.job.log_path = base + ".log";
    c.job.timeout = std::chrono::milliseconds(static_cast<long long>(o.session.timeout_s * 1000));
    cells.push_back(std::move(c));
  }
  return cells;
}

// A worker that failed: with `fatal`, its own line for a bad model or input (no report); else, or
// for anything else, a crash (a fix search's candidate whose switch is not in effect only crashes).
std::string failure(const ChildOutcome& out, bool fatal) {
  // A full TMPDIR makes the worker fail wherever it meets it first, often after the model printed
  // a line of its own: say what happened, as run does (an input error, exit 3), never that line.
  if (out.disk_full) {
    const char* tmp = std::getenv("TMPDIR");
    const std::string why = fmt::format("no space left in TMPDIR ({}): the invariance worker could not write its files",
                                        tmp != nullptr && *tmp != '\0' ? tmp : "/tmp");
    if (fatal) throw InputError(why);
    return why;
  }
  const std::string line = worker_error_line(out, fatal);
  const std::string how = out.kind == ChildOutcome::Kind::TimedOut   ? "timed out"
                          : out.kind == ChildOutcome::Kind::Signaled ? fmt::format("died of signal {}", out.signal)
                          : out.kind == ChildOutcome::Kind::SpawnFailed
                              ? "could not be started"
                              : fmt::format("exited with code {}", out.exit_code);
  return fmt::format("the invariance worker {}{}", how, line.empty() ? "" : ": " + line);
}

// The progress line while workers sweep: "invariance under default: sizes 3/9, size 8, 14 s, ETA
// 20 s" ("prefixes 3/7, 29 tokens" on the verify axis) from the longest-running worker's progress
// file (SweepProgress), or its time alone when it has none yet (loading the model) or a garbled one.
std::string sweep_line(const std::vector<Cell>& cells, const std::vector<RunningChild>& now, Axis axis) {
  const Cell& cell = cells[now.front().index];
  const auto seconds = static_cast<long>(now.front().elapsed_ms / 1000);
  const std::string others = now.size() > 1 ? fmt::format(" (and {} more)", now.size() - 1) : "";
  const auto p = read_sweep_progress(sweep_progress_path(cell.result_path));
  if (!p || p->planned == 0) return fmt::format("{}: {} s, still running{}", cell.label, seconds, others);
  const bool verify = axis == Axis::Verify;
  const std::string current = p->current <= 0 ? ""
                              : verify        ? fmt::format(", {} tokens", p->current)
                                              : fmt::format(", size {}", p->current);
  // The worker's estimate dates from the file's last rewrite: the time since was spent on what is left.
  double age = 0;
  struct stat st {};
  if (::stat(sweep_progress_path(cell.result_path).c_str(), &st) == 0) {
    timespec wall{};
    ::clock_gettime(CLOCK_REALTIME, &wall);
    age = static_cast<double>(wall.tv_sec - st.st_mtim.tv_sec) +
          static_cast<double>(wall.tv_nsec - st.st_mtim.tv_nsec) / 1e9;
  }
  const std::string eta = p->eta_s >= 0 ? eta_text(p->eta_s - age) : "";
  return fmt::format("{}: {} {}/{}{}, {} s{}{}{}", cell.label, verify ? "prefixes" : "sizes", p->done, p->planned,
                     current, seconds, eta.empty() ? "" : ", ", eta, others);
}

// Runs the cells' workers, `jobs_at_once` at a time, counting them on `progress` (the fix search
// keeps one for all its sweeps, so that its rounds rewrite one line).
std::vector<CellResult> run_cells(const std::vector<Cell>& cells, const InvarianceOptions& o, int jobs_at_once,
                                  bool fatal, Progress& progress) {
  std::vector<ChildJob> jobs;
  for (const auto& c : cells) jobs.push_back(c.job);
  const ChildProgress line{progress, [&](size_t i) { return cells[i].label; },
                           [&](size_t i, const ChildOutcome& out) {
                             return fmt::format("{}: {:.1f} s", cells[i].label, out.wall_ms / 1000);
                           },
                           [&](const std::vector<RunningChild>& now) { return sweep_line(cells, now, o.axis); }};
  const auto outcomes = run_children(jobs, jobs_at_once, line);
  std::vector<CellResult> results;
  for (size_t i = 0; i < cells.size(); ++i) {
    CellResult r;
    r.worker_ms = outcomes[i].wall_ms;
    if (outcomes[i].kind != ChildOutcome::Kind::Exited || outcomes[i].exit_code != 0 || outcomes[i].disk_full) {
      r.crash = failure(outcomes[i], fatal);
    } else {
      try {
        std::ifstream in(cells[i].result_path);
        r.measured = invariance_measurement_from_json(nlohmann::ordered_json::parse(in));
      } catch (const std::exception& e) {
        r.crash = fmt::format("the invariance worker's result is malformed: {}", e.what());
      }
    }
    results.push_back(std::move(r));
  }
  return results;
}

report::InvarianceConfig config_of(const Cell& cell, const CellResult& r, Axis axis, const RefereeRun& referee) {
  report::InvarianceConfig c;
  c.config = cell.config.name;
  c.timing.worker_ms = r.worker_ms;
  if (!r.measured) {
    c.verdict = "crashed";
    c.message = r.crash;
    return c;
  }
  c.switches = r.measured->switches;
  c.cells = r.measured->cells;
  c.timing.forward_ms = r.measured->forward_ms;
  c.timing.calls = r.measured->calls;
  c.timing.sweep_ms = r.measured->sweep_ms;
  c.trace = r.measured->trace;
  if (!r.measured->nondeterministic.empty()) {
    nondeterministic(c, r.measured->nondeterministic);
    return c;
  }
  c.message = r.measured->stopped;  // the model failed at one size: the sizes before it are kept (exit 3)
  analyse(c);
  if (referee.referee) attach_class_errors(c, r.measured->errors, *referee.referee);
  if (c.verdict == "variant" && (axis == Axis::PadRight || axis == Axis::PadLeft))
    c.advice.push_back(
        "to tell the other rows' padding from the batch size, audit the same rows with --axis batch: at the sizes "
        "where that is invariant, a padded neighbour is what changes a row's bits (another attention kernel for a "
        "mask with zeros, or padded tokens that reach the row)");
  return c;
}

report::Invariance analyse_cells(const InvarianceOptions& o, const std::vector<Cell>& cells,
                                 const std::vector<CellResult>& results, const RefereeRun& referee,
                                 nlohmann::ordered_json& environment) {
  report::Invariance inv;
  inv.model = o.model, inv.input = o.input, inv.device = o.session.device.to_string(), inv.rows = o.rows;
  inv.filler = o.filler == Filler::Random ? "random" : "input";
  inv.sizes = o.sizes_text, inv.budget = o.budget;
  inv.axis = axis_name(o.axis), inv.draft = o.axis == Axis::Verify ? o.draft : 0;
  inv.positions = o.axis == Axis::Verify ? o.positions : 0;
  inv.referee = referee.referee;
  for (size_t i = 0; i < cells.size(); ++i) {
    inv.configs.push_back(config_of(cells[i], results[i], o.axis, referee));
    if (results[i].measured && environment.is_null()) environment = results[i].measured->environment;
    if (!results[i].measured || !inv.kind.empty()) continue;
    const InvarianceMeasurement& m = *results[i].measured;
    inv.kind = m.kind, inv.runtime = m.runtime, inv.inputs = m.inputs, inv.outputs = m.outputs,
    inv.excluded = m.excluded, inv.notes = m.notes;
    inv.control = m.control;
  }
  if (inv.kind.empty()) inv.control.evidence = "not run: no configuration's worker finished";
  compare_configs(inv.configs);
  // The model's failure at one size is the run's error (exit 3, report::finalize): its one line on
  // stderr, as any input error, and the sizes measured before it stay in the report.
  for (const auto& c : inv.configs)
    if (c.verdict != "crashed" && c.verdict != "nondeterministic" && !c.message.empty()) {
      log::write(log::Level::Error,
                 fmt::format("{} (under {}; the sizes measured before it are in the report)", c.message, c.config));
      break;
    }
  return inv;
}

// Whatever invariance writes, its own readers must read (issue 39): --rows 4096 made a report of 80 MB
// and more JSON values than parse_json_document reads. So a report keeps at most kMaxReportRows
// row comparisons in its cells: those of the first anchors (and, past one anchor, of its first
// outputs), a note saying how many. The verdicts, classes and dependence are computed before, from
// every row; what reads the cells again (compare's per-output classes, merge's analysis of shards)
// sees the rows kept. 150,000 rows are about 1.2 million values, within kMaxJsonValues.
constexpr size_t kMaxReportRows = 150000;

void bound_rows(report::Invariance& inv) {
  size_t total = 0;
  for (const auto& c : inv.configs)
    for (const auto& cell : c.cells) total += cell.rows.size();
  if (total <= kMaxReportRows) return;
  std::unordered_map<std::string, int64_t> output_index;
  for (const auto& name : inv.outputs) output_index.emplace(name, static_cast<int64_t>(output_index.size()));
  const auto outputs = static_cast<int64_t>(output_index.size()) + 1;
  const auto rank = [&](const report::RowComparison& r) {
    const auto it = output_index.find(r.output);
    return static_cast<int64_t>(r.anchor) * outputs + (it == output_index.end() ? outputs - 1 : it->second);
  };
  std::map<int64_t, size_t> per_rank;  // rows per (anchor, output), in that order
  for (const auto& c : inv.configs)
    for (const auto& cell : c.cells)
      for (const auto& r : cell.rows) ++per_rank[rank(r)];
  int64_t limit = 0;  // rows of a rank below it are kept
  size_t kept = 0;
  for (const auto& [k, n] : per_rank) {
    if (kept + n > kMaxReportRows) break;
    kept += n;
    limit = k + 1;
  }
  for (auto& c : inv.configs)
    for (auto& cell : c.cells)
      std::erase_if(cell.rows, [&](const report::RowComparison& r) { return rank(r) >= limit; });
  const int64_t anchors = limit / outputs;
  inv.notes.push_back(fmt::format(
      "the cells keep {} of the {} row comparisons ({}): all of them would make a report larger than repro-audit "
      "reads; the verdicts, classes and dependence above count every row",
      kept, total,
      anchors >= 1 ? fmt::format("anchors 0 to {} of {}", anchors - 1, inv.rows)
                   : fmt::format("anchor 0's first {} outputs", limit)));
}

// A shard runs no fix search: it needs the whole sweep of the first configuration, which a shard
// holds only in part, and merge does not run workers. The shard that finds that configuration
// variant says so in a note, which merge keeps; the search is left to an unsharded run.
constexpr const char* kFixLeft =
    "fix search: not run in a shard (it needs every size of the first configuration in one process); run "
    "the audit unsharded to search for a switch that makes it invariant";

// The fix search (invariance_fix.h) from the first configuration when it is variant: its sweeps
// run one worker at a time, so that the forward passes it prices do not share the CPU, on one
// progress line ("[3/5] fix search: timing round 2 of 5, candidate threads=1: 4.1 s") whose total
// grows as the search plans more.
void search_fix(const InvarianceOptions& o, const ScratchDir& scratch, const RefereeRun& referee,
                report::Invariance& inv) {
  // Not after the model failed at a size: every candidate's sweep would stop there too.
  if (!o.fix_search || inv.configs.empty() || inv.configs.front().verdict != "variant" ||
      !inv.configs.front().message.empty())
    return;
  if (o.shard) {
    if (inv.configs.front().config == o.session.configs.front().name) inv.notes.push_back(kFixLeft);
    return;
  }
  int round = 0;
  // The plan: every candidate that runs alone and their combination; reruns and rounds are added.
  size_t planned = 1;
  for (const auto& c : fix_candidates(inv.configs.front(), o.session.device)) planned += c.stage == "single";
  Progress progress(planned, o.session.progress, LineEnd::ByOwner);
  const SweepFn sweep = [&](const std::vector<SweepStep>& steps, const std::vector<int64_t>& sizes, int anchors) {
    const std::vector<SweepPart> all(steps.size(), SweepPart{true, sizes, false});
    const std::vector<Cell> cells =
        plan_cells(o, scratch, steps, all, fmt::format("-fix{}", round++), referee, anchors);
    if (const size_t need = progress.finished() + cells.size(); need > progress.total())
      progress.add(need - progress.total());
    const std::vector<CellResult> results = run_cells(cells, o, 1, false, progress);
    std::vector<report::InvarianceConfig> out;
    for (size_t i = 0; i < cells.size(); ++i) out.push_back(config_of(cells[i], results[i], o.axis, referee));
    return out;
  };
  if (o.session.progress)
    log::info("invariance: {} is variant; searching for a switch that fixes it", inv.configs.front().config);
  const auto start = std::chrono::steady_clock::now();
  inv.fix = search_invariance_fix(inv.configs.front(), o.session.configs.front(), o.session.device, sweep);
  close_status_line(true);  // the search's last line stays, once
  inv.fix->search_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  inv.fix->first_sweep_ms = inv.configs.front().timing.worker_ms;
  inv.configs.front().advice.push_back("fix search: " + inv.fix->conclusion);
}

// Batch invariance as an audit kind (audit/skeleton/audit_kind.h): the plan is one target (the
// model) whose cells are the configurations, each one worker; analyse puts the sweep's answer in
// the report's invariance section, which takes the place of per-target results.
class InvarianceKind : public AuditKind {
 public:
  explicit InvarianceKind(const InvarianceOptions& o) : o_(o) {}

  // The rows of cells are size chunks (one unless sharded: invariance_shard.h), the cells' columns
  // the configurations.
  AuditPlan plan() override {
    check_readable(o_.model, "model");
    check_readable(o_.input, "input");
    AuditPlan p;
    p.body = report::Invariance{};  // no targets; analyse fills the sweep
    p.rows = plan_chunks(o_);
    if (o_.shard) p.identity = invariance_plan(o_);
    return p;
  }

  void run(const Cells& cells) override {
    run_referee();
    std::vector<SweepStep> steps;
    for (const auto& c : o_.session.configs) steps.push_back({c, "invariance under " + c.name});
    cells_ = plan_cells(o_, scratch_, steps, sweep_parts(o_, cells), "", referee_);
    Progress progress(cells_.size(), o_.session.progress);
    results_ = run_cells(cells_, o_, o_.session.jobs, true, progress);
  }

  void analyse(const Cells&, report::Report& report) override {
    // Said once the sweeps ran: a bad model or input stops the referee too, and its own line says so.
    if (referee_.referee && !referee_.referee->ran) log::warn("{}", report::referee_note_line(*referee_.referee));
    nlohmann::ordered_json environment;
    report::Invariance inv = analyse_cells(o_, cells_, results_, referee_, environment);
    search_fix(o_, scratch_, referee_, inv);
    bound_rows(inv);
    report.environment = std::move(environment);
    report.body = std::move(inv);
  }

 private:
  // The float64 referee (invariance_referee.h): one worker before the sweeps, on the CPU (or the
  // audited device with --referee device), that calls each anchor row alone in float64. Not in a shard
  // (merge runs no worker to class its rows), nor on the verify axis (its tokens are compared with
  // decode steps); an AOTInductor package cannot run in float64: one line, and the bitwise verdict stands.
  void run_referee() {
    if (o_.referee == RefereeMode::Off || o_.shard || o_.axis == Axis::Verify) return;
    const Device where = o_.referee == RefereeMode::Device ? o_.session.device : Device::cpu();
    if (looks_like_zip(o_.model) &&
        is_aoti_package(checked_zip_entries(o_.model, fmt::format("model '{}'", o_.model)))) {
      referee_.referee =
          referee_refused(o_.referee, where, "an AOTInductor package: its kernels are compiled for one dtype");
    } else {
      log::debug("float64 referee: each anchor row alone in float64 on {}", where.to_string());
      const Config config = referee_config(where);
      const std::vector<Cell> cells = plan_cells(o_, scratch_, {{config, "float64 referee"}},
                                                 {SweepPart{true, {1}, false}}, "-referee", RefereeRun{}, 0, &where);
      const ChildOutcome out = run_children({cells.front().job}, 1).front();
      // Its outcome in the words of run's referee (audit/trial/referee.h): ran, or why not.
      report::Trial summary;
      std::optional<TrialResult> result;
      if (out.kind == ChildOutcome::Kind::Exited && out.exit_code == 0 && !out.disk_full) {
        result.emplace();
      } else {
        summary.status = out.kind == ChildOutcome::Kind::TimedOut ? report::TrialStatus::Timeout
                         : out.kind == ChildOutcome::Kind::Exited ? report::TrialStatus::Error
                                                                  : report::TrialStatus::Crashed;
        summary.message = out.disk_full ? "no space left to write its tensors" : worker_error_line(out, false);
        if (summary.message.starts_with("not float64 throughout")) result.emplace().error_kind = "precision";
      }
      referee_.referee = referee_outcome(o_.referee, where, summary, result);
      if (referee_.referee->ran) referee_.dump = cells.front().dump_path;
    }
  }

  const InvarianceOptions& o_;
  const ScratchDir scratch_;
  RefereeRun referee_;
  std::vector<Cell> cells_;
  std::vector<CellResult> results_;
};

}  // namespace

report::Report run_invariance(const InvarianceOptions& o) {
  InvarianceKind kind(o);
  return run_kind(kind, o.session, o.shard);
}

}  // namespace ra::invariance
