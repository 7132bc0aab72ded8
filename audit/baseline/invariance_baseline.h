// SPDX-License-Identifier: Apache-2.0
// Baselines of `repro-audit invariance` (`--save-baseline`, `--baseline`, `compare A B`).
//
// The problem. Which batch sizes give a row the same bits is a fact of the library: a new torch or
// MKL can move a boundary ({1,2,3}|{4…} becoming {1…7}|{8…}) without changing whether the model
// is variant at all, and code that pads batches to one class then silently mixes classes. The
// run baseline's question (did these tensors' bits change?) does not see that.
// The approach. The baseline keeps the classes of sizes per configuration, joined and per output
// (reports/invariance_outputs.cpp), and position and warm-up dependence. Compared over the sizes
// both sides tried (an auto sweep bisects to other sizes on either side), any change of a
// partition, or dependence that appeared or went, is a finding (status regression, exit 1) named
// per output: "class boundary moved: 4 -> 8 for output 0", boundaries given as each side found
// them. An environment change that can affect the device is named beside it, but does not excuse
// it: a moved class changes which batches agree, whatever moved it; re-save the baseline to accept
// it. Other experiments (another device, anchor rows, filler or inputs, a baseline of another
// audit, or no configuration in common) are an input error (exit 3), before any work where known.
// The cost. Comparisons of short lists; no processes.
#pragma once

#include "audit/baseline/baseline.h"
#include "audit/common/device.h"

#include <string>
#include <vector>

namespace ra {

// Before any work: throws InputError unless `base` holds an invariance audit on `device` with
// `rows` anchor rows, `filler` and `axis` ("batch", "pad-right", "pad-left", "verify"), sharing a
// configuration with `configs`.
void check_invariance_plan(const Baseline& base, const Device& device, int rows, const std::string& filler,
                           const std::string& axis, const std::vector<std::string>& configs);

// Compares `inv`, current's body, with the baseline's (see above), sets current.baseline and calls
// report::finalize. Throws InputError when they are other experiments.
void apply_invariance_baseline(report::Report& current, const report::Invariance& inv, const Baseline& base);

}  // namespace ra
