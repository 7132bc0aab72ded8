// SPDX-License-Identifier: Apache-2.0
// The `lint` report model and its renderers: what a static scan of a TorchScript graph found
// against the knowledge base. Filled by worker/lint/lint_graph.cpp; torch-free like the rest of reports/.
//
// Determinism: findings are kept sorted by (module path, line, op, entry id, file, call sites,
// function) and every list is in a defined order, so two scans of the same model with the same
// knowledge base render byte-identical documents. Nothing here depends on time.
#pragma once

#include "reports/core_model.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace ra::report {

inline constexpr int kLintSchemaVersion = 1;

// A place in the model's source. `file` is "" for code with no file name (TorchScript defined
// from a string, e.g. `Module::define` in C++); `line` is 1-based, 0 when unknown.
struct SourceLocation {
  std::string file;
  int line = 0;
  std::string function;  // the method or function whose code holds the line
};

struct LintFinding {
  std::string entry;        // knowledge-base id, "index_add.cuda"
  std::string title;        // the entry's title
  std::string op;           // the graph op that matched, "aten::index_add"
  std::string direction;    // forward | backward (the entry's)
  std::string device;       // cpu | cuda | any (the entry's)
  std::string severity;     // error | warning | note (the entry's; batch-invariance: worker/lint/lint_graph.h)
  std::string module_path;  // "encoder.layers.0.conv"; "" is the top module
  SourceLocation source;    // the op's own line (innermost frame)
  // Calls to free functions (or TorchScript class methods) that lead from the module's method to
  // the op, outermost first; empty when the op sits in a method of the module itself.
  std::vector<SourceLocation> called_from;
  // When `source` is in the installed torch's own files: the innermost call site outside them,
  // the user's line that led there ("resnet.py:268 in _forward_impl").
  std::optional<SourceLocation> user_frame;
  std::vector<std::string> entry_methods;  // methods of the top module from which it is reached, sorted
  std::string condition;                   // the entry's condition, plus "depends on <arg>" where undecided
  std::vector<std::string> depends_on;     // entry arguments that are not constants in the graph
  std::string documented;                  // made-deterministic | raises | undocumented
  std::string deterministic;               // behaviour under use_deterministic_algorithms(True); measured wins
  // The documented behaviour when a measurement on this device type says otherwise, else "".
  std::string deterministic_documented;
  std::vector<std::string> measured;  // what the probes measured on this device type, one sentence each
  std::string alert;                  // the alert's name, "" when none
  std::string advice;
  std::optional<AllowedBy> allowed_by;  // --allowlist: the entry that accepted it
  // Batch-invariance entries: the rows (M) each matched node multiplies, ranked against the
  // measured batch classes, one sentence per distinct node (worker/lint/gemm_rows.h), and the
  // worst rank: none (M fixed) | low | unknown | high; "" for other entries.
  std::vector<std::string> rows;
  std::string risk;
};

struct LintReport {
  std::string tool_version;
  std::string model;                 // as given on the command line
  std::string device;                // as given: "cpu", "cuda", "cuda:1"
  std::string device_type;           // "cpu" or "cuda": selects the entries that apply
  std::string knowledge_path;        // the knowledge-base file read
  std::string knowledge_torch;       // the torch version the knowledge base describes
  int knowledge_entries = 0;         // entries in the file
  int applicable_entries = 0;        // of which apply to device_type
  std::string mode = "train";        // infer: backward entries left out; train: all
  bool strict = false;               // notes fail the exit code too
  std::vector<std::string> methods;  // methods of the top module scanned, in the module's order
  std::vector<LintFinding> findings;
  std::vector<std::string> notes;              // calls the scan could not follow, in scan order
  std::vector<std::string> allowlist_expired;  // --allowlist: expired entries that matched
  int exit_code = 0;                           // lint_exit_code
};

// 1 when an error finding (with `strict`, any finding) is not allowed, or an allowlist entry
// expired; else 0.
int lint_exit_code(const LintReport& report);

// "<top>" for the top module, else the path itself.
std::string display_module_path(const std::string& path);
// "file:line", "line N" when there is no file name, "unknown line" when the line is unknown.
std::string display_location(const SourceLocation& loc);
// How many findings raise under use_deterministic_algorithms(True).
int raising_findings(const LintReport& report);

nlohmann::ordered_json lint_to_json(const LintReport& report);
std::string render_lint_json(const LintReport& report);
// One block per knowledge-base entry (its findings' count and module paths), or with `verbose`
// every finding in full.
std::string render_lint_text(const LintReport& report, bool verbose = false);
// SARIF 2.1.0 for code scanning (`lint --sarif`; reports/lint_sarif.cpp opens with the design): the
// entries with findings as rules, a result per entry, op and line in the repository, at the
// innermost frame whose file `in_repository` names (a file as the findings name it -> its path from
// the repository root, audit/common/source_root.h); a finding with no such frame gets its module
// path as a logical location.
nlohmann::ordered_json lint_to_sarif(const LintReport& report, const std::map<std::string, std::string>& in_repository);
std::string render_lint_sarif(const LintReport& report, const std::map<std::string, std::string>& in_repository);

}  // namespace ra::report
