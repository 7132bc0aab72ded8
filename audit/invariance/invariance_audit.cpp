// SPDX-License-Identifier: Apache-2.0
#include "audit/invariance/invariance_audit.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/common/log.h"
#include "audit/common/paths.h"
#include "audit/invariance/invariance_analysis.h"
#include "audit/invariance/invariance_shard.h"
#include "audit/skeleton/audit_kind.h"
#include "audit/trial/runner.h"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <optional>

namespace ra::invariance {
namespace {

struct Cell {
  Config config;
  std::string request_path, result_path;
  ChildJob job;
};

struct CellResult {
  std::optional<InvarianceMeasurement> measured;
  std::string crash;  // why the configuration's worker failed, when it did
  double worker_ms = 0;
};

// One cell per configuration this process runs (`parts`, invariance_shard.h): its request
// written, its worker described.
std::vector<Cell> plan_cells(const InvarianceOptions& o, const ScratchDir& scratch,
                             const std::vector<SweepPart>& parts) {
  std::vector<Cell> cells;
  for (size_t i = 0; i < o.session.configs.size(); ++i) {
    if (!parts[i].runs) continue;
    Cell c;
    c.config = o.session.configs[i];
    InvarianceRequest rq{{}, o.rows, o.filler, parts[i].sizes, o.budget, o.batch_dims, cells.empty()};
    rq.bisect = parts[i].bisect;
    rq.spec.model = o.model;
    rq.spec.input_file = o.input;
    rq.spec.device = o.session.device.to_string();
    rq.spec.seed = o.session.seed;
    rq.spec.config = c.config;
    rq.spec.load_libraries = o.session.load_libraries;
    const std::string base = fmt::format("{}/invariance-{}", scratch.path(), i);
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

// A worker that failed: its own line for a bad model or input (no report), else a crash.
std::string failure(const ChildOutcome& out) {
  std::string line = last_line(out.log_tail);
  if (const std::string prefix = "repro-audit: "; line.rfind(prefix, 0) == 0) line = line.substr(prefix.size());
  if (out.kind == ChildOutcome::Kind::Exited && out.exit_code == static_cast<int>(ExitCode::Usage))
    throw UsageError(line);
  if (out.kind == ChildOutcome::Kind::Exited && out.exit_code == static_cast<int>(ExitCode::Input))
    throw InputError(line);
  if (out.kind == ChildOutcome::Kind::Exited && out.exit_code == static_cast<int>(ExitCode::Interrupted))
    throw Interrupted();
  const std::string how = out.kind == ChildOutcome::Kind::TimedOut   ? "timed out"
                          : out.kind == ChildOutcome::Kind::Signaled ? fmt::format("died of signal {}", out.signal)
                          : out.kind == ChildOutcome::Kind::SpawnFailed
                              ? "could not be started"
                              : fmt::format("exited with code {}", out.exit_code);
  return fmt::format("the invariance worker {}{}", how, line.empty() ? "" : ": " + line);
}

std::vector<CellResult> run_cells(const std::vector<Cell>& cells, const InvarianceOptions& o) {
  std::vector<ChildJob> jobs;
  for (const auto& c : cells) jobs.push_back(c.job);
  const auto outcomes = run_children(jobs, o.session.jobs, [&](size_t i, const ChildOutcome& out) {
    if (o.session.progress)
      log::info("[{}/{}] invariance under {}: {:.0f} ms", i + 1, cells.size(), cells[i].config.name, out.wall_ms);
  });
  std::vector<CellResult> results;
  for (size_t i = 0; i < cells.size(); ++i) {
    CellResult r;
    r.worker_ms = outcomes[i].wall_ms;
    if (outcomes[i].kind != ChildOutcome::Kind::Exited || outcomes[i].exit_code != 0) {
      r.crash = failure(outcomes[i]);
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

report::InvarianceConfig config_of(const Cell& cell, const CellResult& r) {
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
  analyse(c);
  return c;
}

report::Invariance analyse_cells(const InvarianceOptions& o, const std::vector<Cell>& cells,
                                 const std::vector<CellResult>& results, nlohmann::ordered_json& environment) {
  report::Invariance inv;
  inv.model = o.model, inv.input = o.input, inv.device = o.session.device.to_string(), inv.rows = o.rows;
  inv.filler = o.filler == Filler::Random ? "random" : "input";
  inv.sizes = o.sizes_text, inv.budget = o.budget;
  for (size_t i = 0; i < cells.size(); ++i) {
    inv.configs.push_back(config_of(cells[i], results[i]));
    if (results[i].measured && environment.is_null()) environment = results[i].measured->environment;
    if (!results[i].measured || !inv.kind.empty()) continue;
    const InvarianceMeasurement& m = *results[i].measured;
    inv.kind = m.kind, inv.inputs = m.inputs, inv.outputs = m.outputs, inv.excluded = m.excluded, inv.notes = m.notes;
    inv.control = m.control;
  }
  if (inv.kind.empty()) inv.control.evidence = "not run: no configuration's worker finished";
  compare_configs(inv.configs);
  return inv;
}

// Batch invariance as an audit kind (audit/skeleton/audit_kind.h): the plan is one target (the
// model) whose cells are the configurations, each one worker; analyse puts the sweep's answer in
// the report's invariance section, which takes the place of per-target results.
class InvarianceKind : public AuditKind {
 public:
  explicit InvarianceKind(const InvarianceOptions& o) : o_(o) {}

  // The targets are size chunks (one unless sharded: invariance_shard.h), the cells' columns the
  // configurations.
  AuditPlan plan() override {
    check_readable(o_.model, "model");
    check_readable(o_.input, "input");
    AuditPlan p;
    for (size_t t = 0; t < plan_chunks(o_); ++t) {
      report::Target chunk;
      chunk.name = o_.model;
      p.targets.push_back(std::move(chunk));
    }
    if (o_.shard) p.identity = invariance_plan(o_);
    return p;
  }

  void run(const Cells& cells) override {
    cells_ = plan_cells(o_, scratch_, sweep_parts(o_, cells));
    results_ = run_cells(cells_, o_);
  }

  void analyse(const Cells&, report::Report& report) override {
    nlohmann::ordered_json environment;
    report.invariance = analyse_cells(o_, cells_, results_, environment);
    report.environment = std::move(environment);
    report.targets.clear();  // the invariance section is the result
  }

 private:
  const InvarianceOptions& o_;
  const ScratchDir scratch_;
  std::vector<Cell> cells_;
  std::vector<CellResult> results_;
};

}  // namespace

report::Report run_invariance(const InvarianceOptions& o) {
  InvarianceKind kind(o);
  return run_kind(kind, o.session, o.shard);
}

}  // namespace ra::invariance
