// SPDX-License-Identifier: Apache-2.0
// How many rows a GEMM of a torch.export graph multiplies (its M), read from the graph's own
// shapes, and what the knowledge base's measured batch classes then say about it (issue 43).
//
// The problem. A batch-invariance entry (linear.batch.cpu ...) matches every Linear of a model,
// but the risk is in M, not in the op: a Linear fed [batch, 16 tokens, 768] multiplies M = 16 ×
// batch rows, never fewer than 16, and the probes measured one class for M in 4…257 on the CPU.
// So lint ranks each node: M fixed by the exported shapes (no batch dependence), M = k × batch
// with every batch size inside one measured class (low), or spanning classes (high). None of
// this is a proof: the probes measured one GEMM shape on one machine, so a ranked risk is a
// warning that names `repro-audit invariance`, the command that measures it.
//
// The approach. Sizes come from graph.tensor_values as ints or sympy expressions
// ("Mul(Integer(5), Symbol('s77', ...))"); a product of integers and symbols is understood, any
// other expression (a sum, a division) leaves M unknown. Classes come from a measurement's note,
// "batch classes {1,2,3} | {4…257}" (share/knowledge/ops.json).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ra::lint {

// M as the graph gives it: factor × the product of symbols (no symbol: a fixed M).
struct GemmRows {
  int64_t factor = 1;
  std::vector<std::string> symbols;  // sorted
};

// A size of graph.tensor_values ({"as_int": 5} or {"as_expr": {"expr_str": ...}}) as a product.
std::optional<GemmRows> size_product(const nlohmann::json& size);

// M of a node calling `op` (aten::linear, aten::matmul, aten::mm, aten::addmm, aten::bmm,
// aten::conv2d): the product of its row dimensions, from the named input's shape in
// `tensor_values`; nullopt for another op or a shape it cannot read.
std::optional<GemmRows> gemm_rows(const std::string& op, const std::map<std::string, nlohmann::json>& args,
                                  const nlohmann::json& tensor_values);

// "batch classes {1,2,3} | {4…257}" -> {{{1,1},{2,2},{3,3}}, {{4,257}}}: each class a list of
// inclusive ranges; empty when the text holds no classes.
using BatchClasses = std::vector<std::vector<std::pair<int64_t, int64_t>>>;
BatchClasses parse_batch_classes(const std::string& note);

// What a symbol stands for in the user's words ("x.size(0)") and the least value it takes at run
// time (1 for a batch dimension whose recorded bound is the exporter's 2, as torch's input check
// lets 0 and 1 through).
struct SymbolInfo {
  std::string name;
  int64_t least = 1;
};

enum class Risk { None, Low, High, Unknown };

struct RowsAssessment {
  Risk risk = Risk::Unknown;
  std::string sentence;  // "M = 5 × x.size(0) ≥ 5: every batch size puts M in the measured class ..."
};

// The risk of M against `classes` (measured over M up to their largest size).
RowsAssessment assess_rows(const std::optional<GemmRows>& rows, const std::map<std::string, SymbolInfo>& symbols,
                           const BatchClasses& classes);

}  // namespace ra::lint
