// SPDX-License-Identifier: Apache-2.0
// Internal to reports/: how the renderers are split between the formats and the kinds. Each format
// file (text.cpp, markdown.cpp, html.cpp, junit.cpp) keeps the frame every kind shares (the head,
// the matrix, the baseline, the environment, the timing) and visits the body once, each arm one
// call into the kind's own file, reports/<kind>_render.cpp (run_render.cpp, exec_render.cpp,
// probes_render.cpp, invariance_render.cpp, selftest_render.cpp), which holds that kind's parts in
// every format. A kind's file builds its parts from the frame's shared pieces declared here (the
// configuration table, the findings of a target, the tail of the verdict), so a part that two kinds
// share is written once, and what only one kind shows is found in that kind's file. The HTML page's
// pieces are in reports/html.h.
#pragma once

#include "reports/model.h"

#include <string>
#include <string_view>
#include <vector>

namespace ra::report {

// The text summary (reports/text.cpp): what each target of a kind with targets shows.
namespace text {

// A configuration's extra lines, after its warm-up lines and before its fix search (exec: the
// switches the program set itself).
using ConfigLines = void (*)(std::string& out, const ConfigResult& c);

// How a kind's configuration table reads: the last column's heading (a count of tensors, or exec's
// files and metrics per run), whether a fix search ran the command (exec, untraced), and extra lines.
struct ConfigTable {
  const char* column = "tensors";
  bool command = false;
  ConfigLines extra = nullptr;
};

// The inputs (named by `input_names` when there is one per input), a model's `outputs` compared
// (compared_outputs), and the notes of a target.
void target_lines(std::string& out, const Target& t, const std::vector<std::string>& input_names = {},
                  const std::vector<std::string>& outputs = {});
// The table of a target's configurations, each with what it found.
void config_lines(std::string& out, const Target& t, const ConfigTable& table);
// After the table: what "reproducible" can promise, and the configuration dependence.
void outcome_lines(std::string& out, const Target& t);
// The end of a summary with targets: the --repeats auto rule, allowlist notes, contention, the
// baseline, shards, and the verdict line.
std::string report_tail(const Report& r, bool configuration_dependent);
// A list of differing tensors (or entries), at most `limit`, then "... and N more".
void finding_lines(std::string& out, const std::vector<TensorFinding>& fs, size_t limit, const char* more = "tensors");

}  // namespace text

// The Markdown summary (reports/markdown.cpp).
namespace markdown {

// The heading with the verdict, and the table of targets × configurations (with exec's column of
// what a run is compared by).
std::string head(const Report& r, bool compared_column);
// The --repeats auto rule with the undecided configurations, the warm-up lines of `run --calls`, and the
// float64 referee's lines.
void rules(std::string& out, const Report& r);
// A target's findings: each configuration that did not reproduce, then its configuration dependence.
void findings(std::string& out, const Target& t);
// The end of a summary with targets: the baseline, where the shards ran, the timing block.
void tail(std::string& out, const Report& r);

}  // namespace markdown

// JUnit XML (reports/junit.cpp): a <testsuite> per target, a <testcase> per configuration.
namespace junit {

struct Outcome {
  std::string element;  // "" (passed), "failure", "error", "skipped"
  std::string type;
  std::string message;
  std::string body;
};

struct Counts {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  void add(const Outcome& o);
  void add(const Counts& c);
  std::string attributes() const;
};

std::string testcase(const std::string& classname, const std::string& name, const Outcome& o,
                     const std::string& system_out = "");
std::string property(const std::string& name, const std::string& value);
std::string first_line(const std::string& s);
// Differing tensors, one line each ("  output float32[8]: 3/8 elements differ, ...").
void tensor_lines(std::string& out, const std::vector<TensorFinding>& fs);
// A target's test cases: one per configuration, and its configuration dependence.
std::string target_cases(const Target& t, Counts& counts);
// A target's <testsuite>: its properties (its kind's, `kind_properties`, after the mode) and `cases`.
std::string target_suite(const Report& r, const Target& t, std::string_view kind, const std::string& kind_properties,
                         const Counts& counts, const std::string& cases);

}  // namespace junit

// Each kind's parts, in its own file: run_render.cpp, exec_render.cpp, probes_render.cpp (invariance
// and selftest declare theirs in their model headers).
std::string run_text(const Report& r, const RunBody& body);
std::string run_markdown(const Report& r, const RunBody& body);
std::string run_junit(const Report& r, const RunBody& body, junit::Counts& all);

std::string exec_text(const Report& r, const ExecBody& body);
std::string exec_markdown(const Report& r, const ExecBody& body);
std::string exec_junit(const Report& r, const ExecBody& body, junit::Counts& all);

std::string probes_text(const Report& r, const ProbesBody& body);
std::string probes_markdown(const Report& r, const ProbesBody& body);
std::string probes_junit(const Report& r, const ProbesBody& body, junit::Counts& all);

std::string selftest_junit(const SelfTest& self, junit::Counts& all);

}  // namespace ra::report
