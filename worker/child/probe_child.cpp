// SPDX-License-Identifier: Apache-2.0
// One process, one configuration, many probes. The order of steps matches the model child
// (worker/child/trial_child.cpp): the configuration's switches are applied and read back before CUDA or any
// probe is touched, so ops that choose their path by the flags see them from the first call.
// Then, for each probe (a sticky device error ends the process after the probe that hit it: see
// probe_restart_line):
//   1. log "start" (flushed): if the process dies now, the parent knows which probe killed it;
//   2. open its target (worker/targets/probe_target.cpp): every run reseeds the global generators and gives
//      the probe its own generator, seeded from the trial seed and the probe's name, so its inputs
//      do not depend on which other probes ran;
//   3. run it once, recording digests (and CPU copies for the parent's statistics), and capture
//      the determinism alerts it raises as warnings (warn_only mode) through a c10 warning handler;
//   4. with time_probes, run it again without recording, a few times within a small budget, and
//      keep the median (the device is synchronised around each run): the first run pays for lazy
//      initialisation and cuDNN autotuning, and one sub-millisecond run is mostly noise;
//   5. log the result (flushed).
#include "worker/child/probe_child.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/trial/probe_protocol.h"
#include "probes/registry.h"
#include "worker/runtime/child_support.h"
#include "worker/runtime/fingerprint.h"
#include "worker/runtime/switches.h"
#include "worker/targets/target.h"

#include <c10/util/Exception.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <dlfcn.h>

namespace ra {
namespace {

using report::TrialStatus;

// Collects the determinism alerts raised as warnings (use_deterministic_algorithms warn_only).
class AlertCollector final : public c10::WarningHandler {
 public:
  void process(const c10::Warning& warning) override {
    const std::string& msg = warning.msg();
    if (!is_determinism_alert(msg)) return;
    const std::string line = msg.substr(0, msg.find('\n'));
    if (std::find(alerts_.begin(), alerts_.end(), line) == alerts_.end()) alerts_.push_back(line);
  }
  std::vector<std::string> take() { return std::exchange(alerts_, {}); }

 private:
  std::vector<std::string> alerts_;
};

class LogFile {
 public:
  explicit LogFile(const std::string& path) : f_(std::fopen(path.c_str(), "a")) {
    if (!f_) throw std::runtime_error(fmt::format("cannot open the result log '{}'", path));
  }
  ~LogFile() { std::fclose(f_); }
  LogFile(const LogFile&) = delete;
  LogFile& operator=(const LogFile&) = delete;
  void write(const std::string& line) {
    std::fputs(line.c_str(), f_);
    std::fflush(f_);
  }

