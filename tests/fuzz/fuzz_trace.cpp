// SPDX-License-Identifier: Apache-2.0
// Trace files, as the parent reads the ones its trials wrote (and replay reads saved ones).
#include "audit/trace/trace_io.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)ra::trace::read_trace(ra::fuzz::as_file(data, size));
  } catch (const ra::trace::TraceError&) {  // the audit leaves such a trace out, with a warning
  }
  return 0;
}
