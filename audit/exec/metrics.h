// SPDX-License-Identifier: Apache-2.0
// --metric NAME=REGEX: values a command prints on stdout (a loss per step), compared exactly, per
// occurrence, across runs. The value is the regex's first capture group, or its whole match when it
// has none; each stdout line gives at most one occurrence (its first match). A run's occurrences of
// a metric are one entry of its results, named "metric:NAME", whose digest covers every value's
// exact text; where two runs part, the statistics name the first occurrence ("step") that differs.
#pragma once

#include "reports/model.h"

#include <map>
#include <regex>
#include <string>
#include <vector>

namespace ra::exec {

struct MetricSpec {
  std::string name;
  std::string regex;  // as given
  std::regex re;
};

// Parses NAME=REGEX. UsageError for a missing name or '=', a name that is not a word
// ([A-Za-z0-9_.-]), or a regex that does not compile (with std::regex's reason).
MetricSpec parse_metric(const std::string& arg);

// Each metric's values in `stdout_text`, in order.
std::map<std::string, std::vector<std::string>> extract_metrics(const std::vector<MetricSpec>& metrics,
                                                                 const std::string& stdout_text);

// The entry a run's values of metric `name` make (dtype "metric", shape {occurrences}).
report::TensorDigest metric_entry(const std::string& name, const std::vector<std::string>& values);
inline constexpr const char* kMetricPrefix = "metric:";

// How two runs' values differ: numel the longer count, differing the occurrences that differ
// (extra ones included), first_index the first (0-based; the note says "step N", 1-based), and
// when both values at an index read as numbers, max_abs_diff, max_rel_diff and max_ulp (as
// doubles) over those.
report::DivergenceStats metric_difference(const std::vector<std::string>& a, const std::vector<std::string>& b);

}  // namespace ra::exec
