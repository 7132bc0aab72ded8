// SPDX-License-Identifier: Apache-2.0
// `repro-audit run MODEL ...`: audit one model (TorchScript, torch.export archive or AOTInductor package).
#include "audit/common/errors.h"
#include "audit/run/model_audit.h"
#include "cli/command_table.h"
#include "cli/common.h"

#include <fmt/format.h>

namespace ra::cli {
namespace {

struct RunArgs : AuditArgs {
  std::string model;
  std::string input;
  std::vector<std::string> shapes;
  int64_t vocab = 0;
  std::string mode = "infer";
  int steps = 1;
  bool trace = false;
  uint64_t trace_capacity = 1 << 21;
  bool no_fix_search = false;
  int timed_runs = 5;
  std::string optimizer;  // "" = sgd
  double lr = 0;          // 0 = the optimizer's default
  bool replay = false;
  std::vector<std::string> replay_omit;
  bool no_native = false;
  int calls = 1;
  std::string referee = "cpu";
};

// Train-mode options: --optimizer and --lr, and the restart-replay's preconditions.
void fill_training(RunOptions& o, const RunArgs& a) {
  const bool train = a.mode == "train";
  if (!train && (!a.optimizer.empty() || a.lr > 0)) throw UsageError("--optimizer and --lr need --mode train");
  o.optimizer = a.optimizer.empty() ? "sgd" : a.optimizer;
  o.lr = a.lr > 0 ? a.lr : default_learning_rate(o.optimizer);
  if (a.replay && !train) throw UsageError("--replay needs --mode train");
  if (a.replay && a.steps < 2)
    throw UsageError(fmt::format("--replay needs --steps 2 or more (it restarts after step K/2), not {}", a.steps));
  if (!a.replay && !a.replay_omit.empty()) throw UsageError("--replay-omit needs --replay");
  o.replay = a.replay;
  o.replay_omit = a.replay_omit;
}

int execute(const RunArgs& a, const GlobalOptions& global) {
  RunOptions o;
  o.model = a.model;
  o.input_file = a.input;
  if (!a.input.empty() && !a.shapes.empty()) throw UsageError("--input and --shape exclude each other");
  for (const auto& s : a.shapes) o.shapes.push_back(parse_shape(s));
  if (a.vocab > 0 && a.shapes.empty()) throw UsageError("--vocab needs --shape (it sets the range of made token ids)");
  o.vocab = a.vocab;
  o.mode = a.mode;
  o.steps = a.steps;
  o.trace = a.trace;
  o.trace_capacity = a.trace_capacity;
  o.fix_search = !a.no_fix_search;
  o.timed_runs = a.timed_runs;
  o.no_native = a.no_native;
  o.calls = a.calls;
  o.referee = parse_referee_mode(a.referee);
  if (a.calls > 1 && a.mode == "train")
    throw UsageError("--calls applies to --mode infer only (training changes the model from one call to the next)");
  fill_training(o, a);
  o.device = Device::parse(a.device);
  fill_session(o, a, global, default_config_names(o.device));
  o.shard = shard_option(a);
  // The restart-replay picks its configuration from all of them: it cannot be split.
  if (o.shard && o.replay && o.shard->request.count > 1)
    throw UsageError(
        "--replay needs every configuration's results in one process: it cannot run in a shard (drop --replay, or run "
        "it unsharded)");
  const ReportJudges judges = load_judges(a, o);
  keep_tensors_option(a.out, judges, o);
  return finish_report(run_audit(o), a.out, judges);
}

}  // namespace

Action attach_run(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<RunArgs>();
  sub.add_option(
         "model", a->model,
         "TorchScript archive (torch.jit.save), torch.export archive (torch.export.save) or AOTInductor package")
      ->required();
  sub.add_option("--input", a->input, "torch.save file holding a tensor, tuple, list or dict of tensors");
  sub.add_option("--shape", a->shapes,
                 "synthetic seeded input, e.g. 8x3x224x224[:float32] (default dtype: the model's for that input, else "
                 "float32); repeat for several inputs");
  sub.add_option("--vocab", a->vocab,
                 "integer --shape inputs (token ids) are drawn from [0, N) [the rows of the embedding the input "
                 "indexes, where an export archive's graph shows one; else 10]")
      ->check(integer_in(1, uint64_t{1} << 62));
  sub.add_option("--mode", a->mode, "infer, or train (loss = scalar output, else sum of outputs; optimizer steps)")
      ->check(CLI::IsMember({"infer", "train"}))
      ->capture_default_str();
  CLI::Option* steps = sub.add_option("--steps", a->steps, "optimizer steps in train mode")
                           ->check(integer_in(1, 1000000))
                           ->capture_default_str();
  sub.add_flag("--trace", a->trace,
               "record every op (forward, backward, optimizer) with digests of its inputs and outputs; name the "
               "first op that diverged and search for the cheapest switches that fix it");
  CLI::Option* capacity =
      sub.add_option("--trace-capacity", a->trace_capacity,
                     "tensor digests and records a trace may hold (16 bytes a digest, a few dozen a "
                     "record; at most 16777216); later ops are dropped")
          ->check(integer_in(1024, kMaxTraceCapacity))
          ->capture_default_str();
  sub.add_flag("--no-fix-search", a->no_fix_search, "with --trace: name root causes only, do not search for fixes");
  CLI::Option* timed =
      sub.add_option("--timed-runs", a->timed_runs, "fix search: timed runs per configuration after a warm-up (median)")
          ->check(integer_in(5, 1000))
          ->capture_default_str();
  sub.add_option("--optimizer", a->optimizer, "train mode: sgd or adam (LibTorch's torch::optim) [sgd]")
      ->check(CLI::IsMember({"sgd", "adam"}));
  sub.add_option("--lr", a->lr, "train mode: learning rate [0.01 for sgd, 0.001 for adam]")->check(positive_real());
  sub.add_flag(
      "--replay", a->replay,
      "train mode, --steps >= 2: also train K/2 steps, checkpoint (parameters, buffers, optimizer, generators), "
      "resume in a fresh process, and compare with the uninterrupted run");
  sub.add_option("--replay-omit", a->replay_omit,
                 "rng or optimizer: simulate a checkpoint that does not save this state, to see whether your training "
                 "depends on it (repeatable)")
      ->check(CLI::IsMember({"rng", "optimizer"}))
      ->delimiter(',');
  sub.add_option("--calls", a->calls,
                 "call the model K times in each trial and compare calls 2..K with call 1 in the same process "
                 "(warm-up dependence: cuDNN benchmark's first pick, lazy initialisation)")
      ->check(integer_in(1, 1000))
      ->capture_default_str();
  sub.add_flag("--no-native", a->no_native,
               "refuse a model that is native code (an AOTInductor package, whose compiled library would run in the "
               "audit's processes) with exit 3");
  add_audit_options(
      sub, *a,
      {"default,threads-1 on CPU, default,det on CUDA", "seconds before a trial is killed and recorded as timeout",
       "shared library with custom ops the model needs (repeatable)"});
  add_baseline_tensors_option(sub, a->out);
  add_referee_option(sub, a->referee);
  return [a, &global, steps, capacity, timed] {
    // An option that does not apply would be silently ignored: a usage error instead.
    if (steps->count() > 0 && a->mode != "train") throw UsageError("--steps applies to --mode train only");
    if (!a->trace && (a->no_fix_search || capacity->count() > 0 || timed->count() > 0))
      throw UsageError(fmt::format("{} applies with --trace only", a->no_fix_search        ? "--no-fix-search"
                                                                   : capacity->count() > 0 ? "--trace-capacity"
                                                                                           : "--timed-runs"));
    if (a->no_fix_search && timed->count() > 0)
      throw UsageError("--timed-runs times the fix search, which --no-fix-search turns off");
    return execute(*a, global);
  };
}

}  // namespace ra::cli
