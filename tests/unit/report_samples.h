// SPDX-License-Identifier: Apache-2.0
// Report-model samples the renderer tests share.
#pragma once

#include "reports/model.h"

namespace ra::test {

// A trace summary with one backward root cause (aten::index_add in IndexAddBackward0 at
// model.py:5, 2/2 runs, 14 ops propagated) and one structural split at #90.
inline ra::report::TraceSummary sample_trace() {
  ra::report::TraceSummary t;
  t.records = 120;
  t.capacity = 1 << 20;
  t.memory_bytes = 4096;
  t.runs_compared = 2;
  ra::report::RootCause rc;
  rc.op = "aten::index_add";
  rc.direction = "backward";
  rc.node = "IndexAddBackward0";
  rc.forward_op = "aten::index_add";
  rc.module = "enc";
  rc.source = "model.py:5";
  rc.phase = "backward";
  rc.step = 1;
  rc.position = 77;
  rc.inputs = {"float32[8x64]"};
  rc.outputs = {"float32[8x64]"};
  rc.differing_outputs = {0};
  rc.runs_diverged = 2;
  rc.runs_compared = 2;
  rc.repeats = {1, 2};
  rc.propagated = 14;
  t.root_causes = {rc};
  ra::report::StructuralSplit s;
  s.reference_position = 90;
  s.other_position = 91;
  s.other_op = "aten::contiguous";
  s.unmatched_other = 1;
  s.runs = 1;
  s.repeats = {2};
  t.splits = {s};
  return t;
}

}  // namespace ra::test
