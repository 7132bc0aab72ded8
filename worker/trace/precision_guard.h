// SPDX-License-Identifier: Apache-2.0
// The float64 referee's precision guard (reports/referee_model.h). The problem: the referee casts the
// model's parameters, buffers and floating inputs to float64, and promotes an export graph's floating
// dtype arguments, but a model can still compute part of its work in a lower precision (a TorchScript
// `x.float()`, a custom op that rounds), and a reference computed so is no better than the results it
// judges. The approach: while the referee runs, a global RecordFunction observer (forward ops and
// autograd nodes, outputs only) notes the first op that produced a floating tensor below float64, with
// the TorchScript module path and source line where the interpreter has them; the referee then says
// "not float64 throughout: aten::to produced float32 (model.py:3: return x.float())" and every class is
// unclassified with that reason. The cost: a look at each op's outputs' dtypes, once per audit.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace ra::trace {

// Watches while alive; at most one at a time.
class PrecisionGuard {
 public:
  PrecisionGuard();
  ~PrecisionGuard();
  PrecisionGuard(const PrecisionGuard&) = delete;
  PrecisionGuard& operator=(const PrecisionGuard&) = delete;

  // "not float64 throughout: aten::to produced float32 (...)" for the first op that did, "" when none did.
  std::string first_below() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace ra::trace
