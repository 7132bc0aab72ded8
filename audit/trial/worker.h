// SPDX-License-Identifier: Apache-2.0
// The worker's services to the front. The front (repro-audit) never links LibTorch; whatever
// needs it runs in the worker executable (repro-audit-worker), started like any trial child: its
// own process and process group, a log file, a timeout. Besides trials, the front asks it for:
//   * divergence statistics of tensors whose digests differ (`__stats REQUEST RESULT`): the
//     dumps are torch.save files, so the numbers are computed where torch is;
//   * the probe catalogue (`__catalogue RESULT [LIBRARY...]`): the built-in probes and those of
//     --load-library plugins, described in JSON (audit/probes/probe_info.h).
//   * what an `exec` artifact holds (`__artifacts REQUEST RESULT`): a torch.save, safetensors or
//     TorchScript file's entries, read once per distinct version (worker/tensor_io/artifact_read.h);
//   * the self-test's in-process checks and traced models (`__selftest`, worker/child/selftest_child.h).
// A service that fails turns into the error the worker printed, with its exit code (2 usage,
// 3 input), so that the user reads the same line as before the split.
#pragma once

#include "audit/common/files.h"
#include "audit/trial/analysis.h"
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
// loading shared libraries" or "symbol lookup error"), or that found other torch libraries than it
// was built against, is thrown here as one InputError naming the cause and the cure, whatever
// `user_errors` says: a moved or replaced torch environment, or LD_LIBRARY_PATH naming another.
std::string worker_error_line(const ChildOutcome& out, bool user_errors = true);
// The same check alone, for callers that read a worker's failure themselves (the preflight).
void check_worker_loaded(const ChildOutcome& out);

// Runs `repro-audit-worker ARGS...` (tagged `tag` in the scratch folder) and waits for it. On a
// nonzero exit, throws the worker's own one-line error as UsageError, InputError or (a crash or a
// timeout) Error(Incomplete).
void run_worker_service(const ScratchDir& scratch, const std::string& tag, const std::vector<std::string>& args,
                        double timeout_s);

struct StatsRequest {
  std::string dump_a;
  std::string dump_b;
  std::vector<std::string> names;
  std::optional<report::Tolerance> tolerance;  // --atol/--rtol; nullopt: each dtype's default
  // For a kept file (a baseline's --baseline-tensors file), the tensors its baseline declares: what
  // the worker reads from it is bounded by them (worker/tensor_io/kept_read.h); empty for a trial's dump.
  std::vector<report::TensorDigest> declared_a, declared_b;
};
using StatsAnswer = std::map<std::string, report::DivergenceStats>;

// Divergence statistics for each request, in one worker. A request the worker could not answer
// (the worker failed, a dump is unreadable) gets a note per name, never an exception.
std::vector<StatsAnswer> worker_stats(const ScratchDir& scratch, const std::vector<StatsRequest>& requests,
                                      double timeout_s);

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

// `__artifacts REQUEST RESULT` (audit/exec/exec_audit.h, worker/tensor_io/artifact_read.h): what
// `exec`'s artifact files hold, entry by entry, and how two versions of entries differ.
// One artifact file to read: its entries' digests, named "NAME:ENTRY" ("ckpt.pt:model/fc.weight";
// a file holding one bare tensor gives "NAME").
struct ArtifactRead {
  std::string path;
  std::string name;
};
// What a file held: its kind ("torch.save", "safetensors", "torchscript"), the entries, or, when
// it could not be read as its kind, kind "bytes" and a note saying why (the front then compares
// it by bytes).
struct ArtifactContents {
  std::string kind;
  std::string note;
  std::vector<report::TensorDigest> entries;
};
// Two versions of one artifact, and the entries whose statistics are wanted (full names).
struct ArtifactCompare {
  std::string path_a, path_b, name;
  std::vector<std::string> entries;
};
struct ArtifactRequest {
  std::vector<ArtifactRead> reads;
  std::vector<ArtifactCompare> compares;
  std::optional<report::Tolerance> tolerance;
};
struct ArtifactAnswer {
  std::vector<ArtifactContents> reads;                                   // in request order
  std::vector<std::map<std::string, report::DivergenceStats>> compares;  // likewise; a note where there are no numbers
};

nlohmann::json to_json(const ArtifactRequest& r);
ArtifactRequest artifact_request_from_json(const nlohmann::json& j);
nlohmann::json to_json(const ArtifactAnswer& a);
ArtifactAnswer artifact_answer_from_json(const nlohmann::json& j);

// Request and answer files of `__stats` (the worker side reads and writes the same format).
nlohmann::json stats_requests_to_json(const std::vector<StatsRequest>& requests);
std::vector<StatsRequest> stats_requests_from_json(const nlohmann::json& j);
nlohmann::json stats_answers_to_json(const std::vector<StatsAnswer>& answers);
std::vector<StatsAnswer> stats_answers_from_json(const nlohmann::json& j);
// The answer of one `__artifacts` worker; a worker that fails is an Error (its one line).
ArtifactAnswer worker_artifacts(const ScratchDir& scratch, const ArtifactRequest& request, double timeout_s);

}  // namespace ra