 private:
  std::FILE* f_;
};

// `sticky` is set when the probe hit an error that poisons the device context for the process.
TrialResult run_one(targets::Target& target, const TrialSpec& spec, const c10::Device& device, const std::string& name,
                    AlertCollector& alerts, bool& sticky) {
  TrialResult r;
  const auto reference = spec.dump_only_differing.find(name);
  Recorder rec(!spec.dump_path.empty(),
               reference == spec.dump_only_differing.end() ? std::map<std::string, std::string>{} : reference->second);
  std::vector<report::TensorDigest> no_state;
  const double start = now_ms();
  try {
    target.load(spec, device);
    target.run(rec, no_state);
  } catch (const probes::ProbeSkip& skip) {
    r.status = TrialStatus::Skipped;
    r.message = skip.what();
  } catch (const c10::AcceleratorError& e) {
    // An illegal address or a device-side assert: CUDA errors of this kind are sticky.
    r.message = error_text(e);
    r.status = TrialStatus::Error;
    sticky = true;
  } catch (const std::exception& e) {
    r.message = error_text(e);
    r.status = is_determinism_alert(r.message) ? TrialStatus::Raised : TrialStatus::Error;
  }
  r.wall_ms = now_ms() - start;
  r.alerts = alerts.take();
  if (r.status != TrialStatus::Ok) return r;
  r.tensors = std::move(rec.tensors());
  r.dump_error = rec.write_dump(fmt::format("{}.{}.pt", spec.dump_path, name));  // costs its statistics only
  if (spec.time_probes) {
    // Unrecorded runs after the recorded one, up to kTimedRuns or until kTimeBudgetMs have passed;
    // the median is the probe's time under this configuration.
    constexpr int kTimedRuns = 5;
    constexpr double kTimeBudgetMs = 20;
    std::vector<double> times;
    try {
      const double begin = now_ms();
      while (static_cast<int>(times.size()) < kTimedRuns && (times.empty() || now_ms() - begin < kTimeBudgetMs)) {
        Recorder off = Recorder::off();
        synchronize(device);
        const double t0 = now_ms();
        target.run(off, no_state);
        times.push_back(now_ms() - t0);
      }
    } catch (const std::exception&) {
      // The recorded run succeeded; time what did run, or keep the recorded run's time.
    }
    if (const auto m = report::median(std::move(times))) r.wall_ms = *m;
    (void)alerts.take();
  }
  return r;
}

}  // namespace

void load_probe_plugins(const std::vector<std::string>& libraries) {
  try {
    for (void* handle : load_libraries(libraries)) {
      const auto plugin = reinterpret_cast<ra_probe_plugin_v1_fn>(dlsym(handle, "ra_probe_plugin_v1"));
      if (!plugin) continue;
      probes::ProbeList extra;
      plugin(extra);
      probes::add_probes(std::move(extra));
    }
  } catch (const TrialInputError& e) {
    throw InputError(e.what());
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("a --load-library plugin: {}", e.what()));
  }
}

void write_probe_catalogue(const std::string& path, const std::vector<std::string>& libraries) {
  load_probe_plugins(libraries);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : probes::all_probes()) out.push_back(probes::to_json(p->info()));
  write_file_atomic(path, out.dump());
}

int run_probe_child(const TrialSpec& spec, const std::string& log_path) {
  LogFile log(log_path);
  TrialResult header;
  try {
    apply_switches(spec.config);
    header.switches = read_switches(spec.config);
    if (const std::string mismatch = switch_mismatches(header.switches); !mismatch.empty()) {
      header.status = TrialStatus::ConfigError;
      header.message = mismatch;
    }
  } catch (const std::exception& e) {
    header.status = TrialStatus::ConfigError;
    header.message = "cannot apply configuration: " + error_text(e);
  }
  std::optional<c10::Device> device;
  if (header.status == TrialStatus::Ok) {
    disable_jit_optimisations();
    try {
      load_probe_plugins(spec.load_libraries);
      device = checked_device(spec.device);
      if (spec.task == ChildTask::Preflight) header.environment = environment_fingerprint();
      // The CUDA context is made here rather than in the first probe's recorded run, so that the
      // begin line's startup_ms is the child's whole start-up (probe_audit logs it with -v).
      else if (device->is_cuda())
        synchronize(*device);
    } catch (const std::exception& e) {
      record_error(header, e);
    }
  }
  header.startup_ms = ms_since_spawn();
  log.write(probe_begin_line(header));
  if (header.status != TrialStatus::Ok || spec.task == ChildTask::Preflight) return 0;

  AlertCollector alerts;
  c10::WarningUtils::WarningHandlerGuard guard(&alerts);
  for (const auto& name : spec.probes) {
    log.write(probe_start_line(name));
    const std::unique_ptr<targets::Target> target = targets::open_probe_target(name);
    TrialResult r;
    if (!target) {
      r.status = TrialStatus::Error;
      r.message = fmt::format("unknown probe '{}'", name);
    } else {
      bool sticky = false;
      r = run_one(*target, spec, *device, name, alerts, sticky);
      if (sticky) {
        log.write(probe_result_line(name, r));
        log.write(probe_restart_line(fmt::format("probe '{}' left a sticky device error", name)));
        std::fflush(nullptr);
        std::_Exit(0);  // no teardown in a poisoned CUDA context
      }
    }
    log.write(probe_result_line(name, r));
  }
  log.write(probe_end_line());
  return 0;
}

}  // namespace ra
