// SPDX-License-Identifier: Apache-2.0
#include "audit/trial/worker.h"

#include "audit/common/errors.h"
#include "audit/common/paths.h"
#include "audit/trial/runner.h"
#include "audit/trial/trials.h"
#include "reports/json_read.h"
#include "reports/render.h"

#include <fmt/format.h>

#include <fstream>

namespace ra {

void check_worker_loaded(const ChildOutcome& out) {
  if (out.kind != ChildOutcome::Kind::Exited) return;
  std::string line = last_line(out.log_tail);
  // The worker's own check (worker/runtime/fingerprint.h): its line as it is.
  if (const std::string prefix = "repro-audit: "; line.rfind(prefix, 0) == 0) line = line.substr(prefix.size());
  if (out.exit_code == static_cast<int>(ExitCode::Input) && line.find(" was built against torch ") != std::string::npos)
    throw InputError(line);
  if (out.exit_code != 127) return;
  for (const char* loader : {"error while loading shared libraries", "symbol lookup error"})
    if (line.find(loader) != std::string::npos)
      throw InputError(
          fmt::format("the worker cannot load the torch it was built against ({}): its torch environment was moved, "
                      "replaced or upgraded, or LD_LIBRARY_PATH names another torch; rebuild against the torch you run "
                      "(./dev build, or REPRO_AUDIT_PYTHON=... ./dev build) or restore that environment",
                      line));
}

std::string worker_error_line(const ChildOutcome& out, bool user_errors) {
  check_worker_loaded(out);
  std::string line = last_line(out.log_tail);
  if (const std::string prefix = "repro-audit: "; line.rfind(prefix, 0) == 0) line = line.substr(prefix.size());
  if (user_errors && out.kind == ChildOutcome::Kind::Exited && out.exit_code == static_cast<int>(ExitCode::Usage))
    throw UsageError(line);
  if (user_errors && out.kind == ChildOutcome::Kind::Exited && out.exit_code == static_cast<int>(ExitCode::Input))
    throw InputError(line);
  if (out.kind == ChildOutcome::Kind::Exited && out.exit_code == static_cast<int>(ExitCode::Interrupted))
    throw Interrupted();
  return line;
}

void run_worker_service(const ScratchDir& scratch, const std::string& tag, const std::vector<std::string>& args,
                        double timeout_s) {
  ChildJob job;
  job.argv = {worker_executable()};
  job.argv.insert(job.argv.end(), args.begin(), args.end());
  job.log_path = scratch.path() + "/" + tag + ".log";
  job.timeout = std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  const ChildOutcome out = run_children({job}, 1).front();
  if (out.kind == ChildOutcome::Kind::Exited && out.exit_code == 0) return;
  const std::string line = worker_error_line(out);
  // A full TMPDIR makes the worker fail in whatever way it meets it first (an exception, exit 1): say
  // what happened, as the documented "no space left in TMPDIR", an input error like any full disk.
  if (out.disk_full)
    throw InputError(fmt::format("no space left in TMPDIR ({}): the worker ({}) could not write its files{}",
                                 scratch.path().substr(0, scratch.path().rfind('/')), args.empty() ? "" : args.front(),
                                 line.empty() ? "" : ": " + line));
  const std::string how = out.kind == ChildOutcome::Kind::TimedOut   ? "timed out"
                          : out.kind == ChildOutcome::Kind::Signaled ? fmt::format("died of signal {}", out.signal)
                          : out.kind == ChildOutcome::Kind::SpawnFailed
                              ? "could not be started"
                              : fmt::format("exited with code {}", out.exit_code);
  throw Error(ExitCode::Incomplete, fmt::format("the worker ({}) {}{}", args.empty() ? "" : args.front(), how,
                                                line.empty() ? "" : ": " + line));
}

nlohmann::json stats_requests_to_json(const std::vector<StatsRequest>& requests) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : requests) {
    out.push_back({{"a", r.dump_a}, {"b", r.dump_b}, {"names", r.names}});
    if (r.tolerance) out.back()["tolerance"] = {{"atol", r.tolerance->atol}, {"rtol", r.tolerance->rtol}};
    for (const auto& [key, declared] : {std::pair{"declared_a", &r.declared_a}, std::pair{"declared_b", &r.declared_b}})
      for (const auto& t : *declared)
        out.back()[key].push_back({{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}});
  }
  return out;
}

