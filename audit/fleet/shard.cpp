// SPDX-License-Identifier: Apache-2.0
#include "audit/fleet/shard.h"

#include "audit/common/errors.h"
#include "audit/digest/digest_kernel.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace ra::fleet {
namespace {

// A decimal integer in [0, 2^31), or nullopt.
std::optional<long> number(const std::string& text) {
  if (text.empty() || text.size() > 10 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  const long v = std::strtol(text.c_str(), nullptr, 10);
  if (v > 2147483647L) return std::nullopt;
  return v;
}

// The scheduler's variables as read: the value of each that is set, and the request being built.
class Reader {
 public:
  Reader(const Getenv& getenv, const char* scheduler) : getenv_(getenv) { request_.source = scheduler; }

  // The variable's value, recorded; nullopt when unset or empty.
  std::optional<std::string> get(const char* name) {
    const char* v = getenv_(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    request_.variables.emplace_back(name, v);
    return std::string(v);
  }
  // The variable as a number; UsageError when it is set but not one.
  std::optional<long> get_number(const char* name) {
    const auto v = get(name);
    if (!v) return std::nullopt;
    const auto n = number(*v);
    if (!n) fail(fmt::format("{}={} is not a non-negative integer", name, *v));
    return n;
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw UsageError(
        fmt::format("{} says this job is sharded, but {}: run with --shard K/N instead", request_.source, why));
  }
  ShardRequest finish(long index, long count) {
    if (count < 1 || count > kMaxShards) fail(fmt::format("{} shards is not from 1 to {}", count, kMaxShards));
    if (index < 1 || index > count) fail(fmt::format("shard {} of {} is out of range", index, count));
    request_.index = static_cast<int>(index);
    request_.count = static_cast<int>(count);
    return request_;
  }
  ShardRequest& request() { return request_; }

 private:
  const Getenv& getenv_;
  ShardRequest request_;
};

std::optional<ShardRequest> slurm(const Getenv& getenv) {
  Reader r(getenv, "the Slurm array");
  const auto id = r.get_number("SLURM_ARRAY_TASK_ID");
  if (!id) return std::nullopt;
  const auto count = r.get_number("SLURM_ARRAY_TASK_COUNT");
  const auto min = r.get_number("SLURM_ARRAY_TASK_MIN");
  const auto max = r.get_number("SLURM_ARRAY_TASK_MAX");
  const auto step = r.get_number("SLURM_ARRAY_TASK_STEP");
  if (!count || !min) r.fail("SLURM_ARRAY_TASK_COUNT or SLURM_ARRAY_TASK_MIN is not set");
  const long s = step.value_or(1);
  if (s < 1) r.fail("SLURM_ARRAY_TASK_STEP is 0");
  // Only an arithmetic range (--array=MIN-MAX[:STEP]) maps its tasks onto 1..N; a list such as
  // --array=1,3,7 does not (nothing says which task is the second).
  if (*id < *min || (*id - *min) % s != 0)
    r.fail(fmt::format("task {} is not on the range from {} in steps of {}", *id, *min, s));
  if (max && (*max < *min || (*max - *min) / s + 1 != *count))
    r.fail(
        fmt::format("its {} tasks are not the range {}-{}:{} (a list such as --array=1,3,7 cannot be mapped to shards)",
                    *count, *min, *max, s));
  return r.finish((*id - *min) / s + 1, *count);
}

std::optional<ShardRequest> kubernetes(const Getenv& getenv, std::optional<int> shards) {
  Reader r(getenv, "the Kubernetes Indexed Job");
  const auto index = r.get_number("JOB_COMPLETION_INDEX");
  if (!index) return std::nullopt;
  if (!shards) r.fail("Kubernetes gives the index but not the count: add --shards N (the Job's completions)");
  r.request().variables.emplace_back("--shards", std::to_string(*shards));
  return r.finish(*index + 1, *shards);
}

// A scheduler that gives an index (0- or 1-based) and a total in two variables.
std::optional<ShardRequest> pair(const Getenv& getenv, const char* scheduler, const char* index_name,
                                 const char* total_name, int base) {
  Reader r(getenv, scheduler);
  const auto index = r.get_number(index_name);
  const auto total = r.get_number(total_name);
  if (!index && !total) return std::nullopt;
  if (!index || !total)
    r.fail(fmt::format("{} is set without {}", index ? index_name : total_name, index ? total_name : index_name));
  if (*index < base) r.fail(fmt::format("{} counts from {}", index_name, base));
  return r.finish(*index - base + 1, *total);
}

}  // namespace

ShardRequest parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  const auto bad = [&](const std::string& why) {
    return UsageError(fmt::format("--shard '{}': {} (expected K/N with 1 <= K <= N, K counted from 1)", text, why));
  };
  if (slash == std::string::npos) throw bad("no '/'");
  const auto k = number(text.substr(0, slash));
  const auto n = number(text.substr(slash + 1));
  if (!k || !n) throw bad("K and N must be integers");
  if (*n < 1 || *n > kMaxShards) throw bad(fmt::format("N must be from 1 to {}", kMaxShards));
  if (*k < 1) throw bad("K counts from 1");
  if (*k > *n) throw bad("K is above N");
  ShardRequest r;
  r.index = static_cast<int>(*k);
  r.count = static_cast<int>(*n);
  r.source = "--shard";
  return r;
}

std::optional<ShardRequest> shard_from_environment(const Getenv& getenv, std::optional<int> shards) {
  std::optional<ShardRequest> r = slurm(getenv);
  if (!r) r = kubernetes(getenv, shards);
  if (!r) {
    r = pair(getenv, "Bazel", "TEST_SHARD_INDEX", "TEST_TOTAL_SHARDS", 0);
    if (r) {
      const char* status = getenv("TEST_SHARD_STATUS_FILE");
      if (status != nullptr && *status != '\0') {
        r->status_file = status;
        r->variables.emplace_back("TEST_SHARD_STATUS_FILE", status);
      }
    }
  }
  if (!r) r = pair(getenv, "GitLab", "CI_NODE_INDEX", "CI_NODE_TOTAL", 1);
  if (!r) r = pair(getenv, "Buildkite", "BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", 0);
  if (!r && shards)
    throw UsageError(
        "--shards N applies to a Kubernetes Indexed Job (JOB_COMPLETION_INDEX is not set); elsewhere use --shard K/N");
  return r;
}

void acknowledge(const ShardRequest& request) {
  if (request.status_file.empty()) return;
  const int fd = ::open(request.status_file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw InputError(
        fmt::format("cannot touch Bazel's TEST_SHARD_STATUS_FILE '{}': {}", request.status_file, std::strerror(errno)));
  ::close(fd);
}

std::pair<size_t, size_t> shard_range(size_t cells, int index, int count) {
  const auto n = static_cast<size_t>(count);
  const auto k = static_cast<size_t>(index - 1);
  // Block k holds cells [ceil(k*cells/n), ceil((k+1)*cells/n)): sizes differ by at most one, and
  // with fewer cells than shards the first shards get them.
  return {(k * cells + n - 1) / n, ((k + 1) * cells + n - 1) / n};
}

int shard_of(size_t cell, size_t cells, int count) {
  for (int k = 1; k <= count; ++k) {
    const auto [first, last] = shard_range(cells, k, count);
    if (cell >= first && cell < last) return k;
  }
  return 0;
}

std::string plan_digest(const nlohmann::ordered_json& plan) {
  const std::string text = plan.dump();
  return digest_kernel::bytes_digest(text.data(), text.size());
}

}  // namespace ra::fleet
