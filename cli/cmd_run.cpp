// SPDX-License-Identifier: Apache-2.0
// `repro-audit run MODEL ...`: audit one TorchScript model.
#include "audit/audit.h"
#include "audit/errors.h"
#include "cli/commands.h"
#include "cli/common.h"

#include <fmt/format.h>


namespace ra::cli {
namespace {

struct RunArgs : AuditArgs {
  std::string model;
  std::string input;
  std::vector<std::string> shapes;
  std::string mode = "infer";
  int steps = 1;
  bool trace = false;
  uint64_t trace_capacity = 1 << 21;
  bool no_fix_search = false;
  int timed_runs = 5;
};

int execute(const RunArgs& a, const GlobalOptions& global) {
  RunOptions o;
  o.model = a.model;
  o.input_file = a.input;
  if (!a.input.empty() && !a.shapes.empty()) throw UsageError("--input and --shape exclude each other");
  for (const auto& s : a.shapes) o.shapes.push_back(parse_shape(s));
  o.mode = a.mode;
  o.steps = a.steps;
  o.trace = a.trace;
  o.trace_capacity = a.trace_capacity;
  o.fix_search = !a.no_fix_search;
  o.timed_runs = a.timed_runs;
  fill_session(o, a, global, default_config_names(device_type(a.device)));
  return emit_report(run_audit(o), a);
}

}  // namespace

Action attach_run(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<RunArgs>();
  sub.add_option("model", a->model, "TorchScript archive (torch.jit.save)")->required();
  sub.add_option("--input", a->input, "torch.save file holding a tensor, tuple, list or dict of tensors");
  sub.add_option("--shape", a->shapes, "synthetic seeded input, e.g. 8x3x224x224[:float32]; repeat for several inputs");
  sub.add_option("--mode", a->mode, "infer, or train (loss = scalar output, else sum of outputs; SGD steps)")
      ->check(CLI::IsMember({"infer", "train"}))
      ->capture_default_str();
  sub.add_option("--steps", a->steps, "optimizer steps in train mode")->check(CLI::PositiveNumber)->capture_default_str();
  sub.add_flag("--trace", a->trace,
               "record every op (forward, backward, optimizer) with digests of its inputs and outputs; name the "
               "first op that diverged and search for the cheapest switches that fix it");
  sub.add_option("--trace-capacity", a->trace_capacity, "tensor digests a trace may hold (16 bytes each); later ops are dropped")
      ->check(CLI::Range(uint64_t{1024}, uint64_t{1} << 32))
      ->capture_default_str();
  sub.add_flag("--no-fix-search", a->no_fix_search, "with --trace: name root causes only, do not search for fixes");
  sub.add_option("--timed-runs", a->timed_runs, "fix search: timed runs per configuration after a warm-up (median)")
      ->check(CLI::Range(5, 1000))
      ->capture_default_str();
  add_audit_options(sub, *a,
                    {"default,threads-1 on CPU, default,det on CUDA",
                     "seconds before a trial is killed and recorded as timeout",
                     "shared library with custom ops the model needs (repeatable)"});
  return [a, &global] { return execute(*a, global); };
}

}  // namespace ra::cli
