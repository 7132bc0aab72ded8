// SPDX-License-Identifier: Apache-2.0
#include "audit/skeleton/changed_ops.h"

#include "audit/trace/op_stream.h"

#include <fmt/format.h>

#include <utility>

namespace ra {
namespace {

const report::ConfigResult* find_config(const report::Target& t, const std::string& name) {
  for (const auto& c : t.configs)
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace

void name_changed_ops(report::Report& current, const Baseline& base) {
  if (!current.baseline) return;
  const std::vector<Side> targets = sides(current.body), held = sides(base.results.body);  // none for invariance
  const std::vector<int> pairs = pair_targets(held, targets);
  for (auto& result : current.baseline->results) {
    if (result.differing == 0) continue;
    const report::ConfigResult* now = nullptr;
    const report::ConfigResult* then = nullptr;
    for (size_t i = 0; i < targets.size(); ++i) {
      if (targets[i].target->name != result.target || pairs[i] < 0) continue;
      now = find_config(*targets[i].target, result.config);
      then = find_config(*held[static_cast<size_t>(pairs[i])].target, result.config);
    }
    if (now == nullptr || then == nullptr || !now->op_stream) continue;  // not traced now: nothing to say
    if (!then->op_stream) {
      result.op_note = "no op can be named: the baseline holds no trace (save it with --save-baseline and --trace)";
      continue;
    }
    try {
      const trace::OpStreamComparison c = trace::compare_op_streams(*then->op_stream, *now->op_stream);
      if (c.first_changed) {
        result.first_changed_op = c.first_changed;
      } else if (c.unmatched_baseline > 0 || c.unmatched_current > 0) {
        result.op_note = fmt::format(
            "no op turned matching inputs into other outputs; the op streams differ structurally "
            "({} baseline and {} current records unmatched)",
            c.unmatched_baseline, c.unmatched_current);
      } else {
        result.op_note =
            "every traced op turned matching inputs into matching outputs: the difference arose outside the traced ops";
      }
    } catch (const trace::OpStreamError& e) {
      result.op_note = fmt::format("no op can be named: an op stream could not be read ({})", e.what());
    }
  }
}

}  // namespace ra