std::vector<StatsRequest> stats_requests_from_json(const nlohmann::json& j) {
  std::vector<StatsRequest> out;
  for (const auto& r : j) {
    out.push_back({r.at("a").get<std::string>(),
                   r.at("b").get<std::string>(),
                   r.at("names").get<std::vector<std::string>>(),
                   std::nullopt,
                   {},
                   {}});
    if (r.contains("tolerance"))
      out.back().tolerance =
          report::Tolerance{r.at("tolerance").at("atol").get<double>(), r.at("tolerance").at("rtol").get<double>()};
    for (const auto& [key, declared] :
         {std::pair{"declared_a", &out.back().declared_a}, std::pair{"declared_b", &out.back().declared_b}})
      if (r.contains(key))
        for (const auto& t : r.at(key))
          declared->push_back({t.at("name").get<std::string>(), t.at("dtype").get<std::string>(),
                               t.at("shape").get<std::vector<int64_t>>(), ""});
  }
  return out;
}

nlohmann::json stats_answers_to_json(const std::vector<StatsAnswer>& answers) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& a : answers) {
    nlohmann::json one = nlohmann::json::array();
    for (const auto& [name, s] : a) one.push_back({{"name", name}, {"stats", report::stats_to_json(s)}});
    out.push_back(one);
  }
  return out;
}

std::vector<StatsAnswer> stats_answers_from_json(const nlohmann::json& j) {
  std::vector<StatsAnswer> out;
  for (const auto& one : j) {
    StatsAnswer a;
    for (const auto& e : one)
      a[e.at("name").get<std::string>()] = report::stats_from_json(nlohmann::ordered_json(e.at("stats")));
    out.push_back(std::move(a));
  }
  return out;
}

namespace {

nlohmann::json digest_json(const report::TensorDigest& t) {
  return {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"digest", t.digest}};
}

report::TensorDigest digest_from(const nlohmann::json& j) {
  return {j.at("name").get<std::string>(), j.at("dtype").get<std::string>(), j.at("shape").get<std::vector<int64_t>>(),
          j.at("digest").get<std::string>()};
}

}  // namespace

nlohmann::json to_json(const ArtifactRequest& r) {
  nlohmann::json j = {{"reads", nlohmann::json::array()}, {"compares", nlohmann::json::array()}};
  for (const auto& x : r.reads) j["reads"].push_back({{"path", x.path}, {"name", x.name}});
  for (const auto& c : r.compares)
    j["compares"].push_back({{"a", c.path_a}, {"b", c.path_b}, {"name", c.name}, {"entries", c.entries}});
  if (r.tolerance) j["tolerance"] = {{"atol", r.tolerance->atol}, {"rtol", r.tolerance->rtol}};
  return j;
}

ArtifactRequest artifact_request_from_json(const nlohmann::json& j) {
  ArtifactRequest r;
  for (const auto& x : j.at("reads"))
    r.reads.push_back({x.at("path").get<std::string>(), x.at("name").get<std::string>()});
  for (const auto& c : j.at("compares"))
    r.compares.push_back({c.at("a").get<std::string>(), c.at("b").get<std::string>(), c.at("name").get<std::string>(),
                          c.at("entries").get<std::vector<std::string>>()});
  if (j.contains("tolerance"))
    r.tolerance =
        report::Tolerance{j.at("tolerance").at("atol").get<double>(), j.at("tolerance").at("rtol").get<double>()};
  return r;
}

nlohmann::json to_json(const ArtifactAnswer& a) {
  nlohmann::json j = {{"reads", nlohmann::json::array()}, {"compares", stats_answers_to_json(a.compares)}};
  for (const auto& c : a.reads) {
    nlohmann::json entries = nlohmann::json::array();
    for (const auto& e : c.entries) entries.push_back(digest_json(e));
    j["reads"].push_back({{"kind", c.kind}, {"note", c.note}, {"entries", entries}});
  }
  return j;
}

