// SPDX-License-Identifier: Apache-2.0
// The op an upgrade changed: after apply_baseline (audit/baseline/baseline.h), each result whose
// digests differ is given the first op whose inputs matched the baseline's and whose outputs did
// not, where both sides hold an op stream (`--trace`, audit/trace/op_stream.h). A baseline saved
// without --trace, compared with a traced run, gets a note that no op can be named.
#pragma once

#include "audit/baseline/baseline.h"
#include "reports/model.h"

namespace ra {

// Fills first_changed_op (or op_note) of current.baseline's results. Never throws: a stream that
// cannot be decoded gives a note.
void name_changed_ops(report::Report& current, const Baseline& base);

}  // namespace ra
