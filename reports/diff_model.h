// SPDX-License-Identifier: Apache-2.0
// The `diff` report model and its renderers: how two torch.save files differ, entry by entry.
// Filled by worker/diff/tensor_diff.cpp; torch-free like the rest of reports/.
//
// Determinism: entries are sorted by name (byte order) and nothing depends on time, so the same
// two files always render byte-identical documents.
#pragma once

#include "reports/core_model.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ra::report {

inline constexpr int kDiffSchemaVersion = 1;

enum class DiffStatus { Identical, Differs, DtypeDiffers, ShapeDiffers, OnlyA, OnlyB };

// "identical", "differs", "dtype-differs", "shape-differs", "only-a", "only-b".
const char* diff_status_name(DiffStatus status);

struct DiffEntry {
  std::string name;  // path in the file ("layer1/0/weight", "epoch"); "<tensor>" for a file holding one tensor
  DiffStatus status = DiffStatus::Identical;
  std::string dtype;             // A's (B's for only-b): a dtype, or int, float, bool, str, None
  std::vector<int64_t> shape;    // A's (B's for only-b)
  std::string dtype_b;           // B's, set for dtype-differs and shape-differs only
  std::vector<int64_t> shape_b;  // B's, set for dtype-differs and shape-differs only
  std::string digest_a;          // "" when only in B, or a plain value
  std::string digest_b;          // "" when only in A, or a plain value
  std::string value_a;           // a plain value's exact text ("3", "0.001", "True", "'adam'", "None"), else ""
  std::string value_b;
  std::optional<DivergenceStats> stats;  // for differs only
};

struct DiffSummary {
  int entries = 0;
  int identical = 0;
  int differs = 0;  // differs + dtype-differs + shape-differs
  int only_a = 0;
  int only_b = 0;
  int within_tolerance = 0;  // of `differs`, tensors whose every differing element is within tolerance
};

struct DiffReport {
  std::string tool_version;
  std::string a;  // paths as given
  std::string b;
  std::string key;                     // --key: the subtree compared ("" for the whole files)
  std::optional<Tolerance> tolerance;  // --atol/--rtol as given (else each dtype's default)
  bool tolerant = false;               // --tolerant: differences within tolerance exit 0
  std::vector<DiffEntry> entries;      // sorted by name
  int exit_code = 0;                   // 0 when every entry is identical (or, tolerant, within tolerance), else 1
};

DiffSummary diff_summary(const DiffReport& report);
// "2 of 14 entries differ, 1 only in A": the last line of the text rendering.
std::string diff_summary_line(const DiffReport& report);

nlohmann::ordered_json diff_to_json(const DiffReport& report);
std::string render_diff_json(const DiffReport& report);
std::string render_diff_text(const DiffReport& report);

}  // namespace ra::report
