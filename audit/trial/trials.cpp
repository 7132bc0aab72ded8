// SPDX-License-Identifier: Apache-2.0
#include "audit/trial/trials.h"

#include "audit/common/files.h"
#include "audit/common/log.h"
#include "audit/common/paths.h"
#include "audit/trial/config.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace ra {

PreparedChild prepare_child(const ScratchDir& scratch, const std::string& tag, TrialSpec spec, double timeout_s,
                            bool dump, const std::string& gpu) {
  PreparedChild p;
  if (!gpu.empty()) spec.device = Device::cuda(0);
  const std::string base = scratch.path() + "/" + tag;
  p.result_path = base + ".result.json";
  p.dump_path = spec.task == ChildTask::Preflight || !dump ? "" : base + ".dump";
  if (spec.task == ChildTask::Trial && !p.dump_path.empty()) p.dump_path += ".pt";
  spec.dump_path = p.dump_path;
  const std::string spec_path = base + ".spec.json";
  write_file_atomic(spec_path, to_json(spec).dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  p.job.argv = {worker_executable(), "__child", spec_path, p.result_path};
  p.job.remove_after = {spec_path};
  p.job.env = config_environment(spec.config);
  p.job.env["REPRO_AUDIT_TRIAL"] = tag;
  if (!gpu.empty()) p.job.env["CUDA_VISIBLE_DEVICES"] = gpu;
  p.job.log_path = base + ".log";
  p.job.timeout = std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  return p;
}

std::optional<DevicePlacement> session_placement(const SessionOptions& o, const nlohmann::ordered_json& environment) {
  int available = 0;
  if (environment.contains("cuda") && environment["cuda"].contains("devices") &&
      environment["cuda"]["devices"].is_array())
    available = static_cast<int>(environment["cuda"]["devices"].size());
  std::optional<std::string> parent;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v != nullptr) parent = v;
  return place_devices(o.devices, o.device, o.jobs, available, parent);
}

std::optional<TrialResult> read_result(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  try {
    return trial_result_from_json(nlohmann::json::parse(in));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string last_line(const std::string& tail) {
  const auto nl = tail.rfind('\n');
  return nl == std::string::npos ? tail : tail.substr(nl + 1);
}

std::vector<std::string> config_names(const std::vector<Config>& configs) {
  std::vector<std::string> names;
  for (const auto& c : configs) names.push_back(c.name);
  return names;
}

std::string keep_reference_tensors(const SessionOptions& o, const std::string& dump, const std::string& name,
                                   const std::string& what) {
  if (!o.keep_tensors || dump.empty()) return "";
  const std::string kept = fmt::format("{}/{}", o.keep_tensors->path(), name);
  std::error_code ec;
  std::filesystem::copy_file(dump, kept, std::filesystem::copy_options::overwrite_existing, ec);
  if (!ec) return kept;
  log::warn("{}: its reference tensors could not be kept ({}): a comparison names its changed tensors only", what,
            ec.message());
  return "";
}

}  // namespace ra
