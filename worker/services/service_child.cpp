// SPDX-License-Identifier: Apache-2.0
// The worker's hidden services, each started by the front as a child process:
//   __child SPEC RESULT        one trial (or a probe child, or a preflight): reads a trial spec,
//                              runs it, writes the result atomically; the front treats a missing
//                              result as a crash.
//   __stats REQUEST RESULT     divergence statistics between dumps (audit/trial/worker_protocol.h).
//   __artifacts REQUEST RESULT what exec's artifact files hold and how they differ
//                              (worker/tensor_io/artifact_read.h).
//   __catalogue RESULT [LIB...]  the probes, built in and from plugins, as JSON.
//   __selftest DEVICE RESULT FOLDER  the self-test's in-process checks, and its traced models
//                              (worker/child/selftest_child.h).
//   __op_class REQUEST RESULT  the class of a trace's first differing op (worker/trace/op_referee.h).
//   __invariance REQUEST RESULT  one configuration's batch-invariance sweep (worker/services/service_invariance.cpp).
#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/trial/worker_protocol.h"
#include "worker/child/probe_child.h"
#include "worker/child/selftest_child.h"
#include "worker/child/trial_child.h"
#include "worker/services/service_table.h"
#include "worker/tensor_io/artifact_read.h"
#include "worker/tensor_io/kept_read.h"
#include "worker/trace/op_referee.h"

#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>

namespace ra::services {

Action attach_child(CLI::App& sub, const GlobalOptions&) {
  auto paths = std::make_shared<std::pair<std::string, std::string>>();
  sub.add_option("spec", paths->first, "trial spec (JSON)")->required();
  sub.add_option("result", paths->second, "where to write the result (JSON)")->required();
  return [paths] {
    TrialSpec spec;
    try {
      spec = trial_spec_from_json(nlohmann::json::parse(read_file(paths->first, "trial spec")));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(std::string("malformed trial spec: ") + e.what());
    }
    if (spec.task == ChildTask::Probes || (spec.task == ChildTask::Preflight && spec.model.empty()))
      return run_probe_child(spec, paths->second);
    spec.scratch = std::filesystem::absolute(paths->second).parent_path().string();
    const TrialResult result = run_child(spec);
    write_file_atomic(paths->second, to_json(result).dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    return 0;
  };
}

Action attach_stats(CLI::App& sub, const GlobalOptions&) {
  auto paths = std::make_shared<std::pair<std::string, std::string>>();
  sub.add_option("request", paths->first, "requests (JSON)")->required();
  sub.add_option("result", paths->second, "where to write the answers (JSON)")->required();
  return [paths] {
    std::vector<StatsRequest> requests;
    try {
      requests = stats_requests_from_json(nlohmann::json::parse(read_file(paths->first, "statistics request")));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(std::string("malformed statistics request: ") + e.what());
    }
    std::vector<StatsAnswer> answers;
    for (const auto& r : requests)
      answers.push_back(dump_differences({r.dump_a, r.declared_a}, {r.dump_b, r.declared_b}, r.names, r.tolerance));
    write_file_atomic(paths->second, stats_answers_to_json(answers).dump());
    return 0;
  };
}

Action attach_op_class(CLI::App& sub, const GlobalOptions&) {
  auto paths = std::make_shared<std::pair<std::string, std::string>>();
  sub.add_option("request", paths->first, "request (JSON)")->required();
  sub.add_option("result", paths->second, "where to write the answer (JSON)")->required();
  return [paths] {
    OpClassRequest request;
    try {
      request = op_class_request_from_json(nlohmann::json::parse(read_file(paths->first, "op class request")));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(std::string("malformed op class request: ") + e.what());
    }
    write_file_atomic(paths->second, to_json(trace::op_class(request)).dump());
    return 0;
  };
}

Action attach_artifacts(CLI::App& sub, const GlobalOptions&) {
  auto paths = std::make_shared<std::pair<std::string, std::string>>();
  sub.add_option("request", paths->first, "requests (JSON)")->required();
  sub.add_option("result", paths->second, "where to write the answer (JSON)")->required();
  return [paths] {
    ArtifactRequest request;
    try {
      request = artifact_request_from_json(nlohmann::json::parse(read_file(paths->first, "artifact request")));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(std::string("malformed artifact request: ") + e.what());
    }
    write_file_atomic(
        paths->second,
        to_json(answer_artifacts(request)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return 0;
  };
}

Action attach_selftest(CLI::App& sub, const GlobalOptions&) {
  struct Args {
    std::string device, result, model;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("device", a->device, "cpu or cuda[:N]")->required();
  sub.add_option("result", a->result, "where to write the checks (JSON)")->required();
  sub.add_option("models", a->model, "the folder to write the models the front traces into")->required();
  return [a] {
    nlohmann::json checks = nlohmann::json::array();
    // The worker's command line is an edge: the device is parsed here, once (a UsageError for a bad one).
    for (const auto& c : worker_selftest(Device::parse(a->device), a->model))
      checks.push_back({{"name", c.name}, {"passed", c.passed}, {"evidence", c.evidence}});
    write_file_atomic(a->result, checks.dump());
    return 0;
  };
}

Action attach_catalogue(CLI::App& sub, const GlobalOptions&) {
  auto a = std::make_shared<std::pair<std::string, std::vector<std::string>>>();
  sub.add_option("result", a->first, "where to write the catalogue (JSON)")->required();
  sub.add_option("libraries", a->second, "--load-library plugins");
  return [a] {
    write_probe_catalogue(a->first, a->second);
    return 0;
  };
}

}  // namespace ra::services
