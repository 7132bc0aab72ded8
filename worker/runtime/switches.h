// SPDX-License-Identifier: Apache-2.0
// Applying a configuration inside a child, and reading back what is in effect.
//
// Readback. After applying, the child reads every switch of the table back and the report keeps
// requested and effective values. A requested value not in effect (mkl_cbwr on a torch without MKL
// reads "no effect"; TF32 under NVIDIA_TF32_OVERRIDE=0 reads "overridden"), or an apply that raised,
// ends the trial as `config_error` before the model runs, which the verdict counts as a crash. TF32
// goes through setAllowTF32CuBLAS / setAllowTF32CuDNN, which keep the legacy and per-op flags in
// agreement (TunableOp throws when they differ).
#pragma once

#include "audit/trial/config.h"
#include "reports/core_model.h"

#include <vector>

namespace ra {

// Applies every in-process switch of `config` through at::globalContext() and at::set_num_threads.
// Environment switches were set by the parent before exec. Call before CUDA or the model is
// touched.
void apply_switches(const Config& config);

// Every switch of the table with the value requested by `config` ("" if not named) and the value
// in effect now.
std::vector<report::SwitchValue> read_switches(const Config& config);

// Human-readable description of every requested switch whose effective value differs; "" if none.
std::string switch_mismatches(const std::vector<report::SwitchValue>& switches);

}  // namespace ra
