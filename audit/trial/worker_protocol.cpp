// SPDX-License-Identifier: Apache-2.0
#include "audit/trial/worker_protocol.h"

#include "reports/json_read.h"
#include "reports/render.h"

#include <cstdlib>

#include <unistd.h>

namespace ra {

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

nlohmann::json to_json(const OpClassRequest& r) {
  return {{"call", r.call}, {"dump_a", r.dump_a}, {"dump_b", r.dump_b}, {"output", r.output}};
}

OpClassRequest op_class_request_from_json(const nlohmann::json& j) {
  return {j.at("call").get<std::string>(), j.at("dump_a").get<std::string>(), j.at("dump_b").get<std::string>(),
          j.at("output").get<int>()};
}

nlohmann::json to_json(const OpClassAnswer& a) {
  const auto error = [](const std::optional<report::ReferenceError>& e) {
    return e ? nlohmann::json(report::reference_error_to_json(*e)) : nlohmann::json(nullptr);
  };
  return {{"note", a.note},
          {"a", error(a.a)},
          {"b", error(a.b)},
          {"index_write", a.index_write},
          {"written_twice", a.written_twice},
          {"first_written_twice", a.first_written_twice},
          {"differing", a.differing},
          {"differing_hold_written_values", a.differing_hold_written_values}};
}

OpClassAnswer op_class_answer_from_json(const nlohmann::json& j) {
  const auto error = [](const nlohmann::json& e) -> std::optional<report::ReferenceError> {
    if (e.is_null()) return std::nullopt;
    return report::reference_error_from_json(nlohmann::ordered_json(e));
  };
  OpClassAnswer a;
  a.note = j.at("note").get<std::string>();
  a.a = error(j.at("a"));
  a.b = error(j.at("b"));
  a.index_write = j.at("index_write").get<bool>();
  a.written_twice = j.at("written_twice").get<int64_t>();
  a.first_written_twice = j.at("first_written_twice").get<std::vector<int64_t>>();
  a.differing = j.at("differing").get<int64_t>();
  a.differing_hold_written_values = j.at("differing_hold_written_values").get<bool>();
  return a;
}

void take_back_forwarded_stderr() {
  const char* fd = std::getenv(kForwardedStderr);
  if (fd == nullptr) return;
  const int user_stderr = std::atoi(fd);
  if (user_stderr > STDERR_FILENO) {
    (void)!::write(STDERR_FILENO, "", 1);  // the NUL that tells the front main() runs
    if (::dup2(user_stderr, STDERR_FILENO) == STDERR_FILENO) ::close(user_stderr);
  }
  ::unsetenv(kForwardedStderr);
}

}  // namespace ra
