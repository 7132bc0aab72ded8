// SPDX-License-Identifier: Apache-2.0
// --metric NAME=REGEX: values a command prints on stdout (a loss per step), compared exactly, per
// occurrence, across runs. The value is the regex's first capture group, or its whole match when it
// has none; each stdout line gives at most one occurrence (its first match). A run's occurrences of
// a metric are one entry of its results, named "metric:NAME", whose digest covers every value's
// exact text; where two runs part, the statistics name the first occurrence ("step") that differs.
//
// The stdout of a run is the program's, and it may be anything: one 100 MB line, binary bytes, a
// progress bar redrawn with '\r'. Matching must neither crash nor take unbounded memory or time.
// std::regex backtracks recursively (a 50 KB line overflowed the stack, issue 28), so patterns
// are compiled with RE2, whose automata run in time linear in the line and bounded memory; the
// price is that backreferences and lookaround are refused (a usage error naming the feature).
// Patterns and text are read as bytes (Latin-1), as before. stdout is read in chunks, never
// whole, and only the first kMaxMetricLine bytes of a line are matched: the rest of a longer line
// is skipped, counted, and reported once per run by the caller.
#pragma once

#include "reports/core_model.h"

#include <cstddef>
#include <istream>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace re2 {
class RE2;
}

namespace ra::exec {

struct MetricSpec {
  std::string name;
  std::string regex;  // as given
  std::shared_ptr<const re2::RE2> re;
};

// The bytes of a stdout line that are matched (64 KiB; stated in the man page).
inline constexpr size_t kMaxMetricLine = size_t{64} << 10;
// The bytes of a matched line a report shows.
inline constexpr size_t kShownLine = 100;

// Parses NAME=REGEX. UsageError for a missing name or '=', a name that is not a word
// ([A-Za-z0-9_.-]), a regex that uses what RE2 does not support (backreferences, lookaround:
// named), or one that does not compile (with RE2's reason).
MetricSpec parse_metric(const std::string& arg);

// What one run's stdout gave: each metric's values in order, and the lines longer than
// kMaxMetricLine (matched on their first kMaxMetricLine bytes only).
struct MetricScan {
  std::map<std::string, std::vector<std::string>> values;
  // The line each value came from, as the program printed it (its first kShownLine bytes, cut at a
  // character with "…"): how a report names an occurrence ("step 0 loss 0.6581").
  std::map<std::string, std::vector<std::string>> lines;
  size_t lines_cut = 0;
  size_t first_cut_line = 0;  // 1-based; 0 when none was cut
  std::string unread;         // why the file was not read (extract_metrics_file), else empty
};

// Reads `in` to its end in bounded chunks, line by line ('\n'; a trailing '\r' is dropped).
MetricScan extract_metrics(const std::vector<MetricSpec>& metrics, std::istream& in);
MetricScan extract_metrics(const std::vector<MetricSpec>& metrics, const std::string& stdout_text);
// The same from the file a run's stdout went to, which the run could have replaced: read only if
// it is still a regular file (not through a symlink, never blocking on a FIFO or device).
MetricScan extract_metrics_file(const std::vector<MetricSpec>& metrics, const std::string& path);

// One line saying how many lines were cut, for the log (empty when none was).
std::string cut_lines_note(const MetricScan& scan);

// The entry a run's values of metric `name` make (dtype "metric", shape {occurrences}).
report::TensorDigest metric_entry(const std::string& name, const std::vector<std::string>& values);
inline constexpr const char* kMetricPrefix = "metric:";

// How two runs' values differ: numel the longer count, differing the occurrences that differ
// (extra ones included), first_index the first (0-based), and when both values at an index read as
// numbers, max_abs_diff, max_rel_diff and max_ulp (as doubles) over those. The note names the first
// differing occurrence by its order (1-based) and by the line the program printed there (`lines`:
// the reference run's, else the other's), never by a step number of its own (issue 43: "first
// differs at step 1" where the script printed "step 0").
report::DivergenceStats metric_difference(const std::vector<std::string>& a, const std::vector<std::string>& b,
                                          const std::vector<std::string>& lines_a = {},
                                          const std::vector<std::string>& lines_b = {});

}  // namespace ra::exec
