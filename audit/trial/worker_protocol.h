// SPDX-License-Identifier: Apache-2.0
// What the front and the worker say to each other besides a trial (audit/trial/trial_spec.h): the
// request and answer files of the worker's services `__stats` and `__artifacts`, and how a
// forwarded command's worker takes back the front's stderr. Both sides include this header: the
// front's client (audit/trial/worker_client.h) writes the requests and reads the answers, the worker
// (worker/services/) reads the requests and writes the answers, and neither includes the other's
// side, so that the worker links nothing of the client (the `layout` and `worker_tower` tests).
#pragma once

#include "reports/core_model.h"
#include "reports/referee_model.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ra {

// `__stats REQUEST RESULT`: divergence statistics of the named tensors of two dumps, one answer per
// request, computed where torch is (worker/tensor_io/kept_read.h reads the files).
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

// Request and answer files of `__stats` (the worker side reads and writes the same format).
nlohmann::json stats_requests_to_json(const std::vector<StatsRequest>& requests);
std::vector<StatsRequest> stats_requests_from_json(const nlohmann::json& j);
nlohmann::json stats_answers_to_json(const std::vector<StatsAnswer>& answers);
std::vector<StatsAnswer> stats_answers_from_json(const nlohmann::json& j);

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

// `__op_class REQUEST RESULT` (audit/trace/op_class.h, worker/trace/op_referee.h): the class of a trace's
// first differing op, from the call a capture run kept (its name and its inputs, `<dump>.call`) and the
// outputs two capture runs gave (`output/N` of their dumps).
struct OpClassRequest {
  std::string call;            // the kept call: torch.save'd (name, overload, arguments)
  std::string dump_a, dump_b;  // the two runs' captured outputs
  int output = 0;              // which output differed
};
struct OpClassAnswer {
  // Why there are no figures against the op's float64 rerun ("" when there are): the call was not kept,
  // the op has no float64 kernel, its output is not floating.
  std::string note;
  std::optional<report::ReferenceError> a, b;  // each run's output against the op rerun in float64
  // A non-accumulating index write (index_put_, index_copy_, scatter_ without reduce, put_): how many
  // elements it wrote more than once, the first few of them (flat offsets into the written tensor), and
  // whether every element that differs between the runs is one of them and holds, in both runs, one of
  // the values written to it.
  bool index_write = false;
  int64_t written_twice = 0;
  std::vector<int64_t> first_written_twice;
  int64_t differing = 0;
  bool differing_hold_written_values = false;
};
nlohmann::json to_json(const OpClassRequest& r);
OpClassRequest op_class_request_from_json(const nlohmann::json& j);
nlohmann::json to_json(const OpClassAnswer& a);
OpClassAnswer op_class_answer_from_json(const nlohmann::json& j);

// `env`, `lint` and `diff` forwarded (run_forwarded, audit/trial/worker_client.h): the front names in
// this variable the descriptor of its own stderr, which the worker takes back once main() runs.
inline constexpr const char* kForwardedStderr = "REPRO_AUDIT_STDERR_FD";
// The worker's side, first thing in main(): stderr back from the pipe to the front's, when forwarded.
void take_back_forwarded_stderr();

}  // namespace ra
