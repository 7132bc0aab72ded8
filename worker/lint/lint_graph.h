// SPDX-License-Identifier: Apache-2.0
// `lint`: a static scan of a TorchScript model's graphs against the knowledge base. Torch-free
// header; the scan itself (worker/lint/lint_graph.cpp) explains its approach and its limits.
#pragma once

#include "audit/knowledge/knowledge.h"
#include "reports/lint_model.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace ra {

using LintFinding = report::LintFinding;
using LintResult = report::LintReport;

// How lint reports ops that a knowledge-base entry of concern "batch-invariance" names (a row's
// result depends on the batch size): as notes, or as errors (`lint --batch-invariance`).
enum class BatchVariant { Note, Error };

// The one check of a torch.export archive, the one `run` makes (worker/targets/export_program.h's
// open_export_archive, passed in by the caller: this folder sits below the targets): it throws
// InputError with `run`'s line for what `run` refuses, and returns the archive's models/model.json,
// read and checked, for the walk.
using ExportCheck = std::function<nlohmann::json(const std::string& path)>;

// Loads `model` on the CPU (CUDA is never initialised) and reports every op in the graphs of the
// top module's methods, and of everything they call, that matches a knowledge-base entry for
// `device`'s type (cpu or cuda); with `mode` "infer", entries about the backward pass are left
// out (their count is noted). `libraries` (custom ops the model needs) are loaded first; a torch.export
// archive then passes `check_export` before its graph is walked. The exit
// code is 1 for an error finding, or with `strict` for any finding. Batch-variant ops are notes
// unless `batch` is Error.
// Fills every field of the result but `device` and `knowledge_path`, which the caller knows.
// Throws InputError when a library or the model is missing or unreadable, or the model is not a
// TorchScript archive.
LintResult lint_model(const std::string& model, const Device& device, const KnowledgeBase& kb,
                      const ExportCheck& check_export, const std::vector<std::string>& libraries = {},
                      const std::string& mode = "train", bool strict = false, BatchVariant batch = BatchVariant::Note);

}  // namespace ra
