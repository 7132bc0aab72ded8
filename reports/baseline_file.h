// SPDX-License-Identifier: Apache-2.0
// Baseline files: what `--save-baseline FILE` writes and `--baseline FILE` and `compare` read back
// (share/schema/baseline-v1.schema.json). A baseline keeps, from a finished report, only what a
// later comparison needs: the environment fingerprint, and per target its identity (name, kind,
// model and input digests, device, mode, steps, optimizer, seed, inputs) and per configuration
// its verdict, divergence, effective switches and the reference repeat's tensor digests. Nothing
// that depends on the clock and no paths, so that the same results on the same machine give the
// same bytes, and a baseline can be kept in version control and diffed.
#pragma once

#include "reports/model.h"

#include <nlohmann/json.hpp>

#include <string>

namespace ra::report {

inline constexpr const char* kBaselineSchema = "repro-audit/baseline";
inline constexpr const char* kReportSchema = "repro-audit/report";
inline constexpr int kBaselineSchemaVersion = 1;

// `tensors`: the folder beside the baseline, by name, that holds each configuration's reference
// tensors (--baseline-tensors; each ConfigResult::reference_tensors is then a file name in it),
// "" for none.
nlohmann::ordered_json baseline_to_json(const Report& report, const std::string& tensors = "");
std::string render_baseline(const Report& report, const std::string& tensors = "");

// The inverse of baseline_to_json, as a Report holding what a baseline keeps (no trials, no
// timing, no paths); throws ReportError naming the JSON path, after checking "schema" and
// "schema_version" first. A configuration's kept tensors read as "FOLDER/FILE", relative to the
// baseline's own folder (both plain names, or a ReportError).
Report baseline_from_json(const nlohmann::ordered_json& j);

// What `--baseline` and `compare` read: a baseline file or a full report, told apart by
// "schema" (returned in `schema`). Throws ReportError for anything else.
Report results_from_json(const nlohmann::ordered_json& j, std::string& schema);

}  // namespace ra::report
