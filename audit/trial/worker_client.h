// SPDX-License-Identifier: Apache-2.0
// The front's client of the worker's services. The front (repro-audit) never links LibTorch; whatever
// needs it runs in the worker executable (repro-audit-worker), started like any trial child: its
// own process and process group, a log file, a timeout. Besides trials, the front asks it for:
//   * divergence statistics of tensors whose digests differ (`__stats REQUEST RESULT`): the
//     dumps are torch.save files, so the numbers are computed where torch is;
//   * the probe catalogue (`__catalogue RESULT [LIBRARY...]`): the built-in probes and those of
//     --load-library plugins, described in JSON (audit/probes/probe_info.h).
//   * what an `exec` artifact holds (`__artifacts REQUEST RESULT`): a torch.save, safetensors or
//     TorchScript file's entries, read once per distinct version (worker/tensor_io/artifact_read.h);
//   * the self-test's in-process checks and traced models (`__selftest`, worker/child/selftest_child.h);
//   * the class of a trace's first differing op (`__op_class`, worker/trace/op_referee.h).
// A service that fails turns into the error the worker printed, with its exit code (2 usage,
// 3 input), so that the user reads the same line as before the split. The files both sides read
// and write are audit/trial/worker_protocol.h, which the worker includes instead of this header:
// the worker links none of this client (ctest `worker_tower`).
#pragma once

#include "audit/common/files.h"
#include "audit/trial/analysis.h"
#include "audit/trial/worker_protocol.h"
#include "reports/core_model.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ra {

// The one-line error a failed worker printed, without its "repro-audit: " prefix (the front adds it
// again). A worker that exited 2 or 3 stood for the user's error: with `user_errors`, that error is
// thrown here (UsageError, InputError), so that the user reads the worker's own line; an interrupt
// (130) is always thrown.
// A worker that the dynamic loader could not start (exit 127 with the loader's "error while
// loading shared libraries", "symbol lookup error", "version ... not found" or "relocation error"), or
// that found other torch libraries than it was built against, is thrown here as one line naming the
// loader's message and the cure, whatever `user_errors` says. Torch's own libraries (a moved or
// replaced torch environment, LD_LIBRARY_PATH naming another torch) are an InputError, as the worker's
// own check says it (worker/runtime/fingerprint.h); any other library (LD_LIBRARY_PATH or LD_PRELOAD
// shadowing libspdlog, libstdc++ or libc with one that lacks what the worker needs) an
// Error(Incomplete): no file of the user's is at fault, and nothing was audited.
std::string worker_error_line(const ChildOutcome& out, bool user_errors = true);
// The same check alone, for callers that read a worker's failure themselves (the preflight).
void check_worker_loaded(const ChildOutcome& out);

// `env`, `lint` and `diff`: the worker runs as the command itself, on the front's stdin, stdout and
// stderr, and its exit code is the command's. It did so by exec, which let a worker the loader could
// not start exit 127 with the loader's lines. Now the front forks it with stderr on a pipe, and the
// worker, once main() runs (the loader is done), writes a NUL there and takes back the front's stderr
// from the descriptor named by kForwardedStderr (take_back_forwarded_stderr()). The front holds what
// came through the pipe: after the NUL it passes it on; a worker that ended without one never ran, and
// if it exited 127 with the loader's line, the front throws as check_worker_loaded does.
// A stop signal the front receives goes on to the worker (whose own handlers end it: exit 130); the
// worker dies with the front (PR_SET_PDEATHSIG). Returns the worker's exit code (128 + N for a signal).
int run_forwarded(const std::vector<std::string>& argv);

// Runs `repro-audit-worker ARGS...` (tagged `tag` in the scratch folder) and waits for it. On a
// nonzero exit, throws the worker's own one-line error as UsageError, InputError or (a crash or a
// timeout) Error(Incomplete).
void run_worker_service(const ScratchDir& scratch, const std::string& tag, const std::vector<std::string>& args,
                        double timeout_s);

// Divergence statistics for each request, in one worker. A request the worker could not answer
// (the worker failed, a dump is unreadable) gets a note per name, never an exception.
std::vector<StatsAnswer> worker_stats(const ScratchDir& scratch, const std::vector<StatsRequest>& requests,
                                      double timeout_s);

// The facts for the class of a trace's first differing op (`__op_class`, worker/trace/op_referee.h),
// in one worker. A worker that fails gives an answer whose note says so, never an exception (an
// interrupt excepted).
OpClassAnswer worker_op_class(const ScratchDir& scratch, const OpClassRequest& request, double timeout_s);

// A DiffFn (audit/trial/analysis.h) that asks the worker, one worker per call: for the few calls
// of a traced run.
DiffFn worker_diff(const ScratchDir& scratch, double timeout_s, const std::optional<report::Tolerance>& tolerance);

// Statistics for many comparisons in one worker. Analysis code is pure, so it runs twice: first
// with collect(), which records what is asked and answers nothing, then, after resolve() has
// asked the worker once for everything, with answer().
class BatchedDiff {
 public:
  BatchedDiff(const ScratchDir& scratch, double timeout_s, const std::optional<report::Tolerance>& tolerance)
      : scratch_(scratch), timeout_s_(timeout_s), tolerance_(tolerance) {}
  DiffFn collect();
  void resolve();
  DiffFn answer() const;
  // Says that the file at `path` is a kept file that holds `declared` (StatsRequest::declared_a):
  // before resolve(), for each file a baseline or report names.
  void declare(const std::string& path, std::vector<report::TensorDigest> declared);

 private:
  static std::string key(const std::string& a, const std::string& b, const std::vector<std::string>& names);
  const ScratchDir& scratch_;
  double timeout_s_;
  std::optional<report::Tolerance> tolerance_;
  std::vector<StatsRequest> requests_;
  std::map<std::string, std::vector<report::TensorDigest>> declared_;
  std::map<std::string, size_t> index_;
  std::vector<StatsAnswer> answers_;
};

// The answer of one `__artifacts` worker; a worker that fails is an Error (its one line).
ArtifactAnswer worker_artifacts(const ScratchDir& scratch, const ArtifactRequest& request, double timeout_s);

}  // namespace ra