ArtifactAnswer artifact_answer_from_json(const nlohmann::json& j) {
  ArtifactAnswer a;
  for (const auto& c : j.at("reads")) {
    ArtifactContents x{c.at("kind").get<std::string>(), c.at("note").get<std::string>(), {}};
    for (const auto& e : c.at("entries")) x.entries.push_back(digest_from(e));
    a.reads.push_back(std::move(x));
  }
  a.compares = stats_answers_from_json(j.at("compares"));
  return a;
}

ArtifactAnswer worker_artifacts(const ScratchDir& scratch, const ArtifactRequest& request, double timeout_s) {
  if (request.reads.empty() && request.compares.empty()) return {};
  static int calls = 0;
  const std::string tag = fmt::format("artifacts{}", calls++);
  const std::string request_path = scratch.path() + "/" + tag + ".request.json";
  const std::string result_path = scratch.path() + "/" + tag + ".result.json";
  write_file_atomic(request_path, to_json(request).dump());
  run_worker_service(scratch, tag, {"__artifacts", request_path, result_path}, timeout_s);
  try {
    ArtifactAnswer a = artifact_answer_from_json(nlohmann::json::parse(read_file(result_path, "artifact answer")));
    if (a.reads.size() == request.reads.size() && a.compares.size() == request.compares.size()) return a;
  } catch (const nlohmann::json::exception&) {}
  throw Error(ExitCode::Incomplete, "the worker (__artifacts) wrote an answer that does not match its request");
}

std::vector<StatsAnswer> worker_stats(const ScratchDir& scratch, const std::vector<StatsRequest>& requests,
                                      double timeout_s) {
  if (requests.empty()) return {};
  static int calls = 0;
  const std::string tag = fmt::format("stats{}", calls++);
  const std::string request_path = scratch.path() + "/" + tag + ".request.json";
  const std::string result_path = scratch.path() + "/" + tag + ".result.json";
  std::string failure;
  try {
    write_file_atomic(request_path, stats_requests_to_json(requests).dump());
    run_worker_service(scratch, tag, {"__stats", request_path, result_path}, timeout_s);
    auto answers = stats_answers_from_json(nlohmann::json::parse(read_file(result_path, "statistics")));
    if (answers.size() == requests.size()) return answers;
    failure = "the worker answered a different number of requests";
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    failure = e.what();
  }
  std::vector<StatsAnswer> out;
  for (const auto& r : requests) {
    StatsAnswer a;
    for (const auto& name : r.names) a[name].note = "statistics unavailable: " + failure;
    out.push_back(std::move(a));
  }
  return out;
}

DiffFn worker_diff(const ScratchDir& scratch, double timeout_s, const std::optional<report::Tolerance>& tolerance) {
  return [&scratch, timeout_s, tolerance](const std::string& a, const std::string& b,
                                          const std::vector<std::string>& names) {
    return worker_stats(scratch, {{a, b, names, tolerance, {}, {}}}, timeout_s).front();
  };
}

std::string BatchedDiff::key(const std::string& a, const std::string& b, const std::vector<std::string>& names) {
  std::string k = a + '\n' + b;
  for (const auto& n : names) k += '\n' + n;
  return k;
}

DiffFn BatchedDiff::collect() {
  return [this](const std::string& a, const std::string& b, const std::vector<std::string>& names) {
    if (index_.emplace(key(a, b, names), requests_.size()).second)
      requests_.push_back({a, b, names, tolerance_, {}, {}});
    return StatsAnswer{};
  };
}

void BatchedDiff::declare(const std::string& path, std::vector<report::TensorDigest> declared) {
  declared_[path] = std::move(declared);
}

void BatchedDiff::resolve() {
  for (auto& r : requests_) {
    if (const auto it = declared_.find(r.dump_a); it != declared_.end()) r.declared_a = it->second;
    if (const auto it = declared_.find(r.dump_b); it != declared_.end()) r.declared_b = it->second;
  }
  answers_ = worker_stats(scratch_, requests_, timeout_s_);
}

DiffFn BatchedDiff::answer() const {
  return [this](const std::string& a, const std::string& b, const std::vector<std::string>& names) {
    const auto it = index_.find(key(a, b, names));
    return it == index_.end() || it->second >= answers_.size() ? StatsAnswer{} : answers_[it->second];
  };
}

}  // namespace ra
