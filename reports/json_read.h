// SPDX-License-Identifier: Apache-2.0
// Reading a saved JSON report back into the report model: the inverse of `to_json` for everything
// it writes, so that `repro-audit report` re-renders a report exactly as the run that wrote it.
// Figures `to_json` derives (the cost medians of timing.configs) are recomputed, not read.
//
// The caller parses as nlohmann::ordered_json, so the environment keeps its key order. `schema` and
// `schema_version` are checked first; every field is read through a Node (reports/json_node.h: a
// value and its JSON path), so an error names the field. Trial times come back from timing.trials
// and fix costs from timing.fixes, each matched to its target, configuration and repeat or
// candidate. `repro-audit report` turns a ReportError into an InputError (exit 3) before writing
// anything, then renders through the same emit_report as `run`, so every output is byte for byte
// the audit's own.
#pragma once

#include "reports/model.h"

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

namespace ra::report {

// A document that is not a report this version reads: one line, naming the JSON path of the
// missing or mistyped field ("targets[0].configs[1].verdict: missing").
class ReportError : public std::runtime_error {
 public:
  explicit ReportError(const std::string& what) : std::runtime_error(what) {}
};

// Checks "schema" and "schema_version" first, then reads every field; throws ReportError.
// Takes the ordered document so that the environment keeps its key order.
Report report_from_json(const nlohmann::ordered_json& j);

// The inverse of stats_to_json (reports/render.h); throws ReportError.
DivergenceStats stats_from_json(const nlohmann::ordered_json& j);

}  // namespace ra::report
