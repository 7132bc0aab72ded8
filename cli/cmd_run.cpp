// SPDX-License-Identifier: Apache-2.0
// `repro-audit run MODEL ...`: audit one TorchScript model.
#include "audit/audit.h"
#include "audit/errors.h"
#include "audit/files.h"
#include "cli/commands.h"
#include "reports/render.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include <unistd.h>

namespace ra::cli {
namespace {

struct RunArgs {
  std::string model;
  std::string input;
  std::vector<std::string> shapes;
  std::string device = "cpu";
  std::string mode = "infer";
  int steps = 1;
  int repeats = 3;
  std::vector<std::string> configs;
  std::string report;
  bool json = false;
  int jobs = 1;
  double timeout = 600;
  uint64_t seed = 0;
  std::vector<std::string> libraries;
};

std::string device_type(const std::string& device) {
  if (device == "cpu") return "cpu";
  if (device == "cuda" || device.rfind("cuda:", 0) == 0) {
    const std::string index = device.size() > 5 ? device.substr(5) : "0";
    if (device.size() > 4 && (index.empty() || index.find_first_not_of("0123456789") != std::string::npos))
      throw UsageError(fmt::format("unknown device '{}' (use cpu, cuda or cuda:N)", device));
    return "cuda";
  }
  throw UsageError(fmt::format("unknown device '{}' (use cpu, cuda or cuda:N)", device));
}

void check_writable_target(const std::string& path) {
  const auto dir = std::filesystem::absolute(path).parent_path();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw UsageError(fmt::format("cannot write report '{}': folder '{}' does not exist", path, dir.string()));
  if (::access(dir.c_str(), W_OK) != 0)
    throw UsageError(fmt::format("cannot write report '{}': folder '{}' is not writable", path, dir.string()));
}

int execute(const RunArgs& a, const GlobalOptions& global) {
  RunOptions o;
  o.model = a.model;
  o.input_file = a.input;
  if (!a.input.empty() && !a.shapes.empty()) throw UsageError("--input and --shape exclude each other");
  for (const auto& s : a.shapes) o.shapes.push_back(parse_shape(s));
  o.device = a.device;
  const std::string type = device_type(a.device);
  o.mode = a.mode;
  o.steps = a.steps;
  o.repeats = a.repeats;
  o.configs = parse_configs(a.configs.empty() ? default_config_names(type) : a.configs, logical_cpu_count());
  o.jobs = a.jobs;
  o.timeout_s = a.timeout;
  o.seed = a.seed;
  o.load_libraries = a.libraries;
  o.command = global.argv;
  o.progress = !global.quiet && isatty(STDERR_FILENO);
  if (!a.report.empty()) check_writable_target(a.report);

  const report::Report rep = run_audit(o);
  if (!a.report.empty()) write_file_atomic(a.report, report::render_json(rep));
  const std::string out = a.json ? report::render_json(rep) : report::render_text(rep);
  std::fputs(out.c_str(), stdout);
  return rep.exit_code;
}

}  // namespace

Action attach_run(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<RunArgs>();
  sub.add_option("model", a->model, "TorchScript archive (torch.jit.save)")->required();
  sub.add_option("--input", a->input, "torch.save file holding a tensor, tuple, list or dict of tensors");
  sub.add_option("--shape", a->shapes, "synthetic seeded input, e.g. 8x3x224x224[:float32]; repeat for several inputs");
  sub.add_option("--device", a->device, "cpu, cuda or cuda:N")->capture_default_str();
  sub.add_option("--mode", a->mode, "infer, or train (loss = scalar output, else sum of outputs; SGD steps)")
      ->check(CLI::IsMember({"infer", "train"}))
      ->capture_default_str();
  sub.add_option("--steps", a->steps, "optimizer steps in train mode")->check(CLI::PositiveNumber)->capture_default_str();
  sub.add_option("--repeats", a->repeats, "fresh-process runs per configuration")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub.add_option("--configs", a->configs,
                 "configurations: presets (default, benchmark, cudnn-det, det-warn, det, strict, threads-1, threads-N, "
                 "mkl-cbwr) or key=value lists joined by '+' (e.g. det+threads=1); default: default,threads-1 on "
                 "CPU, default,det on CUDA")
      ->delimiter(',');
  sub.add_option("--report", a->report, "write the JSON report here (atomically)");
  sub.add_flag("--json", a->json, "print the JSON report on stdout instead of the summary");
  sub.add_option("--jobs,-j", a->jobs, "trials run at once")->check(CLI::PositiveNumber)->capture_default_str();
  sub.add_option("--timeout", a->timeout, "seconds before a trial is killed and recorded as timeout")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub.add_option("--seed", a->seed, "seed of every generator and of synthetic inputs")->capture_default_str();
  sub.add_option("--load-library", a->libraries, "shared library with custom ops the model needs (repeatable)");
  return [a, &global] { return execute(*a, global); };
}

}  // namespace ra::cli
